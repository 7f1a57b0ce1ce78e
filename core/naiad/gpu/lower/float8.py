"""float8 conversions in LLVM IR, by integer arithmetic (every target; no fp8 instructions).

A float8 value lives in an ``i8`` register. The rules are those of :mod:`naiad.ir.float8`:
decoding is exact; encoding rounds to nearest even once, from the source value (f16 and bf16
widen exactly to f32 first; f64 is encoded from its own bits), saturates or goes to infinity on
overflow as the format says, and maps NaN to the format's NaN.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.float8 import FORMATS, Float8Format
from ...ir.types import ScalarType
from .types import F32, F64, I8, I32, bf16_to_f32, call_intrinsic

I64 = ir.IntType(64)


def _c(t: ir.IntType, v: int) -> ir.Constant:
    return ir.Constant(t, v)


def decode(b: ir.IRBuilder, fmt: Float8Format, x) -> ir.Value:
    """f32 value of the float8 bits ``x`` (i8)."""
    u = b.zext(x, I32)
    negative = b.icmp_unsigned("!=", b.and_(u, _c(I32, 0x80)), _c(I32, 0))
    mag = b.and_(u, _c(I32, 0x7F))
    exp = b.lshr(mag, _c(I32, fmt.man))
    man = b.and_(mag, _c(I32, (1 << fmt.man) - 1))
    subnormal = b.icmp_unsigned("==", exp, _c(I32, 0))
    sig = b.select(subnormal, man, b.or_(man, _c(I32, 1 << fmt.man)))
    eff_exp = b.select(subnormal, _c(I32, 1), exp)
    # 2**(eff_exp - bias - man) built as f32 bits: always a normal f32 for these formats
    scale = b.bitcast(b.shl(b.add(eff_exp, _c(I32, 127 - fmt.bias - fmt.man)), _c(I32, 23)), F32)
    value = b.fmul(b.uitofp(sig, F32), scale)
    value = b.select(negative, b.fneg(value), value)
    nan = ir.Constant(F32, float("nan"))
    if fmt.specials == "ieee":
        top = b.icmp_unsigned("==", exp, _c(I32, (1 << fmt.exp) - 1))
        inf = b.select(negative, ir.Constant(F32, float("-inf")), ir.Constant(F32, float("inf")))
        special = b.select(b.icmp_unsigned("==", man, _c(I32, 0)), inf, nan)
        value = b.select(top, special, value)
    elif fmt.specials == "fn":
        value = b.select(b.icmp_unsigned("==", mag, _c(I32, 0x7F)), nan, value)
    elif fmt.specials == "fnuz":
        value = b.select(b.icmp_unsigned("==", u, _c(I32, 0x80)), nan, value)
    return value


def encode(b: ir.IRBuilder, fmt: Float8Format, x) -> ir.Value:
    """float8 bits (i8) of the f32 or f64 value ``x``."""
    is64 = x.type == F64
    it, width, fman, fbias = (I64, 64, 52, 1023) if is64 else (I32, 32, 23, 127)
    bits = b.bitcast(x, it)
    sign = b.trunc(b.lshr(bits, _c(it, width - 1)), I8)
    abits = b.and_(bits, _c(it, (1 << (width - 1)) - 1))
    ax = b.bitcast(abits, x.type)
    # normal range: round the mantissa to nearest even on the bits, then rebias the exponent
    shift = fman - fmt.man
    odd = b.and_(b.lshr(abits, _c(it, shift)), _c(it, 1))
    rounded = b.add(b.add(abits, _c(it, (1 << (shift - 1)) - 1)), odd)
    code = b.sub(b.lshr(rounded, _c(it, shift)), _c(it, (fbias - fmt.bias) << fmt.man))
    # below the smallest normal: an integer number of the smallest subnormal steps
    steps = b.fmul(ax, ir.Constant(x.type, 2.0 ** (fmt.bias + fmt.man - 1)))
    steps = call_intrinsic(b, f"llvm.rint.{'f64' if is64 else 'f32'}", x.type, [steps])
    tiny = b.fcmp_ordered("<", ax, ir.Constant(x.type, 2.0 ** (1 - fmt.bias)))
    code = b.select(tiny, b.fptoui(steps, it), code)
    overflow = b.icmp_signed(">", code, _c(it, fmt.max_code))
    on_overflow = 0x7C if fmt.has_inf else fmt.max_code
    code = b.trunc(b.select(overflow, _c(it, on_overflow), code), I8)
    if fmt.specials == "fnuz":  # no negative zero, one unsigned NaN
        sign = b.select(b.icmp_unsigned("==", code, _c(I8, 0)), _c(I8, 0), sign)
    out = b.or_(code, b.shl(sign, _c(I8, 7)))
    nan_code = b.or_(_c(I8, fmt.nan_code), b.shl(sign, _c(I8, 7)))
    if fmt.specials == "fnuz":
        nan_code = _c(I8, fmt.nan_code)
    return b.select(b.fcmp_unordered("uno", x, x), nan_code, out)


def emit_float8_cast(b: ir.IRBuilder, src: ScalarType, dst: ScalarType, x, widen_to_f32,
                     emit_cast) -> ir.Value:
    """A conversion with a float8 type on either side. ``widen_to_f32(t, x)`` widens an f16/bf16
    register; ``emit_cast(src, dst, x)`` converts between the other types."""
    f32 = ScalarType("f32")
    if src.is_fp8:
        wide = decode(b, FORMATS[src.name], x)
        return wide if dst == f32 else emit_cast(f32, dst, wide)
    if src.is_float and src.name in ("f16", "bf16"):
        x = bf16_to_f32(b, x) if src.name == "bf16" else widen_to_f32(src, x)
    elif not src.is_float:  # integers (and bool) convert exactly through f64 in range
        x = emit_cast(src, ScalarType("f64"), x)
    return encode(b, FORMATS[dst.name], x)
