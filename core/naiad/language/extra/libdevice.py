"""``tl.extra.libdevice``: the CUDA libdevice / HIP ocml names kernels call (``libdevice.asin``),
built from the language's own operations so that every backend (and the reference executor)
computes them the same way, through its own math library.

Functions the core math ops cover map to them directly. The others are composed with the usual
numerically careful formulas (documented per function): ``atan`` by argument reduction to
``|t| <= tan(pi/8)`` and a series; ``asin``/``acos`` by the series of asin on
``|s| <= 1/2`` and ``asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2))`` above (no division);
``atan2`` through ``atan``; ``log1p``/``expm1``
with Goldberg's/Kahan's exact-division corrections; the hyperbolic functions through ``expm1``;
``rint`` by adding and subtracting 2^mantissa. float16/bfloat16 compute in float32. Accuracy
(measured in ``tests/reference/test_libdevice.py``): a few ulp of the result type; ``erfc`` and
``pow`` are accurate in absolute rather than relative terms where the result is tiny. A name of
libdevice that is not here is an error naming it.
"""
from __future__ import annotations

import functools
import math as _m
from decimal import Decimal, getcontext

from ...errors import CompilationError
from ...ir import types as irt
from ..core import builtin, tensor
from ..semantics import describe
from .. import math as _lm

_FLOATS = (irt.f32, irt.f64)


# -- helpers ------------------------------------------------------------------------------------

def _float(s, x, name: str) -> tensor:
    x = s.to_tensor(x)
    if not x.type.scalar.is_float:
        raise CompilationError(f"libdevice.{name} needs a floating-point operand, got "
                               f"{describe(x)}")
    return x


def _int(s, x, name: str) -> tensor:
    x = s.to_tensor(x)
    if not x.type.scalar.is_int or x.type.scalar == irt.i1:
        raise CompilationError(f"libdevice.{name} needs an integer operand, got {describe(x)}")
    return x


class _F:
    """Arithmetic on one compute dtype (f32 or f64), shorthand for the formulas below."""

    def __init__(self, s, t):
        self.s, self.t = s, t
        self.mant = 23 if t == irt.f32 else 52
        self.max_exp_arg = 88.0 if t == irt.f32 else 709.0

    def add(self, a, b): return self.s.binary("add", a, b)
    def sub(self, a, b): return self.s.binary("sub", a, b)
    def mul(self, a, b): return self.s.binary("mul", a, b)
    def div(self, a, b): return self.s.true_divide(a, b, ieee_rounding=True)   # accurate
    def fast_div(self, a, b): return self.s.true_divide(a, b)
    def lt(self, a, b): return self.s.compare("lt", a, b)
    def le(self, a, b): return self.s.compare("le", a, b)
    def gt(self, a, b): return self.s.compare("gt", a, b)
    def ge(self, a, b): return self.s.compare("ge", a, b)
    def eq(self, a, b): return self.s.compare("eq", a, b)
    def ne(self, a, b): return self.s.compare("ne", a, b)
    def sel(self, c, a, b): return self.s.select(c, a, b)
    def and_(self, a, b): return self.s.logical("and", a, b)
    def or_(self, a, b): return self.s.logical("or", a, b)
    def neg(self, a): return self.s.unary("neg", a)
    def fn(self, name, a): return self.s.op(name, [a], a.type)
    def abs(self, a): return self.fn("abs", a)
    def isnan(self, a): return self.ne(a, a)
    def isinf(self, a): return self.eq(self.abs(a), float("inf"))

    def fma(self, a, b, c):
        return _lm.fma(a, b, c, _semantic=self.s)

    def bits_type(self):
        return irt.i32 if self.t == irt.f32 else irt.i64

    def copysign(self, mag, sign):
        it = self.bits_type()
        s = self.s
        width = it.bitwidth
        low = (1 << (width - 1)) - 1
        mb = s.binary("and", s.bitcast(mag, it), low)
        sb = s.binary("and", s.bitcast(sign, it), -(1 << (width - 1)))
        return s.bitcast(s.binary("or", mb, sb), self.t)

    def signbit(self, a):
        return self.s.compare("lt", self.s.bitcast(a, self.bits_type()), 0)


