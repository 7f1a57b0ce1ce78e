"""Math functions for AMD GPUs, emitted as llvmlite.ir without any device library.

The AMDGPU backend lowers some LLVM math intrinsics to instruction sequences and turns the others
into calls to libm functions that do not exist on the GPU (LLVM then aborts with "no libcall
available"). So this module uses an intrinsic only where LLVM 22's AMDGPU lowering exists and is
accurate, and expands everything else itself. Accuracy per function (measured against a
high-precision reference in backends/amd/tests/test_amd_math_accuracy.py where the code is ours):

======  ==========================================  ============================================
name    f32                                         f64
======  ==========================================  ============================================
exp     ``exp2(fl(x * log2(e)))`` as Triton:        own: Cody-Waite reduction by ln2 (fma),
        ``v_exp_f32`` (+ ``v_ldexp`` denormal       Taylor degree 13, ``ldexp``: <= 1 ulp
        scaling under IEEE denormals). Relative
        error ~ ln2 * |rounding of x*log2(e)|:
        <= 2 ulp for |x| <= 1, <= 4e-6 at the ends
        of the range (|x| ~ 88), plus v_exp's ulp
exp2    ``llvm.amdgcn.exp2.f32``: the bare          own, same core: <= 1 ulp
        ``v_exp_f32`` (~1 ulp), as Triton's
        ``tl.math.exp2`` on AMD: results below
        2**-126 (subnormal) flush to 0
log     ``llvm.log.f32`` (~1 ulp)                   own: frexp, log(m) = f - s(f - T(s*s)),
                                                    s = f/(2+f): <= 1 ulp
log2    ``llvm.log2.f32`` (v_log_f32, ~1 ulp)       own, same core times log2(e): <= 2 ulp
sqrt    ``llvm.amdgcn.sqrt.f32`` (v_sqrt_f32:      ``llvm.sqrt.f64`` (correctly rounded)
        Triton's "fast square root": 1 ulp,
        subnormal inputs read as 0)
sqrt_rn ``llvm.sqrt.f32`` (correctly rounded)       (float32 only, as in Triton)
rsqrt   1 / sqrt(x): two correctly rounded steps,   same in f64
        <= 1 ulp
sin,    own: two reductions by pi/2 (three fma      own, same with Taylor to r**19 / r**20:
cos     each), Taylor to r**13 / r**14:             <= 1 ulp for |x| < 1e12, <= ~4 ulp (sin)
        <= 2 ulp for |x| < 1e6, |err| < 1e-7 to     to 1e16, |err| < 1e-12 to 1e20; beyond,
        1e7, < 4e-7 to 1e8, < 5e-5 to 1e10; beyond  meaningless but in [-1, 1]
        meaningless but always in [-1, 1]           (no Payne-Hanek reduction)
erf     own: a*P(a*a) below 1, 1 - exp(-a*a)*Q(..)  own, same with more terms: <= 2 ulp
        up to 4, 1 beyond (erfcoeffs.py): <= 3 ulp
floor,  ``llvm.floor`` / ``llvm.ceil`` /            same (exact / correctly rounded)
ceil,   ``llvm.fabs`` / ``llvm.fma`` (exact /
abs,    correctly rounded)
fma
======  ==========================================  ============================================

The "own" bounds are measured on the host with the same IR (backends/amd/tests/test_amd_math_accuracy.py);
the f32 intrinsics' bounds are LLVM's AMDGPU lowerings' (not measurable without a GPU).

``llvm.sin.f32`` is deliberately not used: AMDGPU lowers it to ``v_sin_f32(fract(x / 2pi))``,
whose absolute error grows like ``|x| * 2**-24`` (about 6e-6 at x = 100).

f16 and bf16 compute every transcendental in f32 and round once to the narrow type (within
1 ulp of the narrow type); floor/ceil/abs/fma use the f16 intrinsics directly and go through f32
for bf16 (exact, except fma which may double-round in rare ties). bf16 values may arrive as LLVM
``bfloat`` or as ``i16`` bit patterns; results come back in the same representation.

f32 denormals follow the ``allow_flush_denorm`` option (default IEEE, as Triton; flushed with
``denormal-fp-math-f32=preserve-sign`` when it is set); f64 and f16 keep IEEE denormals.

Integers: ``abs`` is ``llvm.abs`` (INT_MIN stays INT_MIN; identity on unsigned types);
``umulhi`` is the high half of the unsigned double-width product for every integer type.
"""
from __future__ import annotations

