"""Data-dependent indexing: ``tl.cat``, built from the existing primitives (so every backend
runs it), and the tile-IR ops ``gather`` and ``histogram``. Built from primitives, both would
grow with elements x positions (a one-hot compare per pair); as ops the GPU lowering reads
the gather source from shared memory and counts the histogram with shared-memory atomics,
code that grows only with the elements a thread holds.
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_int, builtin, tensor, tensor_member, unwrap
from .semantics import describe, validate_shape
from .shape import join, permute, reshape


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
    if bins < 1 or bins & (bins - 1):
        raise CompilationError(f"histogram's num_bins must be a power of two (the counts are a "
                               f"tensor of num_bins elements), got {bins}")
    validate_shape([bins], "histogram's result")
    m = unwrap(mask)
    operands = [x]
    if m is not None:
        m = s.to_tensor(m)
        if m.type.scalar != irt.i1:
            raise CompilationError(f"Mask must have boolean scalar type, got {m.type}")
        operands.append(s.broadcast_to(m, x.shape))
    return s.op("histogram", operands, irt.tensor([bins], irt.i32), num_bins=bins)
