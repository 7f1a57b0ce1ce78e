"""Emit one MFMA/WMMA issue: pack a lane's fragments into the intrinsic's operands, call it,
unpack the result (``AmdTargetInfo.matrix_multiply``).

Packing kinds (the table's ``operand`` column): ``vNf16`` / ``vNi16`` (bf16 kept as i16 bits) /
``vNbf16`` (the same bits as LLVM ``bfloat``) are vectors of the elements in order; ``f32`` one
float; ``v2f32`` two; ``i32x4i8`` / ``i64x8i8`` / ``vNi32xMi8`` are i8 elements packed little
endian (element 0 in the lowest byte) into the integer operand. The accumulator is a vector of
the C elements in order. MFMA takes ``cbsz, abid, blgp = 0`` (no broadcast); WMMA iu8 takes
signed A and B and no clamp.
"""
from __future__ import annotations

import re

from llvmlite import ir

from .irutil import BF16, F16, F32, I32, I64, call_intrinsic

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)


def _vector(builder, elems, ty):
    vec = ir.Constant(ir.VectorType(ty, len(elems)), None)
    for i, v in enumerate(elems):
        vec = builder.insert_element(vec, v, ir.Constant(I32, i))
    return vec


def pack(builder, kind: str, elems: list):
    if kind == "f32":
        return elems[0]
    if kind == "v2f32":
        return _vector(builder, elems, F32)
    m = re.fullmatch(r"v(\d+)(f16|i16|bf16)", kind)
    if m:
        if m.group(2) == "f16":
            return _vector(builder, elems, F16)
        vec = _vector(builder, elems, I16)
        return builder.bitcast(vec, ir.VectorType(BF16, len(elems))) if m.group(2) == "bf16" \
            else vec
    m = re.fullmatch(r"(?:v(\d+))?i(32|64)x(\d+)i8", kind)
    if m:
        bytes_ = _vector(builder, elems, I8)
        word = ir.IntType(int(m.group(2)))
        return builder.bitcast(bytes_, ir.VectorType(word, int(m.group(1))) if m.group(1) else word)
    raise ValueError(f"unknown matrix operand packing {kind!r}")


def _mangle(ty) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    return {"half": "f16", "float": "f32", "bfloat": "bf16"}.get(str(ty), str(ty))


def emit(builder, row, a: list, b: list, c: list) -> list:
    """One issue of the table row ``row`` (see :mod:`naiad_amd.ir.matrix_table`)."""
    va, vb = pack(builder, row.operand, a), pack(builder, row.operand, b)
    acc_elem = F32 if row.types[2] == "f32" else I32
    vc = _vector(builder, c, acc_elem)
    name = row.intrinsic
    if "wmma" in name:
        name = f"{name}.{_mangle(vc.type)}.{_mangle(va.type)}"
        if row.types[0] == "i8":
            true = ir.Constant(I1, 1)
            args = [true, va, true, vb, vc, ir.Constant(I1, 0)]
        else:
            args = [va, vb, vc]
    else:
        zero = ir.Constant(I32, 0)
        args = [va, vb, vc, zero, zero, zero]
    d = call_intrinsic(builder, name, vc.type, args)
    return [builder.extract_element(d, ir.Constant(I32, i)) for i in range(len(c))]
