"""Math functions for NVPTX, emitted as LLVM IR with ``llvmlite.ir``.

Why this module exists: the NVPTX backend of LLVM selects only a few of LLVM's math intrinsics
(``sqrt``, ``fma``, ``fabs``, ``floor``, ``ceil``, ``exp2`` for f16/f32). The others
(``llvm.exp``, ``llvm.log``, ``llvm.sin`` ..., and every f64 transcendental) become libcalls that do
not exist on the GPU -- LLVM aborts the whole process. So each function is built here from what
NVPTX does select: IEEE arithmetic, FMA, bit manipulation and two hardware approximations
(``ex2.approx.f32``, ``rsqrt.approx.f32``), plus range reduction and polynomials whose constants
come from ``tools/gen_math_constants.py``. Everything is branch-free (``select`` only), so the
caller's builder stays in its block.

Accuracy, in ulps of the result type (f32: measured against a float64 reference; f64: against
numpy, itself within ~0.5 ulp). The expansions are measured by ``backends/nvidia/tests/test_nv_math_host.py``
(same IR, JIT-compiled for the host CPU); the hardware approximations add their own error, which
``test_nv_gpu.py`` checks on the device. f16/bf16 compute in f32 and round once more.

==========  ==========================================================  ========================
function    f32                                                          f64
==========  ==========================================================  ========================
exp         2^fl(x log2e) on ex2.approx, times (1 + rounding error ln2)  Cody-Waite (ln2 in 2
            (FMA-exact product error): <= 1 ulp + ex2.approx (<= 2)      parts) + Taylor deg 13,
                                                                         2^k in two steps: <= 1
exp2        tl.exp2: ex2.approx.ftz.f32, as Triton: <= 2 ulp, results      exact split x = k + f,
            below 2^-126 flushed to 0 (expansions: ex2.approx.f32)
                                                                         Taylor on f ln2: <= 1
log         x = 2^k m, m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s),    same: <= 1
            s = (m-1)/(m+1), Taylor in s^2; k ln2 in 2 parts: <= 1 ulp
log2        same reduction, k + log(m) log2e with FMA: <= 1.5 ulp         same: <= 2
sqrt        sqrt.rn: correctly rounded                                   sqrt.rn: exact rounding
rsqrt       rsqrt.approx.f32: <= 2 ulp                                   1 / sqrt.rn: <= 1
sin, cos    x - j pi/2 with pi/2 in 3 parts (first FMA exact), done      same with f64 parts:
            twice so |r| <= pi/4 and the quadrant is right; Taylor:      <= 1 for |x| < 2^50
            <= 1.6 ulp for |x| < 1e6, <= 3 ulp to 4e6, abs. error
            < 1e-7 to ~1e7; |x| >= 2^30: bounded but meaningless
            (no Payne-Hanek)
erf         |x| < 1: Taylor with 2/sqrt(pi) in 2 parts; 1 <= |x| < 4:    same, [1, 6) with a
            1 - exp(-x^2) erfcx(x), erfcx a degree-11 Chebyshev fit;     degree-28 fit: <= 1
            beyond: +-1. <= 1.3 ulp (+ exp's ex2.approx share, tiny)
floor/ceil  exact (cvt.rmi / cvt.rpi)                                    exact
abs, fma    exact / single rounding                                      exact / single rounding
==========  ==========================================================  ========================

``exp`` above is the accurate one (libdevice.exp, erf's). Ops the language marks ``approx`` take
Triton's fast sequences instead (:func:`emit_fast`, TargetInfo.fast_math): ``tl.exp`` f32 is
``ex2.approx.f32(fl(x log2e))``, <= 2.5 + 1.25 |x| ulp; float32 ``/`` is ``div.full.f32``, <= 2 ulp
(PTX ISA), f16 through f32. f64 has no fast version.

Special values follow C99/numpy: NaN propagates, exp(-inf)=0, log(0)=-inf, log(<0)=NaN,
sin(+-inf)=NaN, erf(+-inf)=+-1. Subnormal inputs and outputs are handled (no flush to zero).
Integer ``abs`` (signed; identity for unsigned) and ``umulhi`` (high half of the unsigned
double-width product, as Triton's) are exact.
"""
from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from naiad.backend import F32, F64, I1, I32, I64, declare

