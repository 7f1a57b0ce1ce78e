"""naiad types -> LLVM types, constants, and the bf16 conversions.

bf16 is kept as its 16 bits (``i16``) in LLVM: llvmlite.ir has no ``bfloat`` type and not every
target computes in bf16, so arithmetic widens to f32 and rounds back (round to nearest even,
NaN kept quiet) with integer operations that every LLVM backend supports. ``i1`` is one byte in
memory. Pointers are opaque, in the target's global address space.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ...errors import IRError
from ...ir.types import PointerType, ScalarType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()


def llvm_type(t, global_as: int) -> ir.Type:
    """LLVM type of one element (registers)."""
    if isinstance(t, PointerType):
        return ir.PointerType(addrspace=global_as)
    if not isinstance(t, ScalarType):
        raise IRError(f"no LLVM type for {t}")
    name = t.name
    if name == "i1":
        return I1
    if t.is_int or t.is_fp8:  # float8: its bits (naiad.gpu.lower.float8)
        return ir.IntType(t.bitwidth)
    return {"f16": F16, "bf16": I16, "f32": F32, "f64": F64}[name]


def memory_type(t, global_as: int) -> ir.Type:
    """LLVM type of one element in memory (i1 is a byte)."""
    if isinstance(t, ScalarType) and t.name == "i1":
        return I8
    return llvm_type(t, global_as)


def i32(x: int) -> ir.Constant:
    return ir.Constant(I32, int(x))


def pack_vector(b: ir.IRBuilder, values: list, vt: ir.VectorType):
    """The ``vt`` vector of ``values``, one ``insertelement`` per lane -- or, when ``values``
    are lanes 0..n-1 of one ``vt`` vector in order (a vector load's registers stored again as
    they came, e.g. a layout conversion's shared-memory read feeding a global store), that
    vector itself.

    Why: the round trip (n ``extractelement`` then n ``insertelement``) is folded by LLVM's
    InstCombine, but each of its instructions is first built, printed, parsed and visited by
    every InstCombine run of the pipeline (256 of tutorial 03's ~2,500 instructions). The
    unused extracts are dropped before printing (:mod:`.prune`)."""
    n = vt.count
    first = values[0] if len(values) == n else None
    source = first.operands[0] if isinstance(first, ir.instructions.ExtractElement) else None
    if source is not None and source.type == vt and all(
            isinstance(v, ir.instructions.ExtractElement) and v.operands[0] is source
            and isinstance(v.operands[1], ir.Constant) and v.operands[1].constant == i
            for i, v in enumerate(values)):
        return source
    vec = ir.Constant(vt, None)
    for i, v in enumerate(values):
        vec = b.insert_element(vec, v, i32(i))
    return vec


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def bf16_bits(x: float) -> int:
    """Bits of ``x`` rounded to bf16 (nearest even)."""
    import ml_dtypes

    return int(np.array(x, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


def constant(t, value, global_as: int) -> ir.Constant:
    """An LLVM constant of naiad type ``t`` holding ``value``."""
    lt = llvm_type(t, global_as)
    if isinstance(t, PointerType):
        return ir.Constant(I64, int(value)).inttoptr(lt)
    if t.name == "i1":
        return ir.Constant(I1, 1 if value else 0)
    if t.is_int:
        if isinstance(value, float):
            value = int(value)
        return ir.Constant(lt, _signed(int(value), t.bitwidth))
    value = float(value)
    if t.is_fp8:
        from ...ir.float8 import FORMATS, encode

        return ir.Constant(I8, _signed(int(encode(np.float64(value), FORMATS[t.name])), 8))
    if t.name == "bf16":
        return ir.Constant(I16, _signed(bf16_bits(value), 16))
    if t.name == "f16":
        if math.isnan(value) or math.isinf(value):
            return ir.Constant(F16, value)
        return ir.Constant(F16, float(np.float16(value)))
    if t.name == "f32":
        return ir.Constant(F32, float(np.float32(value)) if math.isfinite(value) else value)
    return ir.Constant(F64, value)


def zero(lt: ir.Type) -> ir.Constant:
    if isinstance(lt, ir.PointerType):
        return ir.Constant(lt, None)
    if isinstance(lt, ir.VectorType):
        return ir.Constant(lt, None)
    return ir.Constant(lt, 0)


# -- bf16 <-> f32 ------------------------------------------------------------------------------

def bf16_to_f32(b: ir.IRBuilder, x) -> ir.Value:
    wide = b.shl(b.zext(x, I32), i32(16))
    return b.bitcast(wide, F32)


def f32_to_bf16(b: ir.IRBuilder, x) -> ir.Value:
    """Round to nearest even; NaNs stay NaN (quieted)."""
    bits = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(bits, i32(16)), i32(1))
    rounded = b.lshr(b.add(b.add(bits, i32(0x7FFF)), lsb), i32(16))
    quiet = b.or_(b.lshr(bits, i32(16)), i32(0x40))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.trunc(b.select(is_nan, quiet, rounded), I16)


def f64_to_f32_round_to_odd(b: ir.IRBuilder, x) -> ir.Value:
    """f64 -> f32 rounding toward zero with the last bit set when inexact, so that a second
    rounding to a narrower type (bf16) is correctly rounded."""
    near = b.fptrunc(x, F32)
    back = b.fpext(near, F64)
    exact = b.fcmp_ordered("oeq", back, x)
    # |near| > |x| means rounding went away from zero: step one ulp toward zero
    away = b.fcmp_ordered("ogt", b.call(_fabs(b, F64), [back]), b.call(_fabs(b, F64), [x]))
    bits = b.bitcast(near, I32)
    toward = b.select(away, b.sub(bits, i32(1)), bits)
    odd = b.or_(toward, i32(1))
    finite = b.fcmp_ordered("one", b.call(_fabs(b, F32), [near]), ir.Constant(F32, math.inf))
    keep = b.or_(exact, b.not_(finite))
    return b.bitcast(b.select(keep, bits, odd), F32)


def _fabs(b: ir.IRBuilder, lt) -> ir.Function:
    name = "llvm.fabs." + ("f64" if lt == F64 else "f32" if lt == F32 else "f16")
    return declare(b.module, name, lt, [lt])


def declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    """Declaration of ``name`` in ``module`` (created once)."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    return fn


def call_intrinsic(b: ir.IRBuilder, name: str, ret, args):
    return b.call(declare(b.module, name, ret, [a.type for a in args]), list(args))


def float_suffix(lt) -> str:
    if lt == F16:
        return "f16"
    if lt == F32:
        return "f32"
    if lt == F64:
        return "f64"
    raise IRError(f"not a float type: {lt}")
