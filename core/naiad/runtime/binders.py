"""The per-target argument binders of launches and of ``warmup``, made once per TargetState.

Apart from :mod:`naiad.runtime.launch` (which imports the compiler) so that
:mod:`naiad.runtime.compiled_launch` can share them without an import cycle.
"""
from __future__ import annotations

from ..errors import NaiadError
from .specialize import ArgBinder
from .targets import TargetState


def launch_binder(state: TargetState) -> ArgBinder:
    """The target's launch binder, made once and kept on the TargetState: its per-type handlers
    are learnt on first use, so a fresh binder per call would redo that work every time."""
    binder = state.binder
    if binder is None:
        if state.spec.compiled:
            binder = ArgBinder(False, state.name, state.launcher)
        else:
            binder = ArgBinder(True, state.name)
        state.binder = binder
    return binder


def warmup_binder(state: TargetState) -> ArgBinder:
    """The keys-only binder ``warmup`` classifies with (kept on the TargetState likewise)."""
    binder = state.warmup_binder
    if binder is None:
        if not state.spec.compiled:
            binder = ArgBinder(True, state.name)
        else:
            try:
                launcher = state.launcher
            except NaiadError:
                launcher = None
            binder = ArgBinder(False, state.name, launcher, keys_only=True)
        state.warmup_binder = binder
    return binder