def _unary(name: str, impl, doc: str):
    """A libdevice function of one float, computed by ``impl(f, x)`` in f32/f64 (f16/bf16 go
    through f32 and round back)."""

    def fn(arg0, _semantic=None):
        s = _semantic
        x = _float(s, arg0, name)
        t = x.type.scalar
        work = t if t in _FLOATS else irt.f32
        xw = s.cast(x, work)
        return s.cast(impl(_F(s, work), xw), t)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


def _binary(name: str, impl, doc: str):
    def fn(arg0, arg1, _semantic=None):
        s = _semantic
        x, y = s.promote(_float(s, arg0, name), _float(s, arg1, name))
        t = x.type.scalar
        work = t if t in _FLOATS else irt.f32
        return s.cast(impl(_F(s, work), s.cast(x, work), s.cast(y, work)), t)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


# -- rounding -------------------------------------------------------------------------------------

def _trunc(f, x):
    return f.sel(f.lt(x, 0.0), f.fn("ceil", x), f.fn("floor", x))


def _rint(f, x):
    """Round half to even: |x| + 2^mant - 2^mant rounds in the FPU's default mode."""
    big = float(2 ** f.mant)
    a = f.abs(x)
    r = f.sub(f.add(a, big), big)
    return f.sel(f.lt(a, big), f.copysign(r, x), x)


def _round(f, x):
    """Round half away from zero."""
    t = _trunc(f, x)
    frac = f.abs(f.sub(x, t))
    one = f.copysign(f.s.full(x.shape, 1.0, f.t), x)
    return f.sel(f.ge(frac, 0.5), f.add(t, one), t)


# -- exponentials and logarithms ------------------------------------------------------------------

def _log1p(f, x):
    """Goldberg: log(u) * x / (u - 1) with u = 1 + x corrects u's rounding."""
    u = f.add(x, 1.0)
    um1 = f.sub(u, 1.0)
    r = f.div(f.mul(f.fn("log", u), x), um1)
    r = f.sel(f.eq(um1, 0.0), x, r)
    return f.sel(f.eq(x, float("inf")), x, r)


def _expm1(f, x):
    """Kahan: (u - 1) * x / log(u) with u = exp(x)."""
    u = f.fn("exp", x)
    um1 = f.sub(u, 1.0)
    r = f.div(f.mul(um1, x), f.fn("log", u))
    r = f.sel(f.eq(u, 1.0), x, r)
    r = f.sel(f.eq(um1, -1.0), um1, r)
    return f.sel(f.eq(u, float("inf")), u, r)


def _split(c: float, t) -> tuple[float, float]:
    """``c`` as hi + lo, hi rounded to ``t`` (c given to ~40 digits as a Decimal)."""
    import numpy as np

    hi = float(np.float32(float(c))) if t == irt.f32 else float(c)
    lo = float(c - Decimal(hi))
    return hi, lo


_LN10 = None


def _ln10():
    global _LN10
    if _LN10 is None:
        getcontext().prec = 40
        _LN10 = Decimal(10).ln()
    return _LN10


def _exp10(f, x):
    """exp(x ln10) with the product's rounding error (and ln10's) corrected: exp(y)(1 + err)."""
    hi, lo = _split(_ln10(), f.t)
    y = f.mul(x, hi)
    err = f.fma(x, lo, f.fma(x, hi, f.neg(y)))
    e = f.fn("exp", y)
    return f.fma(e, err, e)


def _log10(f, x):
    return f.mul(f.fn("log", x), 1.0 / _m.log(10.0))