from . import _math_constants as K

FLOAT_FUNCTIONS = ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf",
                   "floor", "ceil", "abs", "fma")
INT_FUNCTIONS = ("abs", "umulhi")

_ELEM_ALIASES = {"fp16": "f16", "fp32": "f32", "fp64": "f64", "half": "f16", "float": "f32",
                 "double": "f64", "bfloat16": "bf16"}


def normalize_elem(elem: str) -> str:
    """Map naiad element spellings (``fp32``, ``f32`` ...) to one canonical name."""
    return _ELEM_ALIASES.get(elem, elem)


class Primitives:
    """The hardware approximations the expansions build on.

    Kept apart so tests can swap in host equivalents and JIT the very same expansions on the CPU.
    """

    def exp2_f32(self, b: ir.IRBuilder, x):
        # NVPTX selects llvm.exp2.f32 as ex2.approx.f32 (full range, subnormals kept).
        return b.call(declare(b.module, "llvm.exp2.f32", F32, [F32]), [x])

    def exp2_ftz_f32(self, b: ir.IRBuilder, x):
        # tl.exp2 as Triton emits it: one MUFU.EX2. Without .ftz ptxas wraps each ex2 in a
        # compare and two scaling multiplies to keep subnormal results (attention's inner loop
        # runs one exp2 per score).
        return b.call(declare(b.module, "llvm.nvvm.ex2.approx.ftz.f", F32, [F32]), [x])

    def rsqrt_f32(self, b: ir.IRBuilder, x):
        return b.call(declare(b.module, "llvm.nvvm.rsqrt.approx.f", F32, [F32]), [x])

    def div_full_f32(self, b: ir.IRBuilder, x, y):
        # div.full.f32: PTX ISA "maximum ulp error is 2 across the full range of inputs".
        return b.call(declare(b.module, "llvm.nvvm.div.full", F32, [F32, F32]), [x, y])


class HostPrimitives(Primitives):
    """Host stand-ins (libm-backed) for testing the expansions on the CPU."""

    def div_full_f32(self, b, x, y):
        return b.fdiv(x, y)

    def exp2_ftz_f32(self, b, x):
        r = self.exp2_f32(b, x)
        tiny = b.fcmp_ordered("<", r, ir.Constant(F32, 2.0 ** -126))
        return b.select(tiny, ir.Constant(F32, 0.0), r)

    def rsqrt_f32(self, b, x):
        root = b.call(declare(b.module, "llvm.sqrt.f32", F32, [F32]), [x])
        return b.fdiv(ir.Constant(F32, 1.0), root)


