"""The GPU-IR op ``amd.cond_barrier {group}``: an ``s_barrier`` only the waves of one half of
the workgroup execute (``group`` 0: warps below ``num_warps / 2``; 1: the others).

Placed by :mod:`naiad_amd.passes.block_ping_pong` -- group 1 before a ping-pong loop, so its
waves run one barrier (one phase) behind group 0, and group 0 after it, so both halves have
passed the same number of barriers again. Lowered by :mod:`naiad_amd.lowering.ping_pong`. It
has side effects (it synchronises), so DCE keeps it. Registered when this module is imported.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op, register_verifier

COND_BARRIER_OP = "amd.cond_barrier"

register_op(OpDef(COND_BARRIER_OP, 0, 0, 0, ("group",), frozenset(),
                  "s_barrier for the waves of one half of the workgroup; attr group 0 or 1"))


def _verify(op):
    if op.attrs.get("group") not in (0, 1):
        return f"group must be 0 or 1, got {op.attrs.get('group')!r}"
    return None


register_verifier(COND_BARRIER_OP, _verify)
