"""IR-building semantics of the language: constants, casts, broadcasting and the operators.

All IR ops are strictly typed; this is where the frontend's implicit conversions become explicit
``constant``/``cast``/``splat``/``broadcast``/``expand_dims`` ops. Operands are ``tensor``s or
weak Python scalars (int, float, bool). Every user mistake raises ``CompilationError`` without a
location; the code generator adds the source position.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompilationError
from ..ir import types as irt
from . import promotion
from .core import tensor, unwrap

_NUMBER = (int, float, bool)
MAX_NUMEL = 1 << 20


def is_number(x) -> bool:
    return isinstance(x, _NUMBER)


def describe(x) -> str:
    """Short description of a value for error messages."""
    if isinstance(x, tensor):
        return str(x.type)
    return f"{type(x).__name__} {x!r}"


def validate_shape(shape, what: str = "tensor") -> tuple[int, ...]:
    """Block shapes are powers of two (each dimension), at most 2**20 elements."""
    numel = 1
    for d in shape:
        if d < 1 or d & (d - 1):
            raise CompilationError(f"{what} shape {list(shape)} has dimension {d}, which is not a "
                                   "power of two")
        numel *= d
    if numel > MAX_NUMEL:
        raise CompilationError(f"{what} shape {list(shape)} has {numel} elements; the maximum "
                               f"is {MAX_NUMEL}")
    return tuple(shape)


#: ops that move or convert float8 values without computing in float8 (any other op on float8
#: operands is refused; see Semantic.op)
_FLOAT8_OPS = frozenset({
    "constant", "splat", "broadcast", "expand_dims", "reshape", "trans", "join", "split",
    "gather", "load", "store", "select", "cast", "bitcast", "reduce", "scan", "for", "while",
    "if", "yield", "condition", "return", "call", "print", "hint"})


def _is_fp8(t) -> bool:
    s = t.scalar
    return isinstance(s, irt.ScalarType) and s.is_fp8


def _fp8_of(result_type, operands):
    for t in [result_type] + [o.type for o in operands]:
        if _is_fp8(t):
            return t.scalar
    return None


class Semantic:
    """Builds typed IR for the language's operations at the builder's insertion point.

    ``codegen`` is the frontend's code generator; reductions use it to inline combine functions.
    """

    def __init__(self, builder, codegen=None):
        self.builder = builder
        self.codegen = codegen

    # -- creation ------------------------------------------------------------------------------
    def op(self, name, operands, result_type, **attrs) -> tensor:
        if name not in _FLOAT8_OPS and (_is_fp8(result_type) or any(_is_fp8(o.type)
                                                                    for o in operands)):
            raise CompilationError(
                f"arithmetic on {_fp8_of(result_type, operands)} values is not supported (float8 "
                "formats are for storage and conversion): convert with .to(tl.float16) or "
                ".to(tl.float32) first")
        return tensor(self.builder.op1(name, [o.handle for o in operands], result_type, **attrs))

    def constant(self, value, t: irt.Type) -> tensor:
        """A constant of scalar or tensor type ``t`` (value given in Python terms)."""
        elem = t.scalar
        if elem.is_float and elem.is_fp8:  # built wide, then one rounding by the float8 rules
            with np.errstate(over="ignore"):
                exact_in_f32 = float(np.float32(value)) == float(value) or value != value
            wide = self.constant(value, irt.with_element(t, irt.f32 if exact_in_f32 else irt.f64))
            return self.cast(wide, elem)
        if elem.is_float:
            value = float(value)
        elif elem == irt.i1:
            value = bool(value)
        else:
            value = int(value)
            promotion.check_scalar_fits(value, elem)
        return tensor(self.builder.constant(value, t))

    def to_tensor(self, x, like: irt.ScalarType | None = None) -> tensor:
        """A tensor for ``x``; Python numbers become constants of their default type (or of
        ``like``)."""
        x = unwrap(x)
        if isinstance(x, tensor):
            return x
        if is_number(x):
            return self.constant(x, like or promotion.python_scalar_type(x))
        raise CompilationError(f"expected a tensor or a number, got {describe(x)}")

    # -- shapes ---------------------------------------------------------------------------------
    def splat(self, x: tensor, shape) -> tensor:
        return self.op("splat", [x], irt.tensor(shape, x.type))

    def expand_dims(self, x: tensor, axis: int) -> tensor:
        shape = list(x.shape)
        shape.insert(axis, 1)
        if not x.is_block():
            return self.splat(x, shape)
        return self.op("expand_dims", [x], irt.tensor(shape, x.type.scalar), axis=axis)

    def broadcast_to(self, x: tensor, shape) -> tensor:
        """``x`` stretched to ``shape`` (numpy rules; leading dims added as needed)."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not x.is_block():
            return self.splat(x, shape) if shape else x
        if len(x.shape) > len(shape):
            raise CompilationError(f"cannot broadcast a value of shape {list(x.shape)} to the "
                                   f"smaller rank shape {list(shape)}")
        while len(x.shape) < len(shape):
            x = self.expand_dims(x, 0)
        for have, want in zip(x.shape, shape):
            if have != want and have != 1:
                raise CompilationError(f"cannot broadcast shape {list(x.shape)} to "
                                       f"{list(shape)}")
        if x.shape == shape:
            return x
        return self.op("broadcast", [x], irt.tensor(shape, x.type.scalar))

    @staticmethod
    def broadcast_shapes(a, b) -> tuple[int, ...]:
        a, b = tuple(a), tuple(b)
        rank = max(len(a), len(b))
        a = (1,) * (rank - len(a)) + a
        b = (1,) * (rank - len(b)) + b
        out = []
        for x, y in zip(a, b):
            if x != y and x != 1 and y != 1:
                raise CompilationError(
                    f"shapes {list(a)} and {list(b)} are incompatible for broadcasting "
                    f"(dimension sizes {x} and {y})")
            out.append(max(x, y))
        return tuple(out)

    def broadcast_all(self, *xs: tensor) -> list[tensor]:
        shape: tuple[int, ...] = ()
        for x in xs:
            shape = self.broadcast_shapes(shape, x.shape)
        return [self.broadcast_to(x, shape) for x in xs]

    # -- conversions --------------------------------------------------------------------------
    def cast(self, x: tensor, dst) -> tensor:
        """Value conversion of ``x`` to scalar/pointer type ``dst`` (IR type), shape kept."""
        src = x.type.scalar
        if src == dst:
            return x
        rt = irt.with_element(x.type, dst)
        if dst == irt.i1 and not src.is_pointer:
            zero = self.constant(0, x.type)
            return self.op("cmp", [x, zero], rt, pred="ne")
        if src.is_pointer and dst.is_pointer:
            return self.op("bitcast", [x], rt)
        if src.is_pointer or dst.is_pointer:
            other = dst if src.is_pointer else src
            if not (other.is_int and other.bitwidth == 64):
                raise CompilationError(f"cannot cast between {src} and {dst}: pointers convert "
                                       "only to and from 64-bit integers")
        return self.op("cast", [x], rt)

    def bitcast(self, x: tensor, dst) -> tensor:
        src = x.type.scalar
        if src == dst:
            return x
        if src.bitwidth != dst.bitwidth:
            raise CompilationError(f"cannot bitcast {src} ({src.bitwidth} bits) to {dst} "
                                   f"({dst.bitwidth} bits): the widths differ")
        return self.op("bitcast", [x], irt.with_element(x.type, dst))

    def to_bool(self, x) -> tensor:
        x = self.to_tensor(x)
        return self.cast(x, irt.i1)

    # -- typing of binary operations ---------------------------------------------------------
    def promote(self, a, b, *, div_or_mod=False, allow_ptr=False):
        """Bring ``a`` and ``b`` to one type and shape; returns two tensors."""
        a, b = unwrap(a), unwrap(b)
        for x in (a, b):
            if not isinstance(x, tensor) and not is_number(x):
                raise CompilationError(f"unsupported operand {describe(x)}")
        a_weak, b_weak = not isinstance(a, tensor), not isinstance(b, tensor)
        ta = a.type.scalar if not a_weak else promotion.python_scalar_type(a)
        tb = b.type.scalar if not b_weak else promotion.python_scalar_type(b)
        if ta.is_pointer or tb.is_pointer:
            if not allow_ptr:
                raise CompilationError(f"this operation does not apply to pointers "
                                       f"({ta}, {tb})")
            if ta != tb:
                raise CompilationError(f"incompatible types {ta} and {tb}")
            ct = ta
        else:
            ct = promotion.computation_type(ta, a_weak, tb, b_weak, div_or_mod)
        shape = self.broadcast_shapes(a.shape if not a_weak else (),
                                      b.shape if not b_weak else ())
        return self.conform(a, ct, shape), self.conform(b, ct, shape)

    def conform(self, x, t: irt.ScalarType, shape) -> tensor:
        if not isinstance(x, tensor):
            promotion.check_scalar_fits(x, t)
            return self.constant(x, irt.tensor(shape, t) if shape else t)
        return self.broadcast_to(self.cast(x, t), shape)

    # -- operators ------------------------------------------------------------------------------
    def binary(self, opname: str, a, b) -> tensor:
        """Python operator ``opname`` (add sub mul truediv floordiv mod and or xor lshift rshift)
        applied with Triton's semantics."""
        a, b = unwrap(a), unwrap(b)
        if opname in ("add", "sub") and self._is_ptr(a) or opname == "add" and self._is_ptr(b):
            return self._pointer_arith(opname, a, b)
        if opname == "sub" and self._is_ptr(b):
            raise CompilationError("cannot subtract a pointer from a number")
        if opname in ("add", "sub", "mul"):
            x, y = self.promote(a, b)
            return self.op(opname, [x, y], x.type)
        if opname == "truediv":
            return self.true_divide(a, b)
        if opname == "floordiv":
            x, y = self.promote(a, b, div_or_mod=True)
            if not x.type.scalar.is_int:
                raise CompilationError(
                    f"// is defined on integers only (Triton semantics), got {x.type.scalar}; "
                    "use tl.floor(a / b) for floats")
            return self.op("div", [x, y], x.type)
        if opname == "mod":
            x, y = self.promote(a, b, div_or_mod=True)
            return self.op("rem", [x, y], x.type)
        if opname in ("and", "or", "xor", "lshift", "rshift"):
            return self._bitwise(opname, a, b)
        raise CompilationError(f"unsupported operator {opname}")

    def _is_ptr(self, x) -> bool:
        return isinstance(x, tensor) and x.type.scalar.is_pointer

    def _pointer_arith(self, opname, a, b) -> tensor:
        ptr, off = (a, b) if self._is_ptr(a) else (b, a)
        if self._is_ptr(off):
            raise CompilationError(f"cannot {opname} two pointers ({ptr.type}, {off.type})")
        off = self.to_tensor(off)
        if not off.type.scalar.is_int:
            raise CompilationError(f"pointer offsets must be integers, got {off.type}")
        if opname == "sub":
            off = self.op("neg", [off], off.type)
        ptr, off = self.broadcast_all(ptr, off)
        return self.op("addptr", [ptr, off], ptr.type)

    def true_divide(self, a, b, ieee_rounding: bool = False) -> tensor:
        """``a / b`` in floating point (integers convert to float32 first). As in Triton, the
        quotient may be a backend's fast approximation (attr ``approx``, docs/language.md) unless
        ``ieee_rounding`` asks for the correctly rounded one (``tl.div_rn``)."""
        x, y = self.promote(unwrap(a), unwrap(b), div_or_mod=True)
        if x.type.scalar.is_int:
            x, y = self.cast(x, irt.f32), self.cast(y, irt.f32)
        attrs = {} if ieee_rounding else {"approx": True}
        return self.op("div", [x, y], x.type, **attrs)

    def _bitwise(self, opname, a, b) -> tensor:
        x, y = self.promote(a, b)
        t = x.type.scalar
        if not t.is_int:
            symbol = {"and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}[opname]
            raise CompilationError(f"invalid operands of type {t}: bitwise operator {symbol} "
                                   f"needs integer operands, got {describe(a)} and "
                                   f"{describe(b)}")
        left = a.type.scalar if isinstance(a, tensor) else None
        if opname == "rshift" and t.is_unsigned and left is not None and left.is_signed \
                and not left.is_bool:
            return self._arithmetic_shr(x, y)
        irname = {"lshift": "shl", "rshift": "shr"}.get(opname, opname)
        return self.op(irname, [x, y], x.type)

    def _arithmetic_shr(self, x: tensor, y: tensor) -> tensor:
        """``>>`` shifts by the LEFT operand's own signedness (Triton's rule), so a signed value
        promoted to an unsigned type (``i32 >> u32``) still shifts arithmetically: done on the
        same bits viewed as signed, the result keeping the promoted unsigned type."""
        t = x.type.scalar
        signed = irt.ScalarType(f"i{t.bitwidth}")
        xs, ys = self.bitcast(x, signed), self.bitcast(y, signed)
        return self.bitcast(self.op("shr", [xs, ys], xs.type), t)

    def compare(self, pred: str, a, b) -> tensor:
        """``pred`` in eq ne lt le gt ge; the result is i1 of the common shape (float8 values
        compare exactly, widened to float32)."""
        x, y = self.promote(a, b, allow_ptr=True)
        if _is_fp8(x.type):
            x, y = self.cast(x, irt.f32), self.cast(y, irt.f32)
        return self.op("cmp", [x, y], irt.with_element(x.type, irt.i1), pred=pred)

    def unary(self, opname: str, a) -> tensor:
        """``neg``, ``pos``, ``invert`` (``~``) or ``not`` (logical)."""
        x = self.to_tensor(a)
        t = x.type.scalar
        if opname == "pos":
            return x
        if t.is_pointer:
            raise CompilationError(f"unary operator {opname} does not apply to pointers")
        if opname == "neg":
            if t == irt.i1:
                raise CompilationError("cannot negate a boolean; use `not` or `~`")
            return self.op("neg", [x], x.type)
        if opname == "invert":
            if not t.is_int:
                raise CompilationError(f"bitwise operator ~ needs an integer operand, got {t}")
            return self.op("not", [x], x.type)
        if opname == "not":
            return self.op("not", [self.to_bool(x)], irt.with_element(x.type, irt.i1))
        raise CompilationError(f"unsupported unary operator {opname}")

    def logical(self, opname: str, a, b) -> tensor:
        """``and``/``or`` of Python's boolean operators on run-time values (both sides
        evaluated)."""
        x, y = self.to_bool(a), self.to_bool(b)
        x, y = self.broadcast_all(x, y)
        return self.op(opname, [x, y], x.type)

    # -- helpers used by several builtins -----------------------------------------------------
    def full(self, shape, value, t: irt.ScalarType) -> tensor:
        shape = tuple(shape)
        value = unwrap(value)
        if isinstance(value, tensor):
            if value.is_block():
                raise CompilationError(f"fill value must be a scalar, got {value.type}")
            v = self.cast(value, t)
            return self.splat(v, shape) if shape else v
        if not is_number(value):
            raise CompilationError(f"fill value must be a number, got {describe(value)}")
        return self.constant(value, irt.tensor(shape, t) if shape else t)

    def select(self, cond, a, b) -> tensor:
        """``where(cond, a, b)`` with promotion of a/b and broadcasting of all three."""
        c = self.to_bool(cond)
        x, y = self.promote(a, b, allow_ptr=True)
        c, x, y = self.broadcast_all(c, x, y)
        return self.op("select", [c, x, y], x.type)