def _pow(f, x, y):
    """|x|^y = exp2(y log2|x|) in float64, sign and special cases as C pow."""
    s = f.s
    wide = irt.f64
    ax = s.cast(f.abs(x), wide)
    yw = s.cast(y, wide)
    mag = s.cast(s.op("exp2", [s.binary("mul", yw, s.op("log2", [ax], ax.type))], ax.type),
                 f.t)
    y_int = f.eq(_trunc(f, y), y)
    half = f.mul(y, 0.5)
    y_odd = f.and_(y_int, f.ne(_trunc(f, half), half))
    neg = f.lt(x, 0.0)
    r = f.sel(f.and_(neg, y_odd), f.neg(mag), mag)
    r = f.sel(f.and_(neg, s.unary("not", y_int)), float("nan"), r)
    one = f.or_(f.eq(y, 0.0), f.eq(x, 1.0))
    return f.sel(one, 1.0, r)


def _cbrt(f, x):
    """exp2(log2|x| / 3) refined by one Newton step."""
    a = f.abs(x)
    r = f.fn("exp2", f.div(f.fn("log2", a), 3.0))
    r = f.sub(r, f.div(f.sub(f.mul(f.mul(r, r), r), a), f.mul(f.mul(r, r), 3.0)))
    r = f.sel(f.or_(f.eq(a, 0.0), f.isinf(a)), a, r)
    return f.copysign(r, x)


# -- trigonometry -----------------------------------------------------------------------------

_TAN_PI_8 = _m.tan(_m.pi / 8)
_PI_DIGITS = "3.14159265358979323846264338327950288419716939937510582097494459"


def _atan_abs(f, a):
    """atan of a >= 0: 1/a above 1, then (t - 1)/(t + 1) above tan(pi/8), then a series."""
    inv = f.gt(a, 1.0)
    t = f.sel(inv, f.div(1.0, a), a)
    shift = f.gt(t, _TAN_PI_8)
    u = f.sel(shift, f.div(f.sub(t, 1.0), f.add(t, 1.0)), t)
    terms = 11 if f.t == irt.f32 else 23      # |u| <= 0.4143: u^(2n+1)/(2n+1) below 1 ulp
    u2 = f.mul(u, u)
    p = f.s.full(u.shape, 1.0 / (2 * terms - 1) * (-1) ** (terms - 1), f.t)
    for n in reversed(range(terms - 1)):
        p = f.fma(p, u2, (-1) ** n / (2 * n + 1))
    r = f.mul(u, p)
    r = f.sel(shift, f.add(r, _m.pi / 4), r)
    return f.sel(inv, f.sub(_m.pi / 2, r), r)


def _atan(f, x):
    r = _atan_abs(f, f.abs(x))
    r = f.sel(f.isnan(x), x, r)
    return f.copysign(r, x)


def _atan2(f, y, x):
    ay, ax = f.abs(y), f.abs(x)
    big, small = f.sel(f.gt(ay, ax), ay, ax), f.sel(f.gt(ay, ax), ax, ay)
    ratio = f.div(small, big)
    ratio = f.sel(f.eq(big, 0.0), 0.0, ratio)
    ratio = f.sel(f.and_(f.isinf(ay), f.isinf(ax)), 1.0, ratio)
    r = _atan_abs(f, ratio)
    r = f.sel(f.gt(ay, ax), f.sub(_m.pi / 2, r), r)
    r = f.sel(f.signbit(x), f.sub(_m.pi, r), r)
    r = f.sel(f.or_(f.isnan(x), f.isnan(y)), float("nan"), r)
    return f.copysign(r, y)


def _asin_series(f, s, z):
    """asin(s) for 0 <= s <= 1/2 and z = s^2: s + s z P(z), P the Taylor series of
    (asin(s) - s) / s^3 in z (coefficients (2n)! / (4^n n!^2 (2n + 1)), z <= 1/4: 11 terms
    reach f32's rounding, 26 f64's). Only multiply-adds: no division, no branch."""
    terms = 11 if f.t == irt.f32 else 26
    coeffs = [_m.comb(2 * n, n) / 4 ** n / (2 * n + 1) for n in range(1, terms + 1)]
    p = f.s.full(s.shape, coeffs[-1], f.t)
    for c in reversed(coeffs[:-1]):
        p = f.fma(p, z, c)
    return f.fma(f.mul(s, z), p, s)


