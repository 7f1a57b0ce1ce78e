"""Float ``%`` as an exact C ``fmod``, in plain LLVM integer IR (no libm, no libdevice).

LLVM's ``frem`` cannot be used on GPUs: LLVM's GPU targets expand it to ``x - trunc(x/y)*y``,
which is wrong whenever ``x/y`` is inexact or overflows (f32 ``2**32 % 7`` gives -192, not 4;
``inf % inf`` gives inf, not NaN; ``x % inf`` breaks for large ``x``). The remainder ``x - n*y`` (``n = trunc(x/y)``) is always
exactly representable, so it is computed exactly here, on the significands as integers:

* NaN for ``y == 0``, ``y`` NaN or ``x`` infinite/NaN (``(x*y)/(x*y)``, which also keeps a
  NaN operand's payload); ``x`` itself when ``|x| < |y|`` (this covers ``x % inf == x``, ±0);
  a zero of ``x``'s sign when ``|x| == |y|``;
* otherwise both significands are normalised (subnormals too, via ``ctlz``) to
  ``m * 2**e`` with ``m`` in ``[2**M, 2**(M+1))``, and ``r = (mx * 2**(ex-ey)) mod my`` is
  reduced in chunks of ``K`` exponent steps with 64-bit ``urem`` (``K = 39`` for f32, ``10`` for
  f64, so ``r << K`` never overflows): at most 8 steps for f32, about 210 for f64;
* ``r * 2**ey`` is renormalised (to a subnormal when needed: exact, as the remainder is a
  multiple of the smaller operand's ulp) and takes ``x``'s sign.

f16/bf16 operands are widened to f32 first: the f32 remainder of two exactly widened values is
the exact remainder, so rounding it back is exact too.

The function is emitted once per module (``naiad.fmod.f32`` / ``naiad.fmod.f64``, internal,
always inlined), so the kernel's own control flow stays straight-line.
"""
from __future__ import annotations

from llvmlite import ir

from .types import F32, F64, call_intrinsic

I1 = ir.IntType(1)
I64 = ir.IntType(64)

#: float type -> (bit width, mantissa bits, chunk of exponent steps per urem)
_FORMATS = {"float": (32, 23, 39), "double": (64, 52, 10)}


def emit_fmod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """``fmod(x, y)`` for f32/f64 values (f16 goes through f32)."""
    if x.type not in (F32, F64):
        wide = b.call(_fmod_function(b.module, F32), [b.fpext(x, F32), b.fpext(y, F32)])
        return b.fptrunc(wide, x.type)
    return b.call(_fmod_function(b.module, x.type), [x, y])


def _fmod_function(module: ir.Module, ft) -> ir.Function:
    name = f"naiad.fmod.{'f32' if ft == F32 else 'f64'}"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ft, [ft, ft]), name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        _build(fn, ft)
    return fn


