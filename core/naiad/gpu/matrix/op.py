"""The GPU-IR op ``matrix_mma``: ``acc + a @ b`` on a backend's matrix instruction.

``matrix_mma(a, b, acc) {instruction = "<table entry name>", k_width = 4}`` with the result
in the accumulator's type, whose layout is a :class:`~.layout.MatrixLayout`. Each operand is
either in ``#dot_operand<opIdx, parent = <the result layout>, kWidth = k_width>`` (read from
registers) or in any other distributed layout, in which case the lowering stages it through
swizzled shared memory (:mod:`.staging`) and reads each fragment just before its issue.
Placed by :mod:`.accelerate`, lowered by :mod:`.lowering`.
"""
from __future__ import annotations

from ...ir.ops import PURE, OpDef, register_op
from ...ir.types import TensorType
from ...ir.verifier import register_verifier
from .layout import MatrixLayout

MATRIX_MMA = "matrix_mma"

register_op(OpDef(MATRIX_MMA, 3, 1, 0, ("instruction", "k_width"), frozenset({PURE}),
                  "acc + a @ b on a backend matrix instruction (instruction, k_width)"))


def _verify(op):
    from .instructions import matrix_instruction

    a, b, acc = (v.type for v in op.operands)
    res = op.results[0].type
    if not all(isinstance(t, TensorType) for t in (a, b, acc, res)):
        return "operands and result must be tensors"
    try:
        instr = matrix_instruction(op.attrs.get("instruction"))
    except Exception as e:  # unknown name
        return str(e)
    if (a.element.name, b.element.name, acc.element.name) != \
            (instr.a_type, instr.b_type, instr.acc_type):
        return (f"{instr.name} computes {instr.acc_type} += {instr.a_type} x {instr.b_type}, "
                f"got {acc.element} += {a.element} x {b.element}")
    if res != acc:
        return f"result must have the accumulator's type: {acc} -> {res}"
    if acc.layout is not None and not isinstance(acc.layout, MatrixLayout):
        return f"the accumulator must be in a matrix layout, got {acc.layout}"
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or res.shape != (m, n):
        return f"shapes do not match: {a.shape} @ {b.shape} -> {res.shape}"
    im, in_, _ = instr.shape
    kw = op.attrs.get("k_width")
    if m % im or n % in_ or not isinstance(kw, int) or kw % instr.k_base or \
            k % (instr.shape[2] * kw // instr.k_base):
        return f"{list(res.shape)} x K={k} is not tiled by {instr.name} with kWidth {kw}"
    return None


register_verifier(MATRIX_MMA, _verify)
