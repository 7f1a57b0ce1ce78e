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


def pass_name(p) -> str:
    """A pass's name in a pipeline: its ``name`` attribute, else its ``__name__``."""
    return getattr(p, "name", None) or getattr(p, "__name__", None) or repr(p)


def insert_passes(passes: list, new: list, *, before: str | None = None,
                  after: str | None = None) -> list:
    """``passes`` with ``new`` inserted before or after the pass *named* ``before``/``after``
    (exactly one of them), so a backend's pipeline does not depend on the core's list positions
    or function objects. Raises IRError naming the pipeline when there is no such pass."""
    from ...errors import IRError

    if (before is None) == (after is None):
        raise IRError("insert_passes needs exactly one of before= or after=")
    anchor = before or after
    names = [pass_name(p) for p in passes]
    if anchor not in names:
        raise IRError(f"no pass named {anchor!r} in the pipeline ({', '.join(names)})")
    at = names.index(anchor) + (0 if before else 1)
    return list(passes[:at]) + list(new) + list(passes[at:])


__all__ = ["GPUPassContext", "default_lowering_passes", "insert_passes", "pass_name"]