import struct
from decimal import Decimal, localcontext
from fractions import Fraction
from math import factorial

from llvmlite import ir

from naiad.errors import CodegenError

from . import erfcoeffs as EC
from .irutil import BF16, F16, F32, F64, I1, I16, I32, call_intrinsic

FUNCTIONS = ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf",
             "floor", "ceil", "abs", "fma", "umulhi")
_ARITY = {"fma": 3, "umulhi": 2}
_TRANSCENDENTAL = {"exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf"}
_FLOATS = ("f16", "bf16", "f32", "f64")
_INTS = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")

# -- constants -----------------------------------------------------------------------------
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459231")
_LN2 = Decimal("0.693147180559945309417232121458176568075500134360255254120680009493")


def _round_f32(x) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _split3(value: Decimal, rnd):
    """value = a + b + c with each part rounded by ``rnd`` from the exact remainder."""
    a = rnd(value)
    b = rnd(value - Decimal(a))
    c = rnd(value - Decimal(a) - Decimal(b))
    return a, b, c


with localcontext() as _ctx:  # 60 digits for the constants, without touching the caller's context
    _ctx.prec = 60
    _PIO2 = {"f32": _split3(_PI / 2, _round_f32), "f64": _split3(_PI / 2, float)}
    _TWO_OVER_PI = float(2 / _PI)
    _LN2_HI, _LN2_LO, _ = _split3(_LN2, float)
    _LOG2E_HI, _LOG2E_LO, _ = _split3(1 / _LN2, float)
    _LOG2E = float(1 / _LN2)


def _q(num: int, den: int) -> float:
    """num/den correctly rounded to binary64."""
    return float(Fraction(num, den))


_EXP_TAYLOR = [_q(1, factorial(n)) for n in range(14)]                       # f64 exp, r**0..13
_SIN = {"f32": [_q((-1) ** n, factorial(2 * n + 1)) for n in range(1, 7)],    # r**3 .. r**13
        "f64": [_q((-1) ** n, factorial(2 * n + 1)) for n in range(1, 10)]}   # r**3 .. r**19
_COS = {"f32": [_q((-1) ** n, factorial(2 * n)) for n in range(1, 8)],        # r**2 .. r**14
        "f64": [_q((-1) ** n, factorial(2 * n)) for n in range(1, 11)]}       # r**2 .. r**20
_LOG_T = [_q(2, 2 * k + 1) for k in range(1, 11)]                             # 2z^k/(2k+1)


# -- small emit helpers --------------------------------------------------------------------
def _c(ty, v):
    return ir.Constant(ty, float(v))


def _fma(b, x, y, z):
    return call_intrinsic(b, f"llvm.fma.{_sfx(x.type)}", x.type, [x, y, z])


def _un(b, name, x):
    return call_intrinsic(b, f"llvm.{name}.{_sfx(x.type)}", x.type, [x])


def _sfx(ty) -> str:
    s = str(ty)
    return {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}[s]


