"""Elementwise math: selection, min/max/clamp, the float functions, fma, umulhi and cdiv."""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from ..utils import cdiv as _host_cdiv
from .core import PropagateNan, builtin, tensor, tensor_member, unwrap
from .semantics import is_number


@builtin
def where(condition, x, y, _semantic=None):
    """``x`` where ``condition`` is true, else ``y`` (promoted to one type, broadcast)."""
    return _semantic.select(condition, x, y)


def _propagate_nan(value) -> bool:
    value = unwrap(value)
    if value in (PropagateNan.NONE, None, False):
        return False
    if value in (PropagateNan.ALL, True):
        return True
    raise CompilationError(f"propagate_nan must be tl.PropagateNan.NONE or ALL, got {value!r}")


def _minmax(s, name, x, y, propagate_nan):
    a, b = s.promote(x, y)
    attrs = {"propagate_nan": True} if _propagate_nan(propagate_nan) and a.type.scalar.is_float \
        else {}
    return s.op(name, [a, b], a.type, **attrs)


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise maximum (NaN gives the other operand unless propagate_nan=ALL)."""
    return _minmax(_semantic, "max", x, y, propagate_nan)


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise minimum (NaN gives the other operand unless propagate_nan=ALL)."""
    return _minmax(_semantic, "min", x, y, propagate_nan)


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE, _semantic=None):
    """``minimum(maximum(x, min), max)``."""
    s = _semantic
    lo = _minmax(s, "max", x, min, propagate_nan)
    return _minmax(s, "min", lo, max, propagate_nan)


#: Triton's names for dtypes, as its error messages spell them
_TRITON_NAMES = {"i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                 "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
                 "f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64"}
_FP32_FP64 = ("fp32", "fp64")


def _check_dtype(x, name: str, allowed: tuple[str, ...]) -> None:
    """Triton's (libdevice's) rule for math functions: tensor operands must have one of the
    ``allowed`` dtypes exactly; f16/bf16 are refused, not upcast (cast explicitly)."""
    if not isinstance(x, tensor) or x.type.scalar.is_pointer:
        if isinstance(x, tensor):
            raise CompilationError(f"tl.{name} does not apply to pointers")
        return
    got = _TRITON_NAMES.get(x.type.scalar.name, x.type.scalar.name)
    if got not in allowed:
        hint = "; convert it first with .to(tl.float32)" if "fp32" in allowed else ""
        raise CompilationError(f"tl.{name}: Expected dtype {list(allowed)} but got {got}{hint}")


def _float_operand(s, x, name, allowed=_FP32_FP64):
    _check_dtype(unwrap(x), name, allowed)
    return s.to_tensor(x)


