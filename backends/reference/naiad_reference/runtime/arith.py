"""Elementwise semantics of the tile IR on numpy arrays, matching Triton's.

* Integers wrap at their type's width (numpy array arithmetic does), ``div`` rounds toward zero,
  ``rem`` takes the dividend's sign, ``shr`` is arithmetic for signed and logical for unsigned types.
* ``f16``/``bf16`` operations are computed in f32 and rounded to the type after every op, as GPUs
  do; math functions likewise.
* ``i1`` is a numpy bool: add/sub are xor, mul is and.
* Float ``max``/``min`` ignore a NaN operand unless ``propagate_nan`` is set (LLVM's maxnum/minnum).
Warnings (overflow, division by zero, invalid casts) are silenced by the caller: those are
undefined behaviour on a GPU, and the executor must not turn them into Python errors.
"""
from __future__ import annotations

import math

import numpy as np

from naiad.errors import NaiadError
from naiad.ir import ScalarType, float8

from .values import Ptr, narrow_base

F32 = np.dtype(np.float32)

#: fake address space for pointer <-> integer casts: buffer k lives at (k + 1) << ADDRESS_SHIFT
ADDRESS_SHIFT = 40


def is_lowp(t: ScalarType) -> bool:
    return t.name in ("f16", "bf16")


def _compute_dtype(t: ScalarType) -> np.dtype:
    return F32 if is_lowp(t) else t.numpy_dtype


def _lowp(fn, t: ScalarType):
    """Run ``fn`` on f32 copies of low-precision operands and round the result to ``t``."""
    if not is_lowp(t):
        return fn

    def wrapped(*xs):
        return fn(*(x.astype(F32) for x in xs)).astype(t.numpy_dtype)

    return wrapped


def _int_div(a, b, t: ScalarType):
    if t.is_unsigned:
        return np.floor_divide(a, b)
    # truncating division: remove the C remainder first, then the floor quotient is exact
    # (division by zero is undefined on a GPU; numpy gives 0 there)
    return np.floor_divide(a - np.fmod(a, b), b)


def _int_rem(a, b, t: ScalarType):
    return np.remainder(a, b) if t.is_unsigned else np.fmod(a, b)


def _bool_binary(name):
    return {"add": np.logical_xor, "sub": np.logical_xor, "mul": np.logical_and,
            "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
            "max": np.logical_or, "min": np.logical_and,
            "div": lambda a, b: a, "rem": lambda a, b: np.zeros_like(a)}.get(name)


def binary(name: str, a, b, t: ScalarType, attrs: dict):
    """Binary arithmetic ``name`` (add, sub, mul, div, rem, and, or, xor, shl, shr, max, min)."""
    if t.is_bool:
        fn = _bool_binary(name)
        if fn is None:
            raise NaiadError(f"reference executor: {name} is not defined on i1")
        return fn(a, b)
    if t.is_float:
        fn = _FLOAT_BINARY.get(name)
        if name in ("max", "min"):
            fn = (np.maximum if name == "max" else np.minimum) if attrs.get("propagate_nan") \
                else (np.fmax if name == "max" else np.fmin)
        if fn is None:
            raise NaiadError(f"reference executor: {name} is not defined on floats ({t})")
        return _lowp(fn, t)(a, b)
    if name == "div":
        return _int_div(a, b, t)
    if name == "rem":
        return _int_rem(a, b, t)
    if name in ("shl", "shr"):
        return _shift(name, a, b, t)
    return _INT_BINARY[name](a, b)


def _shift(name, a, b, t):
    # a shift by the width or more is poison in LLVM; numpy's answer (0 or sign fill) is fine
    fn = np.left_shift if name == "shl" else np.right_shift
    return fn(a, b.astype(a.dtype, copy=False))


_FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                 "rem": np.fmod}
_INT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and,
               "or": np.bitwise_or, "xor": np.bitwise_xor, "max": np.maximum,
               "min": np.minimum}


def neg(a, t: ScalarType):
    if t.is_bool:
        return a
    return _lowp(np.negative, t)(a)