def _horner(b, coeffs, x):
    """sum(coeffs[i] * x**i), evaluated with fma from the highest power down."""
    ty = x.type
    acc = _c(ty, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fma(b, acc, x, _c(ty, c))
    return acc


def _ldexp(b, x, n):
    return call_intrinsic(b, f"llvm.ldexp.{_sfx(x.type)}.i32", x.type, [x, n])


def _is_nan(b, x):
    return b.fcmp_unordered("uno", x, x)


def _clamp(b, x, lo, hi):
    """min(max(x, lo), hi) that keeps NaN as 0 (callers restore NaN at the end)."""
    ty = x.type
    x = b.select(_is_nan(b, x), _c(ty, 0.0), x)
    x = b.select(b.fcmp_ordered(">", x, _c(ty, hi)), _c(ty, hi), x)
    return b.select(b.fcmp_ordered("<", x, _c(ty, lo)), _c(ty, lo), x)


# -- f32 exp -------------------------------------------------------------------------------
_LOG2E_F32 = _round_f32(_LOG2E)


def exp_f32(b, x):
    """exp(x) = exp2(x * log2(e)) in f32, as Triton's AMD backend emits it: one multiply and
    ``llvm.exp2.f32`` (``v_exp_f32``; under IEEE denormals LLVM adds the range scaling that keeps
    subnormal results, under flushed denormals it is the bare instruction). LLVM's own
    ``llvm.exp.f32`` expansion is ~1 ulp but about twice the instructions (an extended-precision
    reduction with ``v_rndne``/``v_cvt``/``v_ldexp`` and explicit overflow/underflow selects);
    for softmax-like kernels that is the difference between parity with Triton and 1.2x."""
    return _un(b, "exp2", b.fmul(x, _c(F32, _LOG2E_F32)))


def exp2_f32(b, x):
    """2**x in f32 as the bare ``v_exp_f32`` (``llvm.amdgcn.exp2.f32``), as Triton's AMD
    backend emits ``tl.math.exp2``. ``llvm.exp2.f32`` would add, per element, the denormal
    scaling (a compare into an SGPR pair, two selects, an add and a ``v_ldexp``): in attention's
    inner loop that is 4 more instructions per score and ~60 SGPRs of lane masks. The price:
    results below 2**-126 (subnormal, only for x < -126) are 0."""
    return call_intrinsic(b, "llvm.amdgcn.exp2.f32", F32, [x])


# -- f64 expansions ------------------------------------------------------------------------
def _exp_core_f64(b, k, r):
    """2**k * exp(r) for |r| <= ln2/2 (k an integral double in i32 range)."""
    p = _horner(b, _EXP_TAYLOR, r)
    return _ldexp(b, p, b.fptosi(k, I32))


def exp_f64(b, x):
    xc = _clamp(b, x, -746.0, 710.0)
    k = _un(b, "rint", b.fmul(xc, _c(F64, _LOG2E)))
    nk = b.fneg(k)
    r = _fma(b, nk, _c(F64, _LN2_HI), xc)
    r = _fma(b, nk, _c(F64, _LN2_LO), r)
    return b.select(_is_nan(b, x), x, _exp_core_f64(b, k, r))


def exp2_f64(b, x):
    xc = _clamp(b, x, -1080.0, 1030.0)
    k = _un(b, "rint", xc)
    f = b.fsub(xc, k)  # exact, |f| <= 1/2
    r = _fma(b, f, _c(F64, _LN2_HI), b.fmul(f, _c(F64, _LN2_LO)))
    return b.select(_is_nan(b, x), x, _exp_core_f64(b, k, r))


def _log_parts_f64(b, x):
    """(e, l) with x = 2**e * m, m in [sqrt(1/2), sqrt(2)), l = log(m) (e as a double)."""
    fr = call_intrinsic(b, "llvm.frexp.f64.i32", ir.LiteralStructType([F64, I32]), [x])
    m = b.extract_value(fr, 0)
    e = b.extract_value(fr, 1)
    low = b.fcmp_ordered("<", m, _c(F64, 0.7071067811865476))
    m = b.select(low, b.fadd(m, m), m)
    e = b.select(low, b.sub(e, ir.Constant(I32, 1)), e)
    f = b.fsub(m, _c(F64, 1.0))                  # exact (Sterbenz)
    s = b.fdiv(f, b.fadd(f, _c(F64, 2.0)))
    z = b.fmul(s, s)
    t = b.fmul(z, _horner(b, _LOG_T, z))         # 2z/3 + 2z^2/5 + ...
    l = b.fsub(f, b.fmul(s, b.fsub(f, t)))       # log(1+f) = f - s (f - T)
    return b.sitofp(e, F64), l


def _log_specials(b, x, res):
    ty = x.type
    res = b.select(b.fcmp_ordered("==", x, _c(ty, float("inf"))), x, res)
    res = b.select(b.fcmp_ordered("==", x, _c(ty, 0.0)), _c(ty, float("-inf")), res)
    return b.select(b.fcmp_unordered("<", x, _c(ty, 0.0)), _c(ty, float("nan")), res)


def log_f64(b, x):
    e, l = _log_parts_f64(b, x)
    res = _fma(b, e, _c(F64, _LN2_HI), _fma(b, e, _c(F64, _LN2_LO), l))
    return _log_specials(b, x, res)


def log2_f64(b, x):
    e, l = _log_parts_f64(b, x)
    res = _fma(b, l, _c(F64, _LOG2E_HI), _fma(b, l, _c(F64, _LOG2E_LO), e))
    return _log_specials(b, x, res)


# -- sin / cos (f32 and f64) ---------------------------------------------------------------
def _sincos(b, x, elem, want_sin: bool):
    ty = x.type

    def reduce(v):
        """(k, q, r): v = k*pi/2 + r, q = k mod 4 as i32 (0 when r is NaN)."""
        p1, p2, p3 = _PIO2[elem]
        k = _un(b, "rint", b.fmul(v, _c(ty, _TWO_OVER_PI)))
        nk = b.fneg(k)
        r = _fma(b, nk, _c(ty, p1), v)
        r = _fma(b, nk, _c(ty, p2), r)
        r = _fma(b, nk, _c(ty, p3), r)
        # k mod 4 computed exactly in floating point (any finite k); NaN/inf inputs make r NaN:
        # use 0 then so no poison (fptosi of NaN) reaches the selects below.
        kq = b.select(_is_nan(b, r), _c(ty, 0.0), k)
        q = b.fsub(kq, b.fmul(_c(ty, 4.0), _un(b, "floor", b.fmul(kq, _c(ty, 0.25)))))
        return b.fptosi(q, I32), r

    # Once k no longer fits the significand (|x| > 2**22 in f32), rint(x * 2/pi) is off by a few
    # units and r by a few pi/2: a second reduction brings r back to [-pi/4, pi/4]. The quadrants
    # are added as integers (k1 + k2 would round in floating point).
    q1, r = reduce(x)
    q2, r = reduce(r)
    q = b.add(q1, q2)
    z = b.fmul(r, r)
    sin_r = _fma(b, b.fmul(r, z), _horner(b, _SIN[elem], z), r)
    cos_r = _fma(b, z, _horner(b, _COS[elem], z), _c(ty, 1.0))
    swap = b.icmp_unsigned("!=", b.and_(q, ir.Constant(I32, 1)), ir.Constant(I32, 0))
    if want_sin:
        v = b.select(swap, cos_r, sin_r)
        neg = b.and_(q, ir.Constant(I32, 2))
    else:
        v = b.select(swap, sin_r, cos_r)
        neg = b.and_(b.add(q, ir.Constant(I32, 1)), ir.Constant(I32, 2))
    v = b.select(b.icmp_unsigned("!=", neg, ir.Constant(I32, 0)), b.fneg(v), v)
    # Beyond the range where the reduction holds (|x| > ~2**60 in f64) r can exceed pi/4 and the
    # polynomials leave [-1, 1]: keep the result in range there (NaN stays NaN).
    one = _c(ty, 1.0)
    clamped = call_intrinsic(b, f"llvm.minnum.{_sfx(ty)}", ty, [v, one])
    clamped = call_intrinsic(b, f"llvm.maxnum.{_sfx(ty)}", ty, [clamped, b.fneg(one)])
    v = b.select(_is_nan(b, v), v, clamped)
    if want_sin:  # keep sin(-0) = -0
        v = b.select(b.fcmp_ordered("==", x, _c(ty, 0.0)), x, v)
    return v


# -- erf (f32 and f64) ---------------------------------------------------------------------
_ERF = {
    "f32": (EC.ERF_F32_SMALL, EC.ERF_F32_LARGE, EC.ERF_F32_MID, EC.ERF_F32_HALF, EC.ERF_F32_ONE_FROM),
    "f64": (EC.ERF_F64_SMALL, EC.ERF_F64_LARGE, EC.ERF_F64_MID, EC.ERF_F64_HALF, EC.ERF_F64_ONE_FROM),
}


def _erf(b, x, elem):
    ty = x.type
    small_c, large_c, mid, half, one_from = _ERF[elem]
    a = _un(b, "fabs", x)
    aa = b.fmul(a, a)
    small = b.fmul(a, _horner(b, small_c, aa))
    u = b.fdiv(_c(ty, 1.0), b.fadd(a, _c(ty, 2.0)))
    s = b.fmul(b.fsub(u, _c(ty, mid)), _c(ty, 1.0 / half))
    q = _horner(b, large_c, s)
    e = exp_f64(b, b.fneg(aa)) if elem == "f64" else _un(b, "exp", b.fneg(aa))
    large = _fma(b, b.fneg(e), q, _c(ty, 1.0))
    res = b.select(b.fcmp_ordered("<", a, _c(ty, 1.0)), small, large)
    res = b.select(b.fcmp_ordered(">=", a, _c(ty, one_from)), _c(ty, 1.0), res)
    return call_intrinsic(b, f"llvm.copysign.{_sfx(ty)}", ty, [res, x])


# -- dispatch ------------------------------------------------------------------------------
def _float_op(b, name, args, elem):
    """``name`` on f32 or f64 values."""
    x = args[0]
    ty = x.type
    if name in ("floor", "ceil"):
        return _un(b, name, x)
    if name == "abs":
        return _un(b, "fabs", x)
    if name == "fma":
        return _fma(b, *args)
    if name == "sqrt" and elem == "f32":  # Triton's fast square root: one v_sqrt_f32 (1 ulp)
        return call_intrinsic(b, "llvm.amdgcn.sqrt.f32", ty, [x])
    if name in ("sqrt", "sqrt_rn"):       # correctly rounded (LLVM's expansion on AMDGPU)
        return _un(b, "sqrt", x)
    if name == "rsqrt":
        return b.fdiv(_c(ty, 1.0), _un(b, "sqrt", x))
    if name in ("sin", "cos"):
        return _sincos(b, x, elem, name == "sin")
    if name == "erf":
        return _erf(b, x, elem)
    if elem == "f32" and name == "exp":
        return exp_f32(b, x)
    if elem == "f32" and name == "exp2":
        return exp2_f32(b, x)
    if elem == "f32":
        return _un(b, name, x)  # exp2, log, log2: AMDGPU lowers these f32 intrinsics
    return {"exp": exp_f64, "exp2": exp2_f64, "log": log_f64, "log2": log2_f64}[name](b, x)


def _to_f32(b, v, elem):
    if elem == "bf16" and isinstance(v.type, ir.IntType):
        v = b.bitcast(v, BF16)
    return b.fpext(v, F32)


def _from_f32(b, v, elem, like):
    if elem == "f16":
        return b.fptrunc(v, F16)
    out = b.fptrunc(v, BF16)
    return b.bitcast(out, I16) if isinstance(like, ir.IntType) else out


def _int_op(b, name, args, elem):
    x = args[0]
    width = x.type.width
    if name == "abs":
        if elem.startswith("u") or width == 1:
            return x
        return call_intrinsic(b, f"llvm.abs.i{width}", x.type, [x, ir.Constant(I1, 0)])
    # umulhi: high half of the unsigned 2N-bit product
    wide = ir.IntType(2 * width)
    prod = b.mul(b.zext(x, wide), b.zext(args[1], wide))
    return b.trunc(b.lshr(prod, ir.Constant(wide, width)), x.type)


def emit(builder: ir.IRBuilder, name: str, args, elem: str):
    """Emit math function ``name`` on scalar ``args`` of naiad element type ``elem``."""
    if name not in FUNCTIONS:
        raise CodegenError(f"amd: unknown math function {name!r}; supported: {', '.join(FUNCTIONS)}")
    want = _ARITY.get(name, 1)
    if len(args) != want:
        raise CodegenError(f"amd: math function {name!r} takes {want} argument(s), got {len(args)}")
    if elem in _INTS:
        if name not in ("abs", "umulhi"):
            raise CodegenError(f"amd: math function {name!r} is not defined on integer type {elem}")
        return _int_op(builder, name, args, elem)
    if elem not in _FLOATS:
        raise CodegenError(f"amd: math function {name!r} on unsupported element type {elem!r}")
    if name == "umulhi":
        raise CodegenError(f"amd: umulhi needs integer operands, not {elem}")
    if elem in ("f32", "f64"):
        return _float_op(builder, name, args, elem)
    # f16 / bf16
    if elem == "f16" and name not in _TRANSCENDENTAL:
        return _float_op(builder, name, args, elem)
    wide = [_to_f32(builder, a, elem) for a in args]
    return _from_f32(builder, _float_op(builder, name, wide, "f32"), elem, args[0].type)