def _build(fn: ir.Function, ft) -> None:
    width, mant, chunk = _FORMATS[str(ft)]
    it = ir.IntType(width)

    def c(v, t=it):
        return ir.Constant(t, v)

    x, y = fn.args
    entry = fn.append_basic_block("entry")
    nan_bb = fn.append_basic_block("nan")
    small_bb = fn.append_basic_block("x_smaller")
    check_eq_bb = fn.append_basic_block("check_equal")
    zero_bb = fn.append_basic_block("zero")
    reduce_bb = fn.append_basic_block("reduce")
    loop_bb = fn.append_basic_block("loop")
    step_bb = fn.append_basic_block("step")
    done_bb = fn.append_basic_block("done")
    rebuild_bb = fn.append_basic_block("rebuild")

    b = ir.IRBuilder(entry)
    sign_bit = 1 << (width - 1)
    inf_bits = ((1 << (width - 1 - mant)) - 1) << mant
    ux, uy = b.bitcast(x, it), b.bitcast(y, it)
    sx = b.and_(ux, c(sign_bit))
    ax = b.and_(ux, c(sign_bit - 1))
    ay = b.and_(uy, c(sign_bit - 1))
    bad = b.or_(b.or_(b.icmp_unsigned("==", ay, c(0)), b.icmp_unsigned(">", ay, c(inf_bits))),
                b.icmp_unsigned(">=", ax, c(inf_bits)))
    b.cbranch(bad, nan_bb, small_bb)

    b.position_at_end(nan_bb)
    p = b.fmul(x, y)
    b.ret(b.fdiv(p, p))

    b.position_at_end(small_bb)
    b.cbranch(b.icmp_unsigned("<", ax, ay), _ret_block(fn, x), check_eq_bb)

    b.position_at_end(check_eq_bb)
    b.cbranch(b.icmp_unsigned("==", ax, ay), zero_bb, reduce_bb)

    b.position_at_end(zero_bb)
    b.ret(b.bitcast(sx, ft))

    # normalised significands and exponents, as i64
    b.position_at_end(reduce_bb)
    mx, ex = _normalise(b, ax, width, mant)
    my, ey = _normalise(b, ay, width, mant)
    r0 = b.urem(mx, my)
    n0 = b.sub(ex, ey)
    b.branch(loop_bb)

    b.position_at_end(loop_bb)
    r = b.phi(I64, "r")
    n = b.phi(I64, "n")
    r.add_incoming(r0, reduce_bb)
    n.add_incoming(n0, reduce_bb)
    more = b.and_(b.icmp_signed(">", n, c(0, I64)), b.icmp_unsigned("!=", r, c(0, I64)))
    b.cbranch(more, step_bb, done_bb)

    b.position_at_end(step_bb)
    k = b.select(b.icmp_signed("<", n, c(chunk, I64)), n, c(chunk, I64))
    r_next = b.urem(b.shl(r, k), my)
    r.add_incoming(r_next, step_bb)
    n.add_incoming(b.sub(n, k), step_bb)
    b.branch(loop_bb)

    b.position_at_end(done_bb)
    b.cbranch(b.icmp_unsigned("==", r, c(0, I64)), zero_bb, rebuild_bb)

    # r * 2**(ey - bias - mant), 0 < r < 2**(mant+1): renormalise, possibly to a subnormal
    b.position_at_end(rebuild_bb)
    lz = call_intrinsic(b, "llvm.ctlz.i64", I64, [r, c(1, I1)])
    shift = b.sub(lz, c(63 - mant, I64))          # >= 0: r has at most mant+1 bits
    m = b.shl(r, shift)
    e = b.sub(ey, shift)
    normal = b.icmp_signed(">", e, c(0, I64))
    normal_bits = b.or_(b.sub(m, c(1 << mant, I64)), b.shl(e, c(mant, I64)))
    sub_shift = b.sub(c(1, I64), e)                 # >= 1 when subnormal
    sub_shift = b.select(normal, c(0, I64), sub_shift)
    sub_bits = b.lshr(m, sub_shift)
    bits = b.select(normal, normal_bits, sub_bits)
    if width < 64:
        bits = b.trunc(bits, it)
    b.ret(b.bitcast(b.or_(bits, sx), ft))


def _ret_block(fn: ir.Function, value) -> ir.Block:
    bb = fn.append_basic_block("return_x")
    ir.IRBuilder(bb).ret(value)
    return bb


def _normalise(b: ir.IRBuilder, a, width: int, mant: int):
    """(significand in [2**mant, 2**(mant+1)), biased exponent) of the nonzero finite |value|
    with bits ``a``, both i64; a subnormal gets an exponent <= 0."""
    a64 = b.zext(a, I64) if width < 64 else a
    e = b.lshr(a64, ir.Constant(I64, mant))
    frac = b.and_(a64, ir.Constant(I64, (1 << mant) - 1))
    is_sub = b.icmp_unsigned("==", e, ir.Constant(I64, 0))
    lz = call_intrinsic(b, "llvm.ctlz.i64", I64, [frac, ir.Constant(I1, 0)])
    sub_shift = b.sub(lz, ir.Constant(I64, 63 - mant))
    sub_m = b.shl(frac, b.select(is_sub, sub_shift, ir.Constant(I64, 0)))
    sub_e = b.sub(ir.Constant(I64, 1), sub_shift)
    m = b.select(is_sub, sub_m, b.or_(frac, ir.Constant(I64, 1 << mant)))
    return m, b.select(is_sub, sub_e, e)