def bitnot(a, t: ScalarType):
    if t.is_float:
        raise NaiadError(f"reference executor: not is not defined on floats ({t})")
    return np.invert(a)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def compare(pred: str, a, b, t):
    """``cmp``: ordered comparisons on floats except ``ne`` (unordered), as Triton emits."""
    if isinstance(a, Ptr) or isinstance(b, Ptr):
        a, b = pointer_address(a, t), pointer_address(b, t)
    elif is_lowp(t):
        a, b = a.astype(F32), b.astype(F32)
    try:
        return _CMP[pred](a, b)
    except KeyError:
        raise NaiadError(f"reference executor: unknown cmp predicate {pred!r}") from None


def _erf(x):
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt, "sqrt_rn": np.sqrt,
         "rsqrt": lambda x: np.reciprocal(np.sqrt(x)), "sin": np.sin, "cos": np.cos,
         "floor": np.floor, "ceil": np.ceil, "abs": np.abs}


def math_unary(name: str, a, t: ScalarType):
    """Math functions; integers allow ``abs`` (wrapping at the minimum), floor and ceil."""
    if t.is_int:
        if name == "abs":
            return a if t.is_unsigned or t.is_bool else np.abs(a)
        if name in ("floor", "ceil"):
            return a
        raise NaiadError(f"reference executor: {name} is not defined on integers ({t})")
    if name == "erf":
        return _erf(a).astype(t.numpy_dtype)
    return _lowp(_MATH[name], t)(a)


def fma(a, b, c, t: ScalarType):
    """a*b+c with one rounding: exact product in a wider type, then one rounding to ``t``."""
    wide = np.longdouble if t.name == "f64" else np.float64
    return (a.astype(wide) * b.astype(wide) + c.astype(wide)).astype(t.numpy_dtype)


def umulhi(a, b, t: ScalarType):
    """High half of the full-width UNSIGNED product of two integers of type ``t``: signed
    operands take part through their bit pattern, and the high half is reinterpreted back (as the
    GPU lowerings and Triton compute it: ``umulhi(-1, -1) == -2`` for i32)."""
    bits = t.bitwidth
    unsigned = np.dtype(f"u{bits // 8}") if bits >= 8 else np.dtype(np.uint8)
    ua, ub = a.view(unsigned) if bits >= 8 else a, b.view(unsigned) if bits >= 8 else b
    if bits <= 32:
        p = ua.astype(np.uint64) * ub.astype(np.uint64)
        return (p >> np.uint64(bits)).astype(unsigned).view(t.numpy_dtype)
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    al, ah, bl, bh = ua & m, ua >> s, ub & m, ub >> s
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> s) + (lh & m) + (hl & m)
    hi = hh + (lh >> s) + (hl >> s) + (mid >> s)
    return hi.view(t.numpy_dtype)


# -- casts ------------------------------------------------------------------------------------

def pointer_address(p, t) -> np.ndarray:
    """Fake, stable byte address of a pointer value (for ptr->int casts and pointer compares)."""
    if not isinstance(p, Ptr):
        return p.astype(np.int64)
    size = t.pointee.itemsize if hasattr(t, "pointee") else 1
    base = p.base_array() if isinstance(p.base, np.ndarray) else np.int64(p.base)
    return ((np.asarray(base, dtype=np.int64) + 1) << ADDRESS_SHIFT) + p.wide_off() * size


