"""Triton's type-promotion rules, as pure functions of IR scalar types (no IR is built here).

Kinds are ordered bool < integer < float. Two typed operands promote as follows:
  1. different kinds: the higher kind's type wins ((i32, f16) -> f16), except that bfloat16 with
     a bool or integer gives f32 ((i32, bf16) -> f32: Triton's ``computation_type_impl`` and
     compiled code do this, although its semantics page says bf16);
  2. same kind, different width: the wider wins ((f32, f16) -> f32, (i8, u32) -> u32);
  3. same width, different float types: both go to f16 ((f16, bf16) -> f16, "prefer float16",
     as Triton's semantics page documents);
  4. same width, different signedness: unsigned wins ((i32, u32) -> u32).
Division and modulo on 16-bit floats compute in f32 (as Triton does), and ``/``, ``//``, ``%``
refuse integers of different signedness.

A Python number (a *weak* scalar: literal or constexpr) whose kind is lower than or equal to the
other operand's keeps out of the promotion ((u8, int) -> u8, (f16, float) -> f16); otherwise it
is given the smallest type it fits among i32 < u32 < i64 < u64, or f32 < f64, and the usual
rules apply ((i16, 4.0) -> f32).
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt

BOOL, INT, FLOAT = 0, 1, 2

_F32_MIN_NORMAL = 2.0 ** -126
_F32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127


def kind(t: irt.ScalarType) -> int:
    if t.is_bool:
        return BOOL
    return FLOAT if t.is_float else INT


def integer_promote(a: irt.ScalarType, b: irt.ScalarType) -> irt.ScalarType:
    """C's usual arithmetic conversions on two integer types (i1 counts as signed)."""
    if a.is_unsigned == b.is_unsigned:
        return a if a.bitwidth > b.bitwidth else b
    unsigned, signed = (a, b) if a.is_unsigned else (b, a)
    return unsigned if unsigned.bitwidth >= signed.bitwidth else signed


def float_promote(a: irt.ScalarType, b: irt.ScalarType) -> irt.ScalarType:
    if a == b:
        return a
    if irt.bf16 in (a, b) and (a.is_fp8 or b.is_fp8):
        return irt.f32  # bf16 stays bf16 only with bf16 (Triton's code)
    if a.bitwidth != b.bitwidth:
        return a if a.bitwidth > b.bitwidth else b
    return irt.f16  # f16 with bf16, or two float8 formats: Triton documents "prefer float16"


def python_scalar_type(value) -> irt.ScalarType:
    """The IR type a Python number gets when it must become a typed value."""
    if isinstance(value, bool):
        return irt.i1
    if isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            return irt.i32
        if 2 ** 31 <= value < 2 ** 32:
            return irt.u32
        if -2 ** 63 <= value < 2 ** 63:
            return irt.i64
        if 2 ** 63 <= value < 2 ** 64:
            return irt.u64
        raise CompilationError(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        a = abs(value)
        if a == 0.0 or a != a or a == float("inf") or _F32_MIN_NORMAL <= a <= _F32_MAX:
            return irt.f32
        return irt.f64
    raise CompilationError(f"{value!r} is not a number")


def int_range(t: irt.ScalarType) -> tuple[int, int]:
    if t.is_bool:
        return 0, 1
    bits = t.bitwidth
    if t.is_unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def check_scalar_fits(value, t: irt.ScalarType) -> None:
    """A weak Python scalar taking type ``t`` must be representable in it."""
    if isinstance(value, bool) or not isinstance(value, int) or not t.is_int:
        return
    if t.is_unsigned and value < 0:
        raise CompilationError(f"cannot combine the negative constant {value} with an unsigned "
                               f"{t} value; cast one of them explicitly")
    lo, hi = int_range(t)
    if not lo <= value <= hi:
        raise CompilationError(f"constant {value} is out of range for type {t} "
                               f"[{lo}, {hi}]")


def _unsigned_for_division(t: irt.ScalarType) -> bool:
    """Signedness in the ``/ // %`` check: Triton's int1 is unsigned there (``i1 // i32`` is
    refused, ``i1 // u8`` is not)."""
    return t.is_unsigned or t.is_bool


def computation_type(a: irt.ScalarType, a_weak: bool, b: irt.ScalarType, b_weak: bool,
                     div_or_mod: bool = False) -> irt.ScalarType:
    """The type both operands of an arithmetic/comparison op are converted to.

    ``a_weak``/``b_weak`` say the operand is a Python number whose type came from
    :func:`python_scalar_type`.
    """
    if a_weak != b_weak:
        weak, strong = (a, b) if a_weak else (b, a)
        if kind(weak) <= kind(strong):
            if div_or_mod and (strong in (irt.f16, irt.bf16) or strong.is_fp8):
                return irt.f32
            return strong
    ka, kb = kind(a), kind(b)
    if div_or_mod and FLOAT not in (ka, kb) \
            and _unsigned_for_division(a) != _unsigned_for_division(b):
        raise CompilationError(
            f"Cannot use /, // or % with {a} and {b} because they have different "
            "signedness (the result would rarely be useful); cast them to one signedness")
    if ka != kb:
        result = a if ka > kb else b
        if result == irt.bf16:  # bf16 stays bf16 only with bf16 (Triton's code, not its docs)
            result = irt.f32
        if result.is_fp8 and not div_or_mod:   # Triton: a TypeError, no common type
            raise CompilationError(f"unexpected type {a} and {b}: a float8 value does not "
                                   "combine with integers; convert one of them with .to()")
    elif ka == FLOAT:
        result = float_promote(a, b)
    else:
        result = integer_promote(a, b)
    if div_or_mod and (result in (irt.f16, irt.bf16) or result.is_fp8):
        return irt.f32
    return result
