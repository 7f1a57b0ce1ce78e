"""The GPU-IR op ``amd.sched_hint {variant}``: an instruction-scheduling recipe for the loop body
it opens. Placed by :mod:`naiad_amd.passes.schedule_hints`, lowered by
:mod:`naiad_amd.lowering.sched_hints` (through ``AmdTargetInfo.op_lowering``). It has side effects
(it orders the machine scheduler), so DCE keeps it. Registered when this module is imported.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op
from naiad.backend import register_verifier

SCHED_HINT_OP = "amd.sched_hint"
#: the ``schedule_hint`` values that place a hint (``"none"`` places none)
VARIANTS = ("attention", "memory-bound-attention", "local-prefetch")

register_op(OpDef(SCHED_HINT_OP, 0, 0, 0, ("variant",), frozenset(),
                  "scheduling recipe for the enclosing loop body; attr variant"))


def _verify(op):
    if op.attrs.get("variant") not in VARIANTS:
        return f"variant must be one of {', '.join(VARIANTS)}, got {op.attrs.get('variant')!r}"
    return None


register_verifier(SCHED_HINT_OP, _verify)
