"""The objects kernels manipulate: ``constexpr`` (compile-time values), ``tensor`` (a typed IR
value, scalar or block) and the ``@builtin`` protocol by which the frontend calls language
functions with its :class:`~naiad.language.semantics.Semantic` (``_semantic=``).
"""
from __future__ import annotations

import functools
import operator

from ..errors import CompilationError
from ..ir import types as irt
from .dtypes import dtype, dtype_of_ir


class constexpr:
    """A compile-time constant: ``BLOCK: tl.constexpr`` parameters and ``X = tl.constexpr(4)``
    globals. Inside a kernel the frontend works on the plain Python value (``.value``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return operator.index(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == unwrap(other)

    def __ne__(self, other):
        return self.value != unwrap(other)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)


def _binary_dunder(fn, reflected=False):
    def method(self, other):
        a, b = self.value, unwrap(other)
        return constexpr(fn(b, a) if reflected else fn(a, b))
    return method


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("and", operator.and_),
                   ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift),
                   ("rshift", operator.rshift)):
    setattr(constexpr, f"__{_name}__", _binary_dunder(_fn))
    setattr(constexpr, f"__r{_name}__", _binary_dunder(_fn, reflected=True))
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)):
    setattr(constexpr, f"__{_name}__", _binary_dunder(_fn))
constexpr.__neg__ = lambda self: constexpr(-self.value)
constexpr.__invert__ = lambda self: constexpr(~self.value)


def unwrap(value):
    """The plain Python value of a ``constexpr`` (other objects unchanged)."""
    return value.value if isinstance(value, constexpr) else value


def is_constexpr_annotation(annotation) -> bool:
    """True for ``tl.constexpr`` or its spelling in a string annotation."""
    if annotation is constexpr:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


class Shape(tuple):
    """A tensor's shape: a tuple that also compares equal to a list (``x.shape == [16, 32]``
    holds, as with Triton's list shapes) and concatenates with lists (``x.shape[:-1] + [k]``)."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, list):
            other = tuple(unwrap(v) for v in other)
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Shape(item) if isinstance(index, slice) else item

    def __add__(self, other):
        return Shape(tuple(self) + tuple(unwrap(v) for v in other))

    def __radd__(self, other):
        return Shape(tuple(unwrap(v) for v in other) + tuple(self))


class tensor:
    """A value of the kernel: an SSA value of scalar, pointer or block (tensor) type.

    Python scalars (``int``, ``float``, ``bool``) are *not* tensors: they stay compile-time
    constants and are weakly typed in arithmetic (Triton's rules).
    """

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    @property
    def type(self) -> irt.Type:
        return self.handle.type

    @property
    def dtype(self) -> dtype:
        return dtype_of_ir(self.handle.type.scalar)

    @property
    def shape(self) -> Shape:
        return Shape(self.handle.type.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def is_block(self) -> bool:
        return isinstance(self.handle.type, irt.TensorType)

    def __bool__(self):
        raise CompilationError("a tensor has no compile-time truth value; use it in a dynamic "
                               "`if`/`while` (scalars only) or `tl.where`")

    def __iter__(self):
        raise CompilationError("a tensor cannot be iterated over in a kernel")

    def __repr__(self) -> str:
        return f"tensor<{self.handle.type}>"


# -- the builtin protocol ----------------------------------------------------------------------

def builtin(fn):
    """Mark a language function: the frontend calls it with ``_semantic=`` (the code generator's
    Semantic). Calling it from plain Python is an error."""

    @functools.wraps(fn)
    def wrapper(*args, _semantic=None, **kwargs):
        if _semantic is None:
            raise CompilationError(f"tl.{fn.__name__} can only be used inside a @naiad.jit "
                                   "function")
        return fn(*args, _semantic=_semantic, **kwargs)

    wrapper.__naiad_builtin__ = True
    return wrapper


def is_builtin(fn) -> bool:
    return getattr(fn, "__naiad_builtin__", False) is True


def tensor_member(name: str | None = None):
    """Also expose a builtin as a tensor method (``x.sum(axis=0)`` == ``tl.sum(x, axis=0)``)."""

    def deco(fn):
        setattr(tensor, name or fn.__name__, fn)
        return fn
    return deco


class PropagateNan:
    """How ``tl.maximum``/``tl.minimum`` treat NaN: ``NONE`` returns the other operand, ``ALL``
    propagates NaN."""

    NONE = 0
    ALL = 0xFFFF


def as_int(value, what: str) -> int:
    """A compile-time integer (``constexpr`` unwrapped) or a clear error."""
    value = unwrap(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, tensor):
            raise CompilationError(f"{what} must be a compile-time constant (tl.constexpr), "
                                   f"got a run-time value of type {value.type}")
        raise CompilationError(f"{what} must be a compile-time integer, got {value!r}")
    return value


def as_bool(value, what: str) -> bool:
    value = unwrap(value)
    if isinstance(value, tensor):
        raise CompilationError(f"{what} must be a compile-time constant (tl.constexpr), got a "
                               f"run-time value of type {value.type}")
    return bool(value)


def as_dtype(value, what: str) -> dtype:
    value = unwrap(value)
    if not isinstance(value, dtype):
        raise CompilationError(f"{what} must be a dtype such as tl.float32, got {value!r}")
    return value


def as_shape(value, what: str = "shape") -> tuple[int, ...]:
    value = unwrap(value)
    if isinstance(value, (list, tuple)):
        return tuple(as_int(v, f"every dimension of {what}") for v in value)
    return (as_int(value, what),)
