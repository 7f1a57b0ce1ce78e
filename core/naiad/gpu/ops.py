"""Ops of the GPU IR, registered in the tile IR's catalog (:mod:`naiad.ir.ops`).

* ``convert_layout(x) : tensor<..., #to>`` -- the same tensor in another layout. Lowered as a
  register relabelling when lanes and warps already hold the right elements, otherwise through
  shared memory (the op's ``scratch`` attribute, set by the allocation pass, says how many bytes).
* ``barrier`` -- a block-wide barrier that orders shared-memory accesses (placed by the barrier
  pass between shared-memory users).
"""
from __future__ import annotations

from ..ir.ops import PURE, OpDef, register_op
from ..ir.types import TensorType
from ..ir.verifier import register_verifier

CONVERT_LAYOUT = register_op(OpDef("convert_layout", 1, 1, 0, (), frozenset({PURE}),
                                   "same tensor, another layout"))
BARRIER = register_op(OpDef("barrier", 0, 0, 0, (), frozenset(),
                            "block-wide barrier ordering shared-memory accesses"))


def _verify_convert(op):
    src, res = op.operands[0].type, op.results[0].type
    if not (isinstance(src, TensorType) and isinstance(res, TensorType)):
        return f"operand and result must be tensors, got {src} -> {res}"
    if src.shape != res.shape or src.element != res.element:
        return f"convert_layout keeps shape and element: {src} -> {res}"
    if res.layout is None:
        return f"result must have a layout, got {res}"
    return None


register_verifier("convert_layout", _verify_convert)

#: op names the GPU layer adds
GPU_OPS = ("convert_layout", "barrier")
