"""GPU-IR passes: tile IR in, GPU IR (tile IR with a layout on every tensor) out.

``default_lowering_passes(target, options)`` is the core pipeline; a backend may return its own
list from the ``naiad_lowering_passes`` hook (typically these plus its own, e.g. a pass that
swaps a dot's blocked layout for its matrix-instruction layout). Each pass is a callable
``pass(module, ctx)`` where ``ctx`` is a :class:`GPUPassContext`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...passes.manager import PassContext


@dataclass
class GPUPassContext(PassContext):
    """What GPU-IR passes consult: target, warps per program, lanes per warp, TargetInfo."""

    target: Any = None
    target_info: Any = None
    num_warps: int = 4
    warp_size: int = 32
    #: the plugin manager, for passes that ask the backend (e.g. its matrix instruction table)
    plugins: Any = None


def default_lowering_passes(target=None, options=None) -> list:
    """The core's GPU-IR pipeline, in order."""
    from .allocate_shared import allocate_shared_memory
    from .assign_layouts import assign_layouts
    from .dot_operands import fuse_dot_operand_conversions
    from .insert_barriers import insert_barriers
    from .remove_conversions import remove_redundant_conversions

    return [assign_layouts, remove_redundant_conversions, fuse_dot_operand_conversions,
            allocate_shared_memory, insert_barriers]


__all__ = ["GPUPassContext", "default_lowering_passes"]
