"""Tile-IR pass ``fold_fp8_upcasts`` (before ``accelerate_matmul``): fp8 dots on fp8 MFMAs.

Why: the frontend widens the fp8 operands of ``tl.dot`` to f16 (exact: every fp8e4/e5 value
is an f16 value), which is right for targets without fp8 matrix instructions but makes gfx942 /
gfx950 run an f16 MFMA at half the fp8 rate, with twice the LDS and register traffic. When the
arch's table has an fp8 instruction for the operands' format (:mod:`naiad_amd.ir.matrix_table`:
fnuz on gfx942, OCP on gfx950) that tiles the dot, this pass drops the two widening casts so
``accelerate_matmul`` picks it. The product is the same: the instruction multiplies the fp8
values exactly and accumulates in f32, as the f16 MFMA did.

A dot no fp8 row serves (another format, a shape the instructions do not tile, f16
accumulation) keeps its casts and its f16 path.
"""
from __future__ import annotations

from naiad.ir import Module, TensorType


def fold_fp8_upcasts(module: Module, ctx=None, table=()) -> bool:
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in [o for o in fn.walk() if o.name == "dot"]:
            narrow = [_fp8_source(v) for v in op.operands[:2]]
            if None in narrow or narrow[0].type.element != narrow[1].type.element:
                continue
            acc = op.operands[2].type
            if not _served(table, narrow[0].type, narrow[1].type, acc, op):
                continue
            for i, v in enumerate(narrow):
                cast = op.operands[i].defining_op
                op.set_operand(i, v)
                if not cast.results[0].uses:
                    cast.erase()
            changed = True
    return changed


def _fp8_source(v):
    """The fp8 tensor ``v`` widens, when ``v = cast(fp8 tensor)`` to f16/bf16/f32."""
    cast = v.defining_op
    if cast is None or cast.name != "cast" or len(cast.operands) != 1:
        return None
    src = cast.operands[0]
    if not isinstance(src.type, TensorType) or not src.type.element.name.startswith("f8"):
        return None
    if v.type.element.name not in ("f16", "bf16", "f32"):
        return None
    return src


def _served(table, a, b, acc, op) -> bool:
    """An entry computes ``acc += a @ b`` for these types and tiles the shape (the rule
    ``accelerate_matmul`` applies when it picks an entry)."""
    if not all(isinstance(t, TensorType) and len(t.shape) == 2 for t in (a, b, acc)):
        return False
    (m, k), n = a.shape, b.shape[1]
    for entry in table:
        im, in_, _ = entry.shape
        if entry.serves(a.element.name, b.element.name, acc.element.name,
                        op.attrs.get("input_precision")) and \
                m % im == 0 and n % in_ == 0 and k % entry.k_step == 0:
            return True
    return False
