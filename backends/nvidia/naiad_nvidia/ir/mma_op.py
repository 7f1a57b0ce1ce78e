"""The GPU-IR op ``nvidia.mma``: a ``dot`` computed with ``mma.sync`` tensor-core instructions.

``nvidia.mma(a, b, acc) : tensor<MxN, acc-type, #nvidia_mma>`` with ``a`` in
``#dot_operand<opIdx = 0, parent = #nvidia_mma, kWidth>`` and ``b`` in opIdx 1 (see
:mod:`naiad_nvidia.ir.mma_layout`); attribute ``kind`` is ``f16``, ``bf16``, ``tf32`` or ``s8``
(int8 -> int32, m16n8k32; on sm_90 wgmma takes it where warpgroups can). Placed
by :mod:`naiad_nvidia.passes.accelerate_matmul`, lowered by :mod:`naiad_nvidia.lowering.mma_lowering`
(through ``NvidiaTargetInfo.op_lowering``). Registered when this module is imported.
"""
from __future__ import annotations

from naiad.backend import DotOperandLayout, OpDef, PURE, register_op, register_verifier
from naiad.ir import TensorType

from .mma_layout import NvidiaMmaLayout

MMA_OP = "nvidia.mma"
#: kind -> (operand element, kWidth)
KINDS = {"f16": ("f16", 2), "bf16": ("bf16", 2), "tf32": ("f32", 1), "s8": ("i8", 4),
         "e4m3": ("f8e4nv", 2), "e5m2": ("f8e5", 2)}
#: kinds computed by Hopper's wgmma only (no mma.sync lowering here)
WGMMA_ONLY_KINDS = ("e4m3", "e5m2")

register_op(OpDef(MMA_OP, 3, 1, 0, ("kind",), frozenset({PURE}),
                  "acc + a @ b by mma.sync on #nvidia_mma fragments; attr kind f16|bf16|tf32|s8"))


def check_mma_types(op, kinds) -> str | None:
    """What is wrong with an mma-like op ``acc + a @ b`` whose ``kind`` must be in ``kinds``
    (operand element types, an #nvidia_mma accumulator, matching shapes), or None."""
    a, b, acc = (v.type for v in op.operands)
    res = op.results[0].type
    if not all(isinstance(t, TensorType) for t in (a, b, acc, res)):
        return "operands and result must be tensors"
    kind = op.attrs.get("kind")
    if kind not in kinds:
        return f"kind must be one of {', '.join(kinds)}, got {kind!r}"
    elem = KINDS[kind][0]
    if a.element.name != elem or b.element.name != elem:
        return f"kind {kind} takes {elem} operands, got {a.element} and {b.element}"
    if res != acc or not isinstance(res.layout, NvidiaMmaLayout):
        return f"result must have the accumulator's type in an #nvidia_mma layout: {acc} -> {res}"
    if (res.element.name == "i32") != (kind == "s8") or res.element.name not in (
            "f32", "f16", "i32") or (res.element.name == "f16" and kind != "f16"):
        return f"accumulator type {res.element} is not supported for kind {kind}"
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or res.shape != (m, n):
        return f"shapes do not match: {a.shape} @ {b.shape} -> {res.shape}"
    return None


def _verify(op):
    problem = check_mma_types(op, KINDS)
    if problem:
        return problem
    res = op.results[0].type
    k_width = KINDS[op.attrs["kind"]][1]
    for i in (0, 1):
        want = DotOperandLayout(i, res.layout, k_width)
        if op.operands[i].type.layout != want:
            return f"operand {i} must have layout {want}"
    return None


register_verifier(MMA_OP, _verify)
