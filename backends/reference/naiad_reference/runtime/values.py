"""How the executor represents tile-IR values while it runs a batch of programs.

Every value carries a leading *program axis*: a scalar of a batch of ``P`` programs is an array of
shape ``(P,)``, a ``tensor<64x32xf32>`` one of shape ``(P, 64, 32)``. A value that is the same in
every program (a constant, ``make_range``, a scalar argument) keeps a leading axis of length 1 and
numpy broadcasting stretches it when it meets a per-program value, so uniform values cost nothing.

Pointers are :class:`Ptr`: which argument buffer they point into plus an int64 element offset
array (in units of the pointee type) shaped like any other value.
"""
from __future__ import annotations

import numpy as np

#: base id of a pointer that points nowhere (an undefined value of a branch no program took)
NO_BUFFER = -1


class Ptr:
    """A pointer value: ``base`` (argument index, or an int array of them when lanes point into
    different buffers) and ``off`` (element offsets, leading program axis). Offsets are int64,
    except right after the first ``addptr`` onto an argument (``zero``: offsets known to be 0),
    which keeps the integer offset array as it is instead of widening a copy; any arithmetic on
    offsets widens to int64 first."""

    __slots__ = ("base", "off", "zero")

    def __init__(self, base, off: np.ndarray, zero: bool = False):
        self.base = base
        self.off = off
        self.zero = zero

    @property
    def shape(self):
        return self.off.shape

    @property
    def ndim(self):
        return self.off.ndim

    def map(self, fn) -> "Ptr":
        """Apply a shape function (reshape, transpose, broadcast, index) to every component."""
        base = self.base
        if isinstance(base, np.ndarray):
            base = fn(np.broadcast_to(base, self.off.shape))
        return Ptr(base, fn(self.off), self.zero)

    def wide_off(self) -> np.ndarray:
        """Offsets as int64 (for arithmetic on them)."""
        return self.off.astype(np.int64, copy=False)

    def base_array(self) -> np.ndarray:
        """The base ids as an int64 array shaped like ``off``."""
        if isinstance(self.base, np.ndarray):
            return np.broadcast_to(self.base, self.off.shape)
        return np.full(self.off.shape, self.base, dtype=np.int64)

    def __repr__(self) -> str:
        return f"Ptr(base={self.base!r}, off={self.off!r})"


def lead(x) -> int:
    """Length of the program axis of a value (1 for uniform values)."""
    return x.shape[0]


def align(x: np.ndarray, ndim: int) -> np.ndarray:
    """Reshape a leading-axis array to ``ndim`` dims by appending unit dims, so a per-program
    scalar (or mask) broadcasts against per-program tensors."""
    if x.ndim >= ndim:
        return x
    return x.reshape(x.shape + (1,) * (ndim - x.ndim))


def where(cond: np.ndarray, a, b):
    """Per-lane choice between two values (arrays or :class:`Ptr`); ``cond`` may be a per-program
    mask of shape ``(P,)`` or a full lane mask."""
    if isinstance(a, Ptr) or isinstance(b, Ptr):
        ndim = max(a.ndim, b.ndim)
        c = align(cond, ndim)
        off = np.where(c, a.off, b.off)
        if not isinstance(a.base, np.ndarray) and not isinstance(b.base, np.ndarray) \
                and a.base == b.base:
            return Ptr(a.base, off)
        base = np.where(c, a.base_array(), b.base_array())
        return Ptr(narrow_base(base), off)
    ndim = max(a.ndim, b.ndim)
    return np.where(align(cond, ndim), a, b)


def narrow_base(base: np.ndarray):
    """An int when every lane points into the same buffer (the fast, common case)."""
    if base.size and (base == base.flat[0]).all():
        return int(base.flat[0])
    return base


def merge(mask, new, old):
    """Loop/branch merge: ``new`` where the per-program ``mask`` holds, ``old`` elsewhere."""
    if mask is None:
        return new
    return where(mask, new, old)


def undefined(type_, numpy_dtype_of) -> object:
    """A placeholder of ``type_`` for a result no program computed (a branch nobody took)."""
    shape = (1,) + tuple(type_.shape)
    elem = type_.scalar
    if elem.is_pointer:
        return Ptr(NO_BUFFER, np.zeros(shape, dtype=np.int64))
    return np.zeros(shape, dtype=numpy_dtype_of(elem))
