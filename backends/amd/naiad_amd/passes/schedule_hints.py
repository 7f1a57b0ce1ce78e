"""GPU-IR pass ``insert_schedule_hints``: the ``schedule_hint`` option as an ``amd.sched_hint`` op
at the top of every innermost loop body.

Why innermost loops: that is where a kernel's steady state runs (the K loop of a matmul, the KV
loop of attention), and the hint's recipe describes one iteration. The op is lowered to LLVM's
AMDGPU scheduling intrinsics (``llvm.amdgcn.iglp.opt`` / ``llvm.amdgcn.sched.group.barrier``),
which shape how the machine scheduler orders that block; see
:mod:`naiad_amd.lowering.sched_hints` for each recipe.
"""
from __future__ import annotations

from naiad.ir import Module, Operation

from ..ir.sched_hint_op import SCHED_HINT_OP, VARIANTS


def _innermost_loops(fn):
    """``for`` loops with no loop inside (``while`` loops have no single body to hint)."""
    loops = [op for op in fn.walk() if op.name == "for"]
    return [lp for lp in loops if not any(o.name in ("for", "while") for o in lp.walk() if o is not lp)]


def insert_schedule_hints(module: Module, ctx=None, hint: str = "none") -> bool:
    """Open each innermost loop body with ``amd.sched_hint {variant = hint}``; nothing for "none"."""
    if hint in ("none", ""):
        return False
    if hint not in VARIANTS:
        raise ValueError(f"unknown schedule hint {hint!r}")
    changed = False
    for fn in module.functions.values():
        for loop in _innermost_loops(fn):
            body = loop.regions[0].block
            if body.ops and body.ops[0].name == SCHED_HINT_OP:
                continue
            body.insert(0, Operation(SCHED_HINT_OP, attrs={"variant": hint}))
            changed = True
    return changed
