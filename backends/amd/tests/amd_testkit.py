"""Shared helpers of the AMD backend tests (no GPU or ROCm needed); conftest.py turns them into
fixtures. A module of its own because ``from conftest import`` is ambiguous once several backend
test folders each have a conftest.py."""
from __future__ import annotations

import pytest

from naiad.plugins import Target

from naiad_amd.archs import ARCHS
from naiad_amd.codegen import AmdCodegen
from naiad_amd.options import AmdOptions, llvm_attributes

ALL_ARCHS = tuple(ARCHS)


def amd_target(arch: str) -> Target:
    return Target("amd", arch, ARCHS[arch].wave_size)


@pytest.fixture(params=ALL_ARCHS)
def arch(request):
    return request.param


@pytest.fixture
def target(arch):
    return amd_target(arch)


@pytest.fixture
def codegen(target):
    return AmdCodegen(target)


def attrs_for(target, **opts):
    o = AmdOptions(**opts)
    return o, llvm_attributes(target, o)
