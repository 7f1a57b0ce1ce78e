"""Exact evaluation of elementwise ops on compile-time constants, for constant folding.

The rules are the tile IR's (see :mod:`naiad.ir.ops`): integers wrap around at their type's width;
``div`` rounds toward zero and ``rem`` takes the dividend's sign; ``shr`` is arithmetic on signed
and logical on unsigned types; floats round to nearest-even in their own format. ``i1`` values are
Python bools. Every function returns ``None`` when the result is not a single well-defined value
(integer division by zero, ``INT_MIN / -1``, a shift by the width or more): those ops are left
for the target to evaluate. A float-to-int cast saturates (NaN gives 0), as on every backend.

``umulhi`` gives the high half of the full-width product of the operands' bit patterns taken as
unsigned, reinterpreted in the type (as Triton and every naiad backend compute it:
``umulhi(-1, -1) == -2`` for i32).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..ir.types import ScalarType, Type

#: numpy results may overflow to inf or produce NaN; those are the IEEE answers we want.
_QUIET = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")


# -- normalising constants ----------------------------------------------------------------------
def int_bounds(t: ScalarType) -> tuple[int, int]:
    """Smallest and largest value of an integer type (i1 is {0, 1})."""
    bw = t.bitwidth
    if t.is_bool:
        return 0, 1
    if t.is_signed:
        return -(1 << (bw - 1)), (1 << (bw - 1)) - 1
    return 0, (1 << bw) - 1


def wrap_int(v: int, t: ScalarType):
    """``v`` reduced to ``t``'s range by two's-complement wrap-around (i1 gives a bool)."""
    v = int(v)
    if t.is_bool:
        return bool(v & 1)
    bw = t.bitwidth
    v &= (1 << bw) - 1
    if t.is_signed and v >> (bw - 1):
        v -= 1 << bw
    return v


def round_float(x, t: ScalarType) -> float:
    """``x`` (a float, int or Fraction) rounded once, to nearest-even, to float type ``t``."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x) or x == 0.0):
        return x
    if t.name == "f64":
        return _fraction_to_f64(Fraction(x))
    frac = Fraction(x)
    if t.name == "bf16":
        # ml_dtypes converts f32 -> bf16 with one correct rounding; get to f32 by round-to-odd,
        # which keeps the second rounding exact (24 >= 8 + 2 bits).
        mid = _round_to_odd(frac, np.float32)
    else:
        # numpy converts f64 -> f16/f32 with one correct rounding (53 >= 24 + 2 bits).
        mid = _round_to_odd(frac, np.float64)
    with np.errstate(**_QUIET):
        return float(np.array(mid).astype(t.numpy_dtype))


def _fraction_to_f64(frac: Fraction) -> float:
    try:
        return float(frac)  # correctly rounded by Python
    except OverflowError:
        return math.inf if frac > 0 else -math.inf


def _round_to_odd(frac: Fraction, ftype):
    """The ``ftype`` value nearest to ``frac`` by round-to-odd (exact values stay exact)."""
    near = ftype(_fraction_to_f64(frac))
    if np.isinf(near) or Fraction(float(near)) == frac:
        return near
    if Fraction(float(near)) < frac:
        lo, hi = near, np.nextafter(near, ftype(np.inf))
    else:
        lo, hi = np.nextafter(near, ftype(-np.inf)), near
    bits_type = np.uint32 if ftype is np.float32 else np.uint64
    return lo if int(np.array(lo).view(bits_type)) & 1 else hi


def normalize(value, t: Type):
    """A constant attribute value as this module computes with it: wrapped int, bool, or float
    rounded to ``t``. Returns None for pointer types or unusable values."""
    st = t.scalar
    if not isinstance(st, ScalarType):
        return None
    if isinstance(value, (bool, int, np.integer)) and st.is_int:
        return wrap_int(int(value), st)
    if isinstance(value, (bool, int, float, np.integer, np.floating)) and st.is_float:
        return round_float(float(value) if not isinstance(value, (int, np.integer)) else int(value), st)
    if isinstance(value, (float, np.floating)) and st.is_int and float(value).is_integer():
        return wrap_int(int(value), st)
    return None


