"""Fixtures of the AMD backend tests: every public name of amd_testkit (arch, target, codegen)."""
from amd_testkit import *  # noqa: F401,F403 - fixtures are registered by name