def address_to_pointer(addr: np.ndarray, pointee) -> Ptr:
    """Inverse of :func:`pointer_address` for integers that came from a pointer."""
    addr = addr.astype(np.int64)
    base = (addr >> ADDRESS_SHIFT) - 1
    byte = addr & ((1 << ADDRESS_SHIFT) - 1)
    size = pointee.itemsize
    if (byte % size).any():
        raise NaiadError(f"reference executor: integer -> ptr<{pointee}> cast of a misaligned "
                         "address")
    return Ptr(narrow_base(base), byte // size)


def _round_toward_zero(x: np.ndarray, src: ScalarType, dst: ScalarType) -> np.ndarray:
    """Float downcast rounding toward zero (Triton's ``fp_downcast_rounding="rtz"``): round to
    nearest, then step one ulp toward zero where that overshot the magnitude."""
    wide = x.astype(np.float64)
    r = (x.astype(F32) if src.name == "bf16" else x).astype(dst.numpy_dtype)
    over = np.abs(r.astype(np.float64)) > np.abs(wide)
    if not over.any():
        return r
    bits = r.view(np.dtype(f"u{dst.itemsize}"))
    return np.where(over, bits - bits.dtype.type(1), bits).view(dst.numpy_dtype)


def _saturating_float_to_int(a: np.ndarray, dst: ScalarType) -> np.ndarray:
    """Truncate toward zero, clamp to ``dst``'s range, NaN -> 0: what the GPU lowerings emit
    (``fptosi.sat``), rather than numpy's platform-dependent answer for out-of-range values."""
    t = np.trunc(a.astype(np.float64))
    info = np.iinfo(dst.numpy_dtype)
    above = t >= 2.0 ** (dst.bitwidth - (0 if dst.is_unsigned else 1))  # exact powers of two
    below = t < float(info.min)
    bad = above | below | np.isnan(t)
    out = np.where(bad, 0, t).astype(dst.numpy_dtype)
    if bad.any():
        out = np.where(above, info.max, np.where(below, info.min, out)).astype(dst.numpy_dtype)
    return out


def cast(a, src, dst, attrs: dict):
    """Value conversion between scalar/pointer element types (``src`` -> ``dst``)."""
    if src.is_pointer or dst.is_pointer:
        return _pointer_cast(a, src, dst)
    if src == dst:
        return a
    if src.is_fp8 or dst.is_fp8:
        return _float8_cast(a, src, dst, attrs)
    if dst.is_bool:
        if is_lowp(src):
            a = a.astype(F32)
        return a != 0
    if dst.is_float:
        if src.is_float and src.bitwidth > dst.bitwidth and \
                attrs.get("fp_downcast_rounding", attrs.get("rounding")) == "rtz":
            return _round_toward_zero(a, src, dst)
        if src.name == "bf16" or (dst.name == "bf16" and not src.is_float):
            a = a.astype(F32)
        return a.astype(dst.numpy_dtype)
    # dst is an integer
    if src.is_float:
        return _saturating_float_to_int(a, dst)
    return a.astype(dst.numpy_dtype)


def _float8_cast(a, src, dst, attrs: dict):
    """Conversions to and from the float8 formats by the rules of ``naiad.ir.float8``: a float8
    value widens exactly to f32; conversion to float8 rounds once, from the (exactly widened)
    source value."""
    if src.is_fp8:
        wide = float8.decode(np.asarray(a), float8.FORMATS[src.name])
        a, src = (wide if np.ndim(a) else wide[()]), ScalarType("f32")
        if dst == src:
            return a
        if not dst.is_fp8:
            return cast(a, src, dst, attrs)
    if attrs.get("fp_downcast_rounding", attrs.get("rounding")) == "rtz":
        raise NaiadError(f"reference executor: {src} -> {dst} rounds to nearest even only")
    if not src.is_float or is_lowp(src):
        a = np.asarray(a).astype(np.float64 if not src.is_float else np.float32)
    out = float8.to_float8(a, float8.FORMATS[dst.name])
    return out if np.ndim(a) else out[()]


def _pointer_cast(a, src, dst):
    if src.is_pointer and dst.is_pointer:
        old, new = src.pointee.itemsize, dst.pointee.itemsize
        if old == new:
            return a
        byte = a.wide_off() * old
        if (byte % new).any():
            raise NaiadError(f"reference executor: cast of {src} to {dst} gives a misaligned "
                             "pointer")
        return Ptr(a.base, byte // new)
    if src.is_pointer:
        return pointer_address(a, src).astype(dst.numpy_dtype)
    return address_to_pointer(a, dst.pointee)


def bitcast(a, src, dst):
    """Reinterpret the bits; pointers are cast like :func:`cast`."""
    if src.is_pointer or dst.is_pointer:
        return _pointer_cast(a, src, dst)
    if src.bitwidth != dst.bitwidth:
        raise NaiadError(f"reference executor: bitcast between {src} and {dst} of different "
                         "widths")
    return a.view(dst.numpy_dtype)