def _pi_parts(f, multiple: float) -> tuple[float, float]:
    """``multiple * pi`` as a rounded head in the compute type and the rest (a tail)."""
    import numpy as _np

    head = float(_np.asarray(multiple * _m.pi, dtype=_np.float32 if f.t == irt.f32
                             else _np.float64))
    tail = float(Decimal(multiple) * Decimal(_PI_DIGITS) - Decimal(head))
    return head, tail


def _asin_reduced(f, a):
    """(asin(a), whether a > 1/2) for a = |x|: the series directly up to 1/2, above it
    asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)) (1 - a is exact there). |x| > 1 gives NaN."""
    big = f.gt(a, 0.5)
    z = f.sel(big, f.mul(f.sub(1.0, a), 0.5), f.mul(a, a))
    s = f.sel(big, f.fn("sqrt_rn", z), a)
    return _asin_series(f, s, z), big


def _asin(f, x):
    """The small-argument series or pi/2 - 2 asin(sqrt((1 - |x|) / 2)), with pi/2 in two
    parts; like libdevice (and unlike atan(x / sqrt(1 - x^2))) free of divisions."""
    p, big = _asin_reduced(f, f.abs(x))
    hi, lo = _pi_parts(f, 0.5)
    r = f.sel(big, f.add(f.fma(p, -2.0, hi), lo), p)
    return f.copysign(r, x)


def _acos(f, x):
    """pi/2 - asin(x) for |x| <= 1/2; 2 asin(sqrt((1 - |x|) / 2)) above, from pi when x < 0."""
    p, big = _asin_reduced(f, f.abs(x))
    half_hi, half_lo = _pi_parts(f, 0.5)
    pi_hi, pi_lo = _pi_parts(f, 1.0)
    small = f.add(f.sub(half_hi, f.copysign(p, x)), half_lo)
    twice = f.mul(p, 2.0)
    large = f.sel(f.signbit(x), f.add(f.sub(pi_hi, twice), pi_lo), twice)
    return f.sel(big, large, small)


def _tan(f, x):
    return f.div(f.fn("sin", x), f.fn("cos", x))


def _sinpi_reduced(f, x):
    """sin(pi x) for the point x - 2 rint(x / 2) in [-1, 1], folded to |u| <= 1/2 (exactly)."""
    r = f.sub(x, f.mul(_rint(f, f.mul(x, 0.5)), 2.0))
    one = f.copysign(f.s.full(r.shape, 1.0, f.t), r)
    u = f.sel(f.gt(f.abs(r), 0.5), f.sub(one, r), r)
    return f.fn("sin", f.mul(u, _m.pi))


def _sinpi(f, x):
    return _sinpi_reduced(f, x)


def _cospi(f, x):
    """cos(pi x) = sin(pi (1/2 - |r|))."""
    r = f.sub(x, f.mul(_rint(f, f.mul(x, 0.5)), 2.0))
    return _sinpi_reduced(f, f.sub(0.5, f.abs(r)))


# -- hyperbolic -------------------------------------------------------------------------------

def _large_exp_half(f, a):
    """exp(a) / 2 without overflowing before the result does."""
    return f.sel(f.lt(a, f.max_exp_arg), f.mul(f.fn("exp", a), 0.5),
                 f.fn("exp", f.sub(a, _m.log(2.0))))


def _sinh(f, x):
    a = f.abs(x)
    e = _expm1(f, a)
    small = f.mul(f.add(e, f.div(e, f.add(e, 1.0))), 0.5)
    r = f.sel(f.lt(a, 20.0 if f.t == irt.f32 else 40.0), small, _large_exp_half(f, a))
    return f.copysign(r, x)