def _unary_math(name: str, doc: str, approx: bool = False):
    """``tl.<name>``; ``approx`` marks the op as Triton's fast version where a backend has one
    (attr ``approx``: ``tl.exp`` on NVIDIA, docs/language.md); libdevice asks for the accurate
    op."""
    attrs = {"approx": True} if approx else {}

    def fn(x, _semantic=None):
        x = _float_operand(_semantic, x, name)
        return _semantic.op(name, [x], x.type, **attrs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return tensor_member()(builtin(fn))


exp = _unary_math("exp", "e ** x (Triton's fast exp where a backend has one)", approx=True)
exp2 = _unary_math("exp2", "2 ** x")
log = _unary_math("log", "natural logarithm")
log2 = _unary_math("log2", "base-2 logarithm")
sqrt = _unary_math("sqrt", "square root")
rsqrt = _unary_math("rsqrt", "1 / sqrt(x)")
sin = _unary_math("sin", "sine")
cos = _unary_math("cos", "cosine")
erf = _unary_math("erf", "error function")
floor = _unary_math("floor", "round toward -inf")
ceil = _unary_math("ceil", "round toward +inf")


@tensor_member()
@builtin
def sqrt_rn(x, _semantic=None):
    """Square root correctly rounded on every backend (``tl.sqrt`` may be a backend's fast
    approximation, as Triton documents it); float32 only, as in Triton."""
    x = _float_operand(_semantic, x, "sqrt_rn", ("fp32",))
    return _semantic.op("sqrt_rn", [x], x.type)


@tensor_member()
@builtin
def abs(x, _semantic=None):
    """Absolute value (integers and floats; unsigned values are returned unchanged)."""
    x = _semantic.to_tensor(x)
    t = x.type.scalar
    if t.is_pointer:
        raise CompilationError("tl.abs does not apply to pointers")
    if t.is_unsigned or t == irt.i1:
        return x
    if t.is_fp8:
        return _float8_abs(_semantic, x)
    return _semantic.op("abs", [x], x.type)


def _float8_abs(s, x):
    """Clear the sign bit; in the fnuz formats 0x80 is the NaN and stays (no -0 there)."""
    from ..ir.float8 import FORMATS

    t = x.type.scalar
    bits = s.bitcast(x, irt.u8)
    cleared = s.binary("and", bits, 0x7F)
    if FORMATS[t.name].specials == "fnuz":
        cleared = s.select(s.compare("eq", bits, 0x80), bits, cleared)
    return s.bitcast(cleared, t)


@tensor_member()
@builtin
def sigmoid(x, _semantic=None):
    """``1 / (1 + exp(-x))`` built from the language's own operators; float32/float64 only,
    as in Triton (whose ``exp`` refuses f16/bf16)."""
    s = _semantic
    x = _float_operand(s, x, "sigmoid")
    e = exp(s.unary("neg", x), _semantic=s)
    return s.binary("truediv", 1.0, s.binary("add", 1.0, e))


@builtin
def fma(x, y, z, _semantic=None):
    """``x * y + z`` with a single rounding (floats)."""
    s = _semantic
    a, b = s.promote(x, y)
    c, a = s.promote(z, a)
    c, b = s.promote(c, b)
    a, b, c = s.broadcast_all(a, b, c)
    if not a.type.scalar.is_float:
        raise CompilationError(f"tl.fma needs floating-point operands, got {a.type}")
    return s.op("fma", [a, b, c], a.type)


@builtin
def fdiv(x, y, ieee_rounding=False, _semantic=None):
    """Float division ``x / y``: a backend's fast division unless ``ieee_rounding`` (then
    correctly rounded, as ``tl.div_rn``)."""
    return _semantic.true_divide(x, y, ieee_rounding=bool(unwrap(ieee_rounding)))


@builtin
def umulhi(x, y, _semantic=None):
    """High half of the full-width unsigned integer product; 32/64-bit integers, as in
    Triton."""
    s = _semantic
    for v in (unwrap(x), unwrap(y)):
        _check_dtype(v, "umulhi", ("int32", "int64", "uint32", "uint64"))
    a, b = s.promote(x, y)
    if not a.type.scalar.is_int or a.type.scalar == irt.i1:
        raise CompilationError(f"tl.umulhi needs integer operands, got {a.type}")
    return s.op("umulhi", [a, b], a.type)


@tensor_member()
@builtin
def cdiv(x, div, _semantic=None):
    """Ceiling division ``(x + div - 1) // div``; folded at compile time on constexprs."""
    x, div = unwrap(x), unwrap(div)
    if is_number(x) and is_number(div):
        return _host_cdiv(x, div)
    s = _semantic
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        raise CompilationError(f"tl.cdiv needs numbers or tensors, got {x!r} and {div!r}")
    return s.binary("floordiv", s.binary("sub", s.binary("add", x, div), 1), div)


@builtin
def div_rn(x, y, _semantic=None):
    """``x / y`` correctly rounded (to nearest even) on every backend; ``/`` may be a backend's
    fast division (docs/language.md)."""
    return _semantic.true_divide(x, y, ieee_rounding=True)
