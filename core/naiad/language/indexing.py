"""Data-dependent indexing: ``tl.cat`` and ``tl.histogram``, built from the existing
primitives (so every backend runs them), and ``tl.gather``, the tile-IR op ``gather`` (the
GPU lowering reads the source from shared memory; a one-hot formulation would need
index x axis registers).

``histogram`` compares each value with every bin (a one-hot tensor one dimension larger) and
sums it away in int32, exactly; where the one-hot tensor would be large the input is split in
halves.
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_int, builtin, tensor, tensor_member, unwrap
from .creation import arange
from .ordering import _halves
from .reduction import sum as _sum
from .semantics import describe
from .shape import join, permute, reshape

#: largest one-hot intermediate (elements) before the work is split in halves (keeps a GPU
#: thread's share of it in registers)
ONE_HOT_LIMIT = 1 << 14


def _block(x, what: str) -> tensor:
    x = unwrap(x)
    if not isinstance(x, tensor) or not x.is_block():
        raise CompilationError(f"{what} needs a block tensor, got {describe(x)}")
    return x


def _axis(axis, rank: int, what: str) -> int:
    a = as_int(axis, f"{what}'s axis")
    if not -rank <= a < rank:
        raise CompilationError(f"{what} axis {a} must be < source rank ({rank})")
    return a % rank


@builtin
def cat(input, other, can_reorder=False, dim=0, _semantic=None):
    """``input`` and ``other`` (one shape) concatenated along ``dim``. The order is always
    kept, which ``can_reorder=True`` also allows."""
    s = _semantic
    a, b = _block(input, "tl.cat"), _block(other, "tl.cat")
    if a.shape != b.shape:
        raise CompilationError(f"tl.cat requires tensors of the same shape, got "
                               f"{list(a.shape)} and {list(b.shape)}")
    rank = len(a.shape)
    d = _axis(dim, rank, "tl.cat")
    joined = join(a, b, _semantic=s)           # [..., 2]
    order = list(range(rank))
    order.insert(d, rank)                     # the pair dim just before ``dim``
    shape = list(a.shape)
    shape[d] *= 2
    return reshape(permute(joined, order, _semantic=s), shape, _semantic=s)


def _positions(s, n: int, rank: int, axis: int) -> tensor:
    """``arange(0, n)`` laid along ``axis`` of a rank-``rank`` tensor (size 1 elsewhere)."""
    shape = [1] * rank
    shape[axis] = n
    return reshape(arange(0, n, _semantic=s), shape, _semantic=s)


@tensor_member()
@builtin
def gather(src, index, axis, _semantic=None):
    """``out[i][j] = src[index[i][j]][j]`` for ``axis=0`` (and likewise for other axes): the
    result has ``index``'s shape and ``src``'s dtype. ``index`` has ``src``'s rank and its
    sizes except along ``axis``; an index outside ``[0, src.shape[axis])`` gives 0."""
    s = _semantic
    src, index = _block(src, "tl.gather"), _block(index, "tl.gather")
    if not index.type.scalar.is_int or index.type.scalar == irt.i1:
        raise CompilationError(f"index must be an integer tensor, got {index.type}")
    if src.type.scalar.is_pointer:
        raise CompilationError(f"tl.gather does not gather pointers ({src.type}); gather "
                               "offsets and add them to the pointer instead")
    rank = len(src.shape)
    if len(index.shape) != rank:
        raise CompilationError(f"source and index tensors must have the same rank, got "
                               f"{list(src.shape)} and {list(index.shape)}")
    a = _axis(axis, rank, "gather")
    for d in range(rank):
        if d != a and index.shape[d] != src.shape[d]:
            raise CompilationError(f"index dim {d} must match the corresponding source dim "
                                   f"({index.shape[d]} != {src.shape[d]})")
    return s.op("gather", [src, index], irt.tensor(index.shape, src.type.scalar), axis=a)


def _count(s, x: tensor, num_bins: int, mask: tensor | None) -> tensor:
    n = x.shape[0]
    if n > 1 and n * num_bins > ONE_HOT_LIMIT:
        xs = reshape(x, [2, n // 2], _semantic=s)
        lo, hi, _ = _halves(s, xs, 0)
        mlo = mhi = None
        if mask is not None:
            mlo, mhi, _ = _halves(s, reshape(mask, [2, n // 2], _semantic=s), 0)
        return s.binary("add", _count(s, lo, num_bins, mlo), _count(s, hi, num_bins, mhi))
    hit = s.compare("eq", s.expand_dims(x, 1), _positions(s, num_bins, 2, 1))
    if mask is not None:
        hit = s.logical("and", hit, s.expand_dims(mask, 1))
    ones = s.cast(hit, irt.i32)
    return _sum(ones, 0, _semantic=s)


@tensor_member()
@builtin
def histogram(input, num_bins, mask=None, _semantic=None):
    """Counts (int32, ``num_bins`` of them) of the values 0, 1, ... of a 1-D integer tensor;
    values outside ``[0, num_bins)`` and elements where ``mask`` is false are not counted."""
    s = _semantic
    x = _block(input, "tl.histogram")
    if len(x.shape) != 1:
        raise CompilationError(f"histogram only supports 1D input, got {list(x.shape)}")
    if not x.type.scalar.is_int or x.type.scalar == irt.i1:
        raise CompilationError(f"histogram only supports integer input, but got {x.type}")
    bins = as_int(num_bins, "num_bins")
    m = unwrap(mask)
    if m is not None:
        m = s.to_tensor(m)
        if m.type.scalar != irt.i1:
            raise CompilationError(f"Mask must have boolean scalar type, got {m.type}")
        m = s.broadcast_to(m, x.shape)
    return _count(s, x, bins, m)