def _cosh(f, x):
    a = f.abs(x)
    e = f.fn("exp", a)
    small = f.mul(f.add(e, f.div(1.0, e)), 0.5)
    return f.sel(f.lt(a, 20.0 if f.t == irt.f32 else 40.0), small, _large_exp_half(f, a))


@functools.lru_cache(maxsize=None)
def _tanh_series_coefficients(terms: int) -> tuple[float, ...]:
    """Taylor coefficients of (tanh(a) - a) / a^3 in a^2: 2^2n (2^2n - 1) B_2n / (2n)! for
    n = 2.. (B the Bernoulli numbers, exact fractions)."""
    from fractions import Fraction

    bern = [Fraction(1)]
    for m in range(1, 2 * terms + 3):
        bern.append(-sum(_m.comb(m + 1, k) * bern[k] for k in range(m)) / (m + 1))
    return tuple(float(4 ** n * (4 ** n - 1) * bern[2 * n] / _m.factorial(2 * n))
                 for n in range(2, terms + 2))


def _tanh(f, x):
    """expm1(2a) / (expm1(2a) + 2), and below |x| = 0.55 the Taylor series a + a^3 P(a^2):
    the quotient's rounding there reached 5 ulp in f32 (x near 0.008), 3 in f64."""
    a = f.abs(x)
    e = _expm1(f, f.mul(a, 2.0))
    r = f.div(e, f.add(e, 2.0))
    # each term shrinks by (a / (pi/2))^2 <= 0.123: 9 terms reach f32's rounding, 19 f64's
    terms = 9 if f.t == irt.f32 else 19
    coeffs = _tanh_series_coefficients(terms)
    z = f.mul(a, a)
    p = f.s.full(a.shape, coeffs[-1], f.t)
    for c in reversed(coeffs[:-1]):
        p = f.fma(p, z, c)
    r = f.sel(f.lt(a, 0.55), f.fma(f.mul(a, z), p, a), r)
    r = f.sel(f.gt(a, 20.0 if f.t == irt.f32 else 40.0), 1.0, r)
    r = f.sel(f.isnan(x), x, r)
    return f.copysign(r, x)