class _Fp:
    """Small IR vocabulary for one float type (f32 or f64)."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type, prim: Primitives):
        self.b, self.ty, self.prim = b, ty, prim
        self.is64 = isinstance(ty, ir.DoubleType)
        self.ity = I64 if self.is64 else I32
        self.mant = 52 if self.is64 else 23
        self.bias = 1023 if self.is64 else 127
        self.sfx = "f64" if self.is64 else "f32"
        self.K = {name[4:]: getattr(K, name) for name in dir(K)
                  if name.startswith("F64_" if self.is64 else "F32_")}

    # constants and plain arithmetic
    def c(self, v):
        return ir.Constant(self.ty, v)

    def ci(self, v):
        return ir.Constant(self.ity, v)

    def add(self, a, c):
        return self.b.fadd(a, c)

    def sub(self, a, c):
        return self.b.fsub(a, c)

    def mul(self, a, c):
        return self.b.fmul(a, c)

    def div(self, a, c):
        return self.b.fdiv(a, c)

    def neg(self, a):
        return self.b.fneg(a)

    def fma(self, a, m, c):
        return self.b.fma(a, m, c)

    def intr(self, name, *args):
        fn = declare(self.b.module, f"llvm.{name}.{self.sfx}", self.ty, [self.ty] * len(args))
        return self.b.call(fn, list(args))

    def select(self, cond, a, c):
        return self.b.select(cond, a, c)

    def olt(self, a, c):
        return self.b.fcmp_ordered("<", a, c)

    def ogt(self, a, c):
        return self.b.fcmp_ordered(">", a, c)

    def oeq(self, a, c):
        return self.b.fcmp_ordered("==", a, c)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def bits(self, a):
        return self.b.bitcast(a, self.ity)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def horner(self, x, coeffs):
        """coeffs[0] + x * (coeffs[1] + x * (...)), one FMA per coefficient."""
        acc = self.c(coeffs[-1])
        for cf in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(cf))
        return acc

    def clamp(self, x, lo, hi):
        """Clamp keeping NaN (comparisons with NaN are false)."""
        x = self.select(self.ogt(x, self.c(hi)), self.c(hi), x)
        return self.select(self.olt(x, self.c(lo)), self.c(lo), x)

    def pow2(self, k):
        """2**k as a float for an integer ``k`` in the normal exponent range."""
        e = self.b.add(k, self.ci(self.bias))
        return self.from_bits(self.b.shl(e, self.ci(self.mant)))

    def scale(self, p, k):
        """p * 2**k for integer k up to ~2x the exponent range, via two exact power-of-two
        factors so that overflow to inf and gradual underflow round only once."""
        k1 = self.b.ashr(k, self.ci(1))
        k2 = self.b.sub(k, k1)
        return self.mul(self.mul(p, self.pow2(k1)), self.pow2(k2))

    def to_int(self, x):
        return self.b.fptosi(x, self.ity)

    def to_float(self, i):
        return self.b.sitofp(i, self.ty)


# --------------------------------------------------------------------------- exp / exp2

def _exp_f32(f: _Fp, x):
    # exp(x) = 2^t * 2^e with t = fl(x log2e) and e the rounding error of that product (from FMA
    # plus the error of the constant); 2^e ~ 1 + e ln2. ex2.approx carries the full range.
    t = f.mul(x, f.c(f.K["LOG2E"]))
    e = f.fma(x, f.c(f.K["LOG2E"]), f.neg(t))
    e = f.fma(x, f.c(f.K["LOG2E_LO"]), e)
    e = f.select(f.isnan(e), f.c(0.0), e)          # x = +-inf: inf - inf
    p = f.prim.exp2_f32(f.b, t)
    res = f.fma(p, f.mul(e, f.c(f.K["LN2"])), p)
    return f.select(f.isnan(res), p, res)             # p = inf: inf - inf


def _exp_poly_f64(f: _Fp, r):
    return f.horner(r, K.F64_EXP_P)


def _exp_f64(f: _Fp, x):
    xc = f.clamp(x, -746.0, 710.0)
    j = f.intr("rint", f.mul(xc, f.c(K.F64_LOG2E)))
    r = f.fma(f.neg(j), f.c(K.F64_LN2), xc)          # exact (FMA, |r| small)
    r = f.fma(f.neg(j), f.c(K.F64_LN2_LO), r)
    p = _exp_poly_f64(f, r)
    k = f.to_int(f.select(f.isnan(j), f.c(0.0), j))
    res = f.scale(p, k)
    return f.select(f.isnan(x), x, res)


def _exp2_f64(f: _Fp, x):
    xc = f.clamp(x, -1080.0, 1030.0)
    j = f.intr("rint", xc)
    fr = f.sub(xc, j)                                  # exact
    rh = f.mul(fr, f.c(K.F64_LN2))
    rl = f.fma(fr, f.c(K.F64_LN2), f.neg(rh))
    rl = f.fma(fr, f.c(K.F64_LN2_LO), rl)
    p = _exp_poly_f64(f, rh)
    p = f.fma(p, rl, p)
    k = f.to_int(f.select(f.isnan(j), f.c(0.0), j))
    res = f.scale(p, k)
    return f.select(f.isnan(x), x, res)


# --------------------------------------------------------------------------- log / log2

def _log_reduce(f: _Fp, x):
    """x = 2^k * m with m in [sqrt(1/2), sqrt(2)); returns (k as float, log(m))."""
    tiny = 2.0 ** (-1022 if f.is64 else -126)
    pre = 54 if f.is64 else 24
    sub = f.olt(x, f.c(tiny))
    xs = f.select(sub, f.mul(x, f.c(2.0 ** pre)), x)
    kadj = f.b.select(sub, f.ci(-pre), f.ci(0))
    sqrt_half = 0x3FE6A09E667F3BCD if f.is64 else 0x3F3504F3
    ix = f.b.sub(f.bits(xs), f.ci(sqrt_half))
    k = f.b.add(f.b.ashr(ix, f.ci(f.mant)), kadj)
    mb = f.b.add(f.b.and_(ix, f.ci((1 << f.mant) - 1)), f.ci(sqrt_half))
    m = f.from_bits(mb)
    fm = f.sub(m, f.c(1.0))
    s = f.div(fm, f.add(fm, f.c(2.0)))
    z = f.mul(s, s)
    big_r = f.mul(z, f.horner(z, f.K["LOG_P"]))
    # log(1+f) = 2 atanh(s) = f - s (f - R)
    logm = f.sub(fm, f.mul(s, f.sub(fm, big_r)))
    return f.to_float(k), logm


def _log_specials(f: _Fp, x, r):
    inf = float("inf")
    r = f.select(f.oeq(x, f.c(inf)), f.c(inf), r)
    r = f.select(f.oeq(x, f.c(0.0)), f.c(-inf), r)
    return f.select(f.b.fcmp_unordered("<", x, f.c(0.0)), f.c(float("nan")), r)


def _log(f: _Fp, x):
    kf, logm = _log_reduce(f, x)
    # k * LN2_CW_HI is exact (few significant bits), the rest is one rounding.
    r = f.fma(kf, f.c(f.K["LN2_CW_HI"]), f.fma(kf, f.c(f.K["LN2_CW_LO"]), logm))
    return _log_specials(f, x, r)


def _log2(f: _Fp, x):
    kf, logm = _log_reduce(f, x)
    r = f.fma(logm, f.c(f.K["LOG2E"]), f.fma(logm, f.c(f.K["LOG2E_LO"]), kf))
    return _log_specials(f, x, r)


# --------------------------------------------------------------------------- sin / cos

def _sincos(f: _Fp, x, want_cos: bool):
    c1, c2, c3 = f.K["PIO2"]
    two_over_pi = f.c(f.K["TWO_OVER_PI"])
    limit = f.c(2.0 ** (50 if f.is64 else 30))

    def reduce(v):
        # v - j pi/2 with pi/2 in three parts; the first FMA is exact.
        j = f.intr("rint", f.mul(v, two_over_pi))
        nj = f.neg(j)
        r = f.fma(nj, f.c(c1), v)
        r = f.fma(nj, f.c(c2), r)
        r = f.fma(nj, f.c(c3), r)
        # guard huge/NaN j so fptosi never sees an out-of-range value.
        jsafe = f.select(f.olt(f.intr("fabs", j), limit), j, f.c(0.0))
        return r, f.to_int(jsafe)

    # Second pass: fl(x * 2/pi) may round j off by one for large |x|; re-reducing brings r back
    # into [-pi/4, pi/4] and fixes the quadrant.
    r, q1 = reduce(x)
    r, q2 = reduce(r)
    q = f.b.add(q1, q2)
    # Beyond |x| = limit the reduction has no correct bits left: keep the result bounded.
    r = f.select(f.olt(f.intr("fabs", x), limit), r, f.mul(x, f.c(0.0)))
    z = f.mul(r, r)
    sin_p = f.fma(f.mul(r, z), f.horner(z, f.K["SIN_P"]), r)
    cos_p = f.fma(f.mul(z, z), f.horner(z, f.K["COS_P"]), f.fma(f.c(-0.5), z, f.c(1.0)))
    if want_cos:
        q = f.b.add(q, f.ci(1))
    odd = f.b.icmp_unsigned("!=", f.b.and_(q, f.ci(1)), f.ci(0))
    negate = f.b.icmp_unsigned("!=", f.b.and_(q, f.ci(2)), f.ci(0))
    v = f.select(odd, cos_p, sin_p)
    v = f.select(negate, f.neg(v), v)
    if not want_cos:
        v = f.select(f.oeq(x, f.c(0.0)), x, v)          # sin(-0) = -0
    return v


# --------------------------------------------------------------------------- erf

def _erf(f: _Fp, x, exp_fn):
    lo, hi = f.K["ERF_RANGE"]
    ax = f.intr("fabs", x)
    z = f.mul(x, x)
    c0_hi, c0_lo = f.K["ERF_C0"]                     # 2/sqrt(pi) as hi + lo
    tail = f.fma(z, f.horner(z, f.K["ERF_SMALL"][1:]), f.c(c0_lo))
    small = f.fma(x, f.c(c0_hi), f.mul(x, tail))       # odd Taylor series, |x| < 1
    axc = f.clamp(ax, lo, hi)
    u = f.fma(axc, f.c(2.0 / (hi - lo)), f.c(-(hi + lo) / (hi - lo)))
    g = f.horner(u, f.K["ERFCX"])                        # erfc(x) exp(x^2) on [lo, hi]
    e = exp_fn(f, f.neg(f.mul(axc, axc)))
    big = f.fma(f.neg(e), g, f.c(1.0))                  # erf(|x|) = 1 - exp(-x^2) erfcx(|x|)
    big = f.select(f.olt(ax, f.c(hi)), big, f.c(1.0))
    big = f.intr("copysign", big, x)
    res = f.select(f.olt(ax, f.c(lo)), small, big)
    return f.select(f.b.fcmp_unordered("==", x, f.c(0.0)), x, res)   # NaN and +-0 pass through


# --------------------------------------------------------------------------- dispatch

def _float_math(b: ir.IRBuilder, name: str, args, ty, prim: Primitives):
    """``name`` on f32 or f64 values."""
    f = _Fp(b, ty, prim)
    x = args[0]
    if name in ("floor", "ceil", "sqrt"):
        return f.intr(name, x)
    if name == "sqrt_rn":  # sqrt is already correctly rounded here (sqrt.rn)
        return f.intr("sqrt", x)
    if name == "abs":
        return f.intr("fabs", x)
    if name == "fma":
        return f.fma(args[0], args[1], args[2])
    if name == "rsqrt":
        if f.is64:
            return f.div(f.c(1.0), f.intr("sqrt", x))
        return prim.rsqrt_f32(b, x)
    if name == "exp":
        return _exp_f64(f, x) if f.is64 else _exp_f32(f, x)
    if name == "exp2":
        return _exp2_f64(f, x) if f.is64 else prim.exp2_ftz_f32(b, x)
    if name == "log":
        return _log(f, x)
    if name == "log2":
        return _log2(f, x)
    if name in ("sin", "cos"):
        return _sincos(f, x, name == "cos")
    if name == "erf":
        return _erf(f, x, _exp_f64 if f.is64 else _exp_f32)
    raise KeyError(name)


# --------------------------------------------------------------------------- Triton's fast ops

#: what ``emit_fast`` answers (TargetInfo.fast_math): Triton's sequences on NVIDIA
FAST_FUNCTIONS = ("div", "exp")


def emit_fast(b: ir.IRBuilder, name: str, args: Sequence, elem: str,
              prim: Primitives | None = None):
    """Triton's fast ``name`` on f32 (f16 computed in f32 and rounded once), or None (f64, and
    names Triton computes accurately: the caller then emits the accurate op).

    * ``div`` (float ``/``): ``div.full.f32``, <= 2 ulp over the full range (PTX ISA);
    * ``exp`` (``tl.exp``): ``ex2.approx.f32(fl(x * log2e))``: ex2.approx's <= 2 ulp plus the
      rounding of the product, an error of up to |x| * (2^-24 + log2e's 1.3e-8) in the exponent,
      i.e. <= 2.5 + 1.25 |x| ulp from the exact value (ex2.approx: 2 ulp from the rounded
      result; CUDA documents 2 + floor(1.173 |x|) for the same __expf).
    """
    prim = prim or Primitives()
    elem = normalize_elem(elem)
    if name not in FAST_FUNCTIONS or elem not in ("f16", "f32"):
        return None
    wide = [_to_f32(b, a, elem) for a in args] if elem == "f16" else list(args)
    if name == "div":
        res = prim.div_full_f32(b, wide[0], wide[1])
    else:
        res = prim.exp2_f32(b, b.fmul(wide[0], ir.Constant(F32, K.F32_LOG2E)))
    return _from_f32(b, res, args[0].type) if elem == "f16" else res


def _to_f32(b: ir.IRBuilder, v, elem: str):
    """Widen an f16/bf16 value to f32. bf16 may arrive as LLVM ``bfloat`` or as raw ``i16``."""
    if isinstance(v.type, ir.IntType):              # bf16 carried as i16 bits
        wide = b.shl(b.zext(v, I32), ir.Constant(I32, 16))
        return b.bitcast(wide, F32)
    return b.fpext(v, F32)


def _from_f32(b: ir.IRBuilder, v, like_type):
    """Round an f32 back to the narrow type ``like_type`` (round to nearest even)."""
    if isinstance(like_type, ir.IntType):           # bf16 as i16 bits: RNE by hand, NaN kept
        bits = b.bitcast(v, I32)
        lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
        rounded = b.add(b.add(bits, ir.Constant(I32, 0x7FFF)), lsb)
        is_nan = b.fcmp_unordered("uno", v, v)
        out = b.select(is_nan, b.or_(bits, ir.Constant(I32, 0x400000)), rounded)
        return b.trunc(b.lshr(out, ir.Constant(I32, 16)), like_type)
    return b.fptrunc(v, like_type)


def _int_math(b: ir.IRBuilder, name: str, args, elem: str):
    x = args[0]
    ty = x.type
    if name == "abs":
        if elem.startswith("u") or ty.width == 1:
            return x
        fn = declare(b.module, f"llvm.abs.i{ty.width}", ty, [ty, I1])
        return b.call(fn, [x, ir.Constant(I1, 0)])
    if name == "umulhi":
        wide = ir.IntType(2 * ty.width)
        prod = b.mul(b.zext(args[0], wide), b.zext(args[1], wide))
        return b.trunc(b.lshr(prod, ir.Constant(wide, ty.width)), ty)
    raise KeyError(name)


def emit(b: ir.IRBuilder, name: str, args: Sequence, elem: str,
         prim: Primitives | None = None):
    """Emit math function ``name`` on scalar ``args`` of naiad element type ``elem``.

    Raises ``KeyError`` for an unsupported (name, elem) pair; the caller turns it into a
    naiad error.
    """
    prim = prim or Primitives()
    elem = normalize_elem(elem)
    if name == "fabs":
        name = "abs"
    if elem in ("f32", "f64"):
        if name not in FLOAT_FUNCTIONS:
            raise KeyError(name)
        return _float_math(b, name, args, F64 if elem == "f64" else F32, prim)
    if elem in ("f16", "bf16"):
        if name not in FLOAT_FUNCTIONS:
            raise KeyError(name)
        narrow = args[0].type
        wide = [_to_f32(b, a, elem) for a in args]
        return _from_f32(b, _float_math(b, name, wide, F32, prim), narrow)
    if elem[:1] in ("i", "u") and elem[1:].isdigit():
        if name not in INT_FUNCTIONS:
            raise KeyError(name)
        return _int_math(b, name, args, elem)
    raise KeyError(elem)