# -- evaluation -------------------------------------------------------------------------------
def _np(value, t: ScalarType):
    return np.array(value, dtype=t.numpy_dtype)


def _float_binary(name: str, a: float, b: float, t: ScalarType, attrs) -> float | None:
    x, y = _np(a, t), _np(b, t)
    with np.errstate(**_QUIET):
        if name == "add":
            r = x + y
        elif name == "sub":
            r = x - y
        elif name == "mul":
            r = x * y
        elif name == "div":
            r = x / y
        elif name == "rem":
            r = np.fmod(x, y)
        elif name in ("max", "min"):
            return _float_minmax(name == "max", float(a), float(b),
                                 bool(attrs.get("propagate_nan", False)))
        else:
            return None
    return float(r.astype(t.numpy_dtype))


def _float_minmax(is_max: bool, a: float, b: float, propagate_nan: bool) -> float:
    """IEEE 754-2019 maximum/maximumNumber (and min): NaN propagates only when asked, otherwise
    the other operand wins; -0.0 orders below +0.0."""
    if math.isnan(a) or math.isnan(b):
        if propagate_nan or (math.isnan(a) and math.isnan(b)):
            return math.nan
        return b if math.isnan(a) else a
    if a == b == 0.0:
        a_neg = math.copysign(1.0, a) < 0
        b_neg = math.copysign(1.0, b) < 0
        neg = (a_neg and b_neg) if is_max else (a_neg or b_neg)
        return -0.0 if neg else 0.0
    return max(a, b) if is_max else min(a, b)


def _int_binary(name: str, a, b, t: ScalarType):
    lo, hi = int_bounds(t)
    a, b = int(a), int(b)
    bw = t.bitwidth
    if name == "add":
        return wrap_int(a + b, t)
    if name == "sub":
        return wrap_int(a - b, t)
    if name == "mul":
        return wrap_int(a * b, t)
    if name in ("div", "rem"):
        if b == 0 or (t.is_signed and not t.is_bool and a == lo and b == -1):
            return None
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return wrap_int(q if name == "div" else a - q * b, t)
    if name == "and":
        return wrap_int(a & b, t)
    if name == "or":
        return wrap_int(a | b, t)
    if name == "xor":
        return wrap_int(a ^ b, t)
    if name in ("shl", "shr"):
        if not 0 <= b < bw:
            return None
        if name == "shl":
            return wrap_int(a << b, t)
        return wrap_int(a >> b, t)  # a is in range: >> is arithmetic for signed, logical for unsigned
    if name == "max":
        return wrap_int(max(a, b), t)
    if name == "min":
        return wrap_int(min(a, b), t)
    if name == "umulhi":
        mask = (1 << bw) - 1
        return wrap_int(((a & mask) * (b & mask)) >> bw, t)  # unsigned product of the bits
    return None


def compare(pred: str, a, b) -> bool | None:
    """``a pred b``; float NaN compares unordered (only ``ne`` is true)."""
    if pred == "eq":
        return a == b
    if pred == "ne":
        return a != b
    if pred == "lt":
        return a < b
    if pred == "le":
        return a <= b
    if pred == "gt":
        return a > b
    if pred == "ge":
        return a >= b
    return None


def eval_binary(name: str, a, b, t: ScalarType, attrs=None):
    """Fold binary elementwise op ``name`` (operands and result of type ``t``; ``cmp`` gives i1)."""
    attrs = attrs or {}
    if name == "cmp":
        return compare(attrs.get("pred"), a, b)
    if t.is_float:
        return _float_binary(name, a, b, t, attrs)
    if t.is_int:
        return _int_binary(name, a, b, t)
    return None


_MATH_F64 = {
    "exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "erf": math.erf,
}