def _asinh(f, x):
    a = f.abs(x)
    a2 = f.mul(a, a)
    r = _log1p(f, f.add(a, f.div(a2, f.add(f.fn("sqrt_rn", f.add(a2, 1.0)), 1.0))))
    huge = f.gt(a, 2.0 ** (f.mant // 2 + 2))
    r = f.sel(huge, f.add(f.fn("log", a), _m.log(2.0)), r)
    return f.copysign(r, x)


def _acosh(f, x):
    t = f.sub(x, 1.0)
    r = _log1p(f, f.add(t, f.fn("sqrt_rn", f.mul(t, f.add(t, 2.0)))))
    huge = f.gt(x, 2.0 ** (f.mant // 2 + 2))
    return f.sel(huge, f.add(f.fn("log", x), _m.log(2.0)), r)


def _atanh(f, x):
    a = f.abs(x)
    r = f.mul(_log1p(f, f.div(f.mul(a, 2.0), f.sub(1.0, a))), 0.5)
    return f.copysign(r, x)


# -- the rest ---------------------------------------------------------------------------------

def _hypot(f, x, y):
    ax, ay = f.abs(x), f.abs(y)
    big = f.sel(f.gt(ax, ay), ax, ay)
    small = f.sel(f.gt(ax, ay), ay, ax)
    q = f.div(small, big)
    r = f.mul(big, f.fn("sqrt_rn", f.fma(q, q, 1.0)))
    r = f.sel(f.eq(big, 0.0), 0.0, r)
    return f.sel(f.or_(f.isinf(ax), f.isinf(ay)), float("inf"), r)


def _fdim(f, x, y):
    r = f.sel(f.gt(x, y), f.sub(x, y), 0.0)
    return f.sel(f.or_(f.isnan(x), f.isnan(y)), float("nan"), r)


def _erfc(f, x):
    return f.sub(1.0, f.fn("erf", x))


def _saturate(f, x):
    r = f.sel(f.lt(x, 0.0), 0.0, f.sel(f.gt(x, 1.0), 1.0, x))
    return f.sel(f.isnan(x), 0.0, r)


def _direct(op: str):
    return lambda f, x: f.fn(op, x)


def _fast_exp(f, x):
    """libdevice's fast_expf: tl.exp's op (Triton's fast exp where a backend has one)."""
    return f.s.op("exp", [x], x.type, approx=True)


_UNARY = {
    # direct
    "exp": (_direct("exp"), "e ** x"), "exp2": (_direct("exp2"), "2 ** x"),
    "log": (_direct("log"), "natural logarithm"), "log2": (_direct("log2"), "base-2 log"),
    "sqrt": (_direct("sqrt"), "square root"), "sqrt_rn": (_direct("sqrt_rn"), "square root, correctly rounded"),
    "rsqrt": (_direct("rsqrt"), "1 / sqrt(x)"), "rsqrt_rn": (_direct("rsqrt"), "1 / sqrt(x)"),
    "sin": (_direct("sin"), "sine"), "cos": (_direct("cos"), "cosine"),
    "erf": (_direct("erf"), "error function"), "floor": (_direct("floor"), "round down"),
    "ceil": (_direct("ceil"), "round up"), "fabs": (_direct("abs"), "absolute value"),
    "fast_expf": (_fast_exp, "e ** x, fast"), "fast_logf": (_direct("log"), "log"),
    "fast_log2f": (_direct("log2"), "log2"), "fast_sinf": (_direct("sin"), "sine"),
    "fast_cosf": (_direct("cos"), "cosine"),
    # composed
    "trunc": (_trunc, "round toward zero"), "rint": (_rint, "round half to even"),
    "nearbyint": (_rint, "round half to even"), "round": (_round, "round half away from 0"),
    "log1p": (_log1p, "log(1 + x), accurate near 0"), "expm1": (_expm1, "exp(x) - 1"),
    "exp10": (_exp10, "10 ** x"), "fast_exp10f": (_exp10, "10 ** x"),
    "log10": (_log10, "base-10 logarithm"), "fast_log10f": (_log10, "base-10 logarithm"),
    "cbrt": (_cbrt, "cube root"), "atan": (_atan, "arc tangent"),
    "asin": (_asin, "arc sine"), "acos": (_acos, "arc cosine"), "tan": (_tan, "tangent"),
    "fast_tanf": (_tan, "tangent"), "sinpi": (_sinpi, "sin(pi x)"),
    "cospi": (_cospi, "cos(pi x)"), "sinh": (_sinh, "hyperbolic sine"),
    "cosh": (_cosh, "hyperbolic cosine"), "tanh": (_tanh, "hyperbolic tangent"),
    "asinh": (_asinh, "inverse hyperbolic sine"), "acosh": (_acosh, "inverse hyperbolic cosine"),
    "atanh": (_atanh, "inverse hyperbolic tangent"),
    "erfc": (_erfc, "1 - erf(x) (absolute accuracy)"), "saturatef": (_saturate, "clamp to [0, 1]"),
    "rcp_rn": (lambda f, x: f.div(1.0, x), "1 / x"),
    "rcbrt": (lambda f, x: f.div(1.0, _cbrt(f, x)), "1 / cbrt(x)"),
}
_BINARY = {
    "atan2": (_atan2, "arc tangent of y / x in the right quadrant"),
    "pow": (_pow, "x ** y (computed in float64)"), "fast_powf": (_pow, "x ** y"),
    "hypot": (_hypot, "sqrt(x*x + y*y) without overflow"), "fdim": (_fdim, "max(x - y, 0)"),
    "fmod": (lambda f, x, y: f.s.binary("mod", x, y), "C fmod"),
    "fmin": (lambda f, x, y: f.s.op("min", [x, y], x.type), "minimum (NaN ignored)"),
    "fmax": (lambda f, x, y: f.s.op("max", [x, y], x.type), "maximum (NaN ignored)"),
    "copysign": (lambda f, x, y: f.copysign(x, y), "|x| with y's sign"),
    "div_rn": (lambda f, x, y: f.div(x, y), "x / y rounded to nearest"),
    "add_rn": (lambda f, x, y: f.add(x, y), "x + y"), "sub_rn": (lambda f, x, y: f.sub(x, y), "x - y"),
    "mul_rn": (lambda f, x, y: f.mul(x, y), "x * y"),
    "fast_dividef": (lambda f, x, y: f.fast_div(x, y), "x / y, fast"),
}

for _name, (_impl, _doc) in _UNARY.items():
    globals()[_name] = _unary(_name, _impl, _doc)
for _name, (_impl, _doc) in _BINARY.items():
    globals()[_name] = _binary(_name, _impl, _doc)


# -- functions with other signatures ------------------------------------------------------------

@builtin
def fma(arg0, arg1, arg2, _semantic=None):
    """x * y + z with one rounding."""
    return _lm.fma(arg0, arg1, arg2, _semantic=_semantic)


fma_rn = fma


@builtin
def abs(arg0, _semantic=None):
    """Absolute value (integers and floats)."""
    return _lm.abs(arg0, _semantic=_semantic)


def _predicate(name, test, doc):
    def fn(arg0, _semantic=None):
        s = _semantic
        x = _float(s, arg0, name)
        work = x.type.scalar if x.type.scalar in _FLOATS else irt.f32
        return s.cast(test(_F(s, work), s.cast(x, work)), irt.i32)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " (int32: 1 or 0, as libdevice)"
    return builtin(fn)


isnan = _predicate("isnan", lambda f, x: f.isnan(x), "x is NaN")
isinf = _predicate("isinf", lambda f, x: f.isinf(x), "x is +-inf")
finitef = _predicate("finitef", lambda f, x: f.s.unary("not", f.or_(f.isnan(x), f.isinf(x))),
                     "x is finite")
isfinited = finitef
signbit = _predicate("signbit", lambda f, x: f.signbit(x), "the sign bit of x is set")


@builtin
def ldexp(arg0, arg1, _semantic=None):
    """x * 2^n (n an integer)."""
    s = _semantic
    x = _float(s, arg0, "ldexp")
    n = _int(s, arg1, "ldexp")
    work = x.type.scalar if x.type.scalar in _FLOATS else irt.f32
    scale = s.op("exp2", [s.cast(n, work)], irt.with_element(n.type, work))
    return s.cast(s.binary("mul", s.cast(x, work), scale), x.type.scalar)


scalbn = ldexp


# -- integer bit functions --------------------------------------------------------------------

def _popc(s, x):
    width = x.type.scalar.bitwidth
    u = s.bitcast(x, irt.ScalarType(f"u{width}"))
    ones = 0
    for i in range(width):
        bit = s.binary("and", s.binary("rshift", u, i), 1)
        ones = bit if isinstance(ones, int) else s.binary("add", ones, bit)
    return s.cast(ones, irt.i32)


@builtin
def popc(arg0, _semantic=None):
    """Number of set bits (int32)."""
    return _popc(_semantic, _int(_semantic, arg0, "popc"))


@builtin
def clz(arg0, _semantic=None):
    """Number of leading zero bits (int32)."""
    s = _semantic
    x = _int(s, arg0, "clz")
    width = x.type.scalar.bitwidth
    u = s.bitcast(x, irt.ScalarType(f"u{width}"))
    # smear the highest set bit right, then count the zeros above it
    for sh in (1, 2, 4, 8, 16, 32):
        if sh < width:
            u = s.binary("or", u, s.binary("rshift", u, sh))
    return s.binary("sub", width, _popc(s, u))


@builtin
def ffs(arg0, _semantic=None):
    """1 + index of the lowest set bit, 0 for 0 (int32)."""
    s = _semantic
    x = _int(s, arg0, "ffs")
    width = x.type.scalar.bitwidth
    u = s.bitcast(x, irt.ScalarType(f"u{width}"))
    low = s.binary("and", u, s.binary("add", s.unary("invert", u), 1))   # x & -x
    below = _popc(s, s.binary("sub", low, 1))
    return s.select(s.compare("eq", u, 0), 0, s.binary("add", below, 1))


@builtin
def brev(arg0, _semantic=None):
    """The bits in reverse order."""
    s = _semantic
    x = _int(s, arg0, "brev")
    width = x.type.scalar.bitwidth
    ut = irt.ScalarType(f"u{width}")
    u = s.bitcast(x, ut)
    r = None
    for i in range(width):
        bit = s.binary("lshift", s.binary("and", s.binary("rshift", u, i), 1), width - 1 - i)
        r = bit if r is None else s.binary("or", r, bit)
    return s.bitcast(r, x.type.scalar)


def _bitcast_fn(name, src, dst):
    def fn(arg0, _semantic=None):
        s = _semantic
        x = s.to_tensor(arg0)
        if x.type.scalar != src:
            raise CompilationError(f"libdevice.{name} needs a {src} operand, got {describe(x)}")
        return s.bitcast(x, dst)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"the bits of a {src} as a {dst}"
    return builtin(fn)


float_as_int = _bitcast_fn("float_as_int", irt.f32, irt.i32)
int_as_float = _bitcast_fn("int_as_float", irt.i32, irt.f32)
float_as_uint = _bitcast_fn("float_as_uint", irt.f32, irt.u32)
uint_as_float = _bitcast_fn("uint_as_float", irt.u32, irt.f32)
double_as_longlong = _bitcast_fn("double_as_longlong", irt.f64, irt.i64)
longlong_as_double = _bitcast_fn("longlong_as_double", irt.i64, irt.f64)


def _convert_fn(name, src, dst, mode):
    rounders = {"rn": _rint, "rz": _trunc, "rd": lambda f, x: f.fn("floor", x),
                "ru": lambda f, x: f.fn("ceil", x)}

    def fn(arg0, _semantic=None):
        s = _semantic
        x = s.cast(s.to_tensor(arg0), src)
        if dst.is_int:
            x = rounders[mode](_F(s, src), x)
        elif mode != "rn":
            raise CompilationError(f"libdevice.{name}: only round-to-nearest conversions to "
                                   "floating point are supported")
        return s.cast(x, dst)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{src} -> {dst}, rounding {mode}"
    return builtin(fn)


_CONVERSIONS = {"float": irt.f32, "double": irt.f64, "int": irt.i32, "uint": irt.u32,
                "ll": irt.i64, "ull": irt.u64}
for _src in ("float", "double"):
    for _dst in ("int", "uint", "ll", "ull"):
        for _mode in ("rn", "rz", "rd", "ru"):
            _n = f"{_src}2{_dst}_{_mode}"
            globals()[_n] = _convert_fn(_n, _CONVERSIONS[_src], _CONVERSIONS[_dst], _mode)
for _src in ("int", "uint", "ll", "ull"):
    for _dst in ("float", "double"):
        _n = f"{_src}2{_dst}_rn"
        globals()[_n] = _convert_fn(_n, _CONVERSIONS[_src], _CONVERSIONS[_dst], "rn")
double2float_rn = _convert_fn("double2float_rn", irt.f64, irt.f32, "rn")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"libdevice.{name} is not provided by naiad (see "
                         f"naiad.language.extra.libdevice for the functions that are)")

