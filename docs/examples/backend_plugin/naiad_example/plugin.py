"""The example backend's hooks (entry point ``example = naiad_example.plugin``).

An interpreted target (``compiled=False``): naiad stops after the tile IR and hands it to this
plugin's launcher. Per-target hooks answer only for their own backend and return None otherwise.
"""
from __future__ import annotations

import functools

from naiad.plugins import TargetSpec, hookimpl

BACKEND = "example"
ARCH = "host"


def _ours(target) -> bool:
    return getattr(target, "backend", None) == BACKEND


@hookimpl
def naiad_targets():
    return [TargetSpec(backend=BACKEND, archs=(ARCH,), warp_sizes={ARCH: 1}, default_arch=ARCH,
                       compiled=False, description="example out-of-tree backend (interprets the "
                                                   "tile IR on naiad's reference executor)")]


@hookimpl
def naiad_options(target, options):
    if not _ours(target):
        return None
    from .options import ExampleOptions

    return ExampleOptions.from_user(options)


@hookimpl
def naiad_launcher(target):
    if not _ours(target):
        return None
    return _launcher(target)


@functools.lru_cache(maxsize=None)
def _launcher(target):
    from .launcher import ExampleLauncher

    return ExampleLauncher(target)


@hookimpl
def naiad_stage_done(stage, ir, target, metadata):
    """Observe our own compilations: count the tile IR produced for this backend."""
    if _ours(target) and stage == "tile":
        STAGES["tile"] = STAGES.get("tile", 0) + 1


STAGES: dict[str, int] = {}