def eval_unary(name: str, a, t: ScalarType):
    """Fold unary elementwise op ``name`` on type ``t``."""
    if t.is_int:
        if name == "neg":
            return wrap_int(-int(a), t)
        if name == "not":
            return (not a) if t.is_bool else wrap_int(~int(a), t)
        if name == "abs":
            return wrap_int(abs(int(a)), t)
        return None
    if not t.is_float:
        return None
    x = float(a)
    if name == "neg":
        return -x
    if name == "abs":
        return abs(x)
    if name in ("floor", "ceil"):
        if math.isnan(x) or math.isinf(x):
            return x
        r = float(math.floor(x) if name == "floor" else math.ceil(x))
        return math.copysign(r, x) if r == 0 else r  # floor(-0.5) is -1; ceil(-0.5) is -0.0
    if name in ("sqrt", "sqrt_rn"):
        with np.errstate(**_QUIET):
            return float(np.sqrt(_np(x, t)).astype(t.numpy_dtype))  # correctly rounded
    if name == "rsqrt":
        with np.errstate(**_QUIET):
            return round_float(float(1.0 / np.sqrt(np.float64(x))), t)
    fn = _MATH_F64.get(name)
    if fn is None:
        return None
    # Transcendentals: evaluate in f64 and round to the type (targets may differ by an ulp).
    try:
        if name in ("log", "log2") and x <= 0:
            r = -math.inf if x == 0 else math.nan
        elif math.isnan(x):
            r = math.nan
        else:
            r = fn(x)
    except OverflowError:
        r = math.inf
    except ValueError:
        r = math.nan
    return round_float(r, t)


def eval_fma(a, b, c, t: ScalarType):
    """``a * b + c`` with a single rounding (ints wrap)."""
    if t.is_int:
        return wrap_int(int(a) * int(b) + int(c), t)
    vals = [float(v) for v in (a, b, c)]
    if any(math.isnan(v) or math.isinf(v) for v in vals):
        with np.errstate(**_QUIET):
            return float(_np(vals[0], t) * _np(vals[1], t) + _np(vals[2], t))
    exact = Fraction(vals[0]) * Fraction(vals[1]) + Fraction(vals[2])
    r = round_float(exact, t)
    if r == 0 and exact == 0:  # sign of an exact zero sum follows IEEE: -0 only if both are -0
        prod_neg = math.copysign(1, vals[0]) * math.copysign(1, vals[1]) < 0
        return -0.0 if prod_neg and math.copysign(1, vals[2]) < 0 else 0.0
    return r


def eval_cast(value, src: ScalarType, dst: ScalarType, rounding: str | None = None):
    """Value conversion ``src -> dst`` (float->int truncates; ->i1 means != 0). ``rounding``
    ``"rtz"`` makes a float downcast round toward zero (``fp_downcast_rounding``)."""
    if rounding == "rtz" and src.is_float and dst.is_float and dst.bitwidth < src.bitwidth:
        return _round_toward_zero(float(value), dst)
    if dst.is_bool:
        return value != 0
    if src.is_bool:
        value = int(value)
    if dst.is_int:
        if src.is_int:
            return wrap_int(int(value), dst)
        x = float(value)
        lo, hi = int_bounds(dst)
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        return min(max(math.trunc(x), lo), hi)  # saturating, as every backend
    if dst.is_float:
        if src.is_int:
            return round_float(int(value), dst)
        return round_float(float(value), dst)
    return None


def _round_toward_zero(x: float, t: ScalarType) -> float:
    """``x`` rounded toward zero to float type ``t``: nearest-even, then one ulp back toward
    zero where that overshot the magnitude (overflow gives the largest finite value)."""
    r = round_float(x, t)
    if math.isnan(x) or math.isinf(x) or abs(r) <= abs(x):
        return r
    bits = np.array(r, dtype=t.numpy_dtype).view(np.dtype(f"u{t.bitwidth // 8}"))
    return float((bits - bits.dtype.type(1)).view(t.numpy_dtype))


def eval_bitcast(value, src: ScalarType, dst: ScalarType):
    """Reinterpret the bits of ``value`` (same width) as ``dst``."""
    if src.bitwidth != dst.bitwidth or src.is_bool or dst.is_bool:
        return None
    arr = _np(value, src)
    out = arr.view(dst.numpy_dtype)
    return out.item() if dst.is_int else float(out)
