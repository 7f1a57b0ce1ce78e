"""Reordering builtins built from the existing primitives, so every backend gets them without a
lowering of its own: ``tl.flip``, ``tl.sort`` and ``tl.topk``.

A dimension of size 2^m is viewed as a hypercube ``[2] * m`` (``reshape``); exchanging the two
halves along one of those size-2 dims is ``permute`` (the dim to the end) + ``split`` + ``join``.
Flipping reverses every index bit; sorting is a bitonic network of compare-exchanges between
indices that differ in one bit, each a ``where`` on the two halves.
"""
from __future__ import annotations

from ..errors import CompilationError
from .creation import arange
from .core import as_bool, as_int, builtin, tensor, tensor_member, unwrap
from .reduction import max as _max, min as _min
from .semantics import describe
from .shape import join, permute, reshape, split


def _block(x, what: str) -> tensor:
    x = unwrap(x)
    if not isinstance(x, tensor) or not x.is_block():
        raise CompilationError(f"{what} needs a block tensor, got {describe(x)}")
    return x


def _dim(dim, rank: int, what: str) -> int:
    """``dim`` normalised to [0, rank); None means the last dimension."""
    if unwrap(dim) is None:
        return rank - 1
    d = as_int(dim, f"{what}'s dim")
    if not -rank <= d < rank:
        raise CompilationError(f"{what}: dim must be None or in [-rank, rank) = "
                               f"[{-rank}, {rank}), got {d}")
    return d % rank


def _log2(n: int, what: str) -> int:
    if n <= 0 or n & (n - 1):
        raise CompilationError(f"{what} needs a power-of-two size, got {n}")
    return n.bit_length() - 1


def _halves(s, h: tensor, dim: int):
    """The two halves of ``h`` along its size-2 dimension ``dim`` (that dim removed), and the
    permutation that brought ``dim`` to the end."""
    order = [d for d in range(len(h.shape)) if d != dim] + [dim]
    lo, hi = split(permute(h, order, _semantic=s), _semantic=s)
    return lo, hi, order


def _unhalves(s, lo: tensor, hi: tensor, order) -> tensor:
    """Inverse of :func:`_halves`."""
    inverse = [order.index(d) for d in range(len(order))]
    return permute(join(lo, hi, _semantic=s), inverse, _semantic=s)


def _swap_halves(s, h: tensor, dim: int) -> tensor:
    lo, hi, order = _halves(s, h, dim)
    return _unhalves(s, hi, lo, order)


@tensor_member()
@builtin
def flip(x, dim=None, _semantic=None):
    """``x`` reversed along ``dim`` (the last dimension when None)."""
    s = _semantic
    x = _block(x, "tl.flip")
    rank = len(x.shape)
    d = _dim(dim, rank, "flip")
    steps = _log2(x.shape[d], "flip")
    if steps == 0:
        return x
    cube = list(x.shape[:d]) + [2] * steps + list(x.shape[d + 1:])
    h = reshape(x, cube, _semantic=s)
    for bit_dim in range(d, d + steps):
        h = _swap_halves(s, h, bit_dim)
    return reshape(h, x.shape, _semantic=s)


def _compare_exchange(s, h: tensor, dim: int, descending, direction_dim: int | None) -> tensor:
    """Order each pair of elements of ``h`` that differ only along the size-2 dim ``dim``:
    ascending (smaller first) unless ``descending``; where ``direction_dim`` is given, the
    pairs whose index along it is 1 take the opposite order."""
    lo, hi, order = _halves(s, h, dim)
    greater = s.compare("gt", lo, hi)
    less = s.compare("lt", lo, hi)
    swap = less if descending else greater
    if direction_dim is not None:
        # after _halves, dims before ``dim`` keep their position
        assert direction_dim < dim
        shape = [1] * len(lo.shape)
        shape[direction_dim] = 2
        odd = s.compare("ne", reshape(arange(0, 2, _semantic=s), shape, _semantic=s), 0)
        odd = s.broadcast_to(odd, lo.shape)
        swap = s.select(odd, greater if descending else less, swap)
    new_lo = s.select(swap, hi, lo)
    new_hi = s.select(swap, lo, hi)
    return _unhalves(s, new_lo, new_hi, order)


def _merge(s, h: tensor, lead: int, bits: int, stage: int, descending, final: bool) -> tensor:
    """One bitonic merge of blocks of 2^stage elements on a hypercube ``lead dims + [2]*bits``
    (bit b of the index is dim ``lead + bits - 1 - b``). Blocks whose bit ``stage`` is 1 go in
    the opposite order unless ``final`` (one order for all)."""
    direction = None if final else lead + bits - 1 - stage
    for bit in reversed(range(stage)):
        h = _compare_exchange(s, h, lead + bits - 1 - bit, descending, direction)
    return h


def _to_minor(s, x: tensor, d: int):
    order = [i for i in range(len(x.shape)) if i != d] + [d]
    return permute(x, order, _semantic=s), order


def _from_minor(s, x: tensor, order) -> tensor:
    return permute(x, [order.index(i) for i in range(len(order))], _semantic=s)


def _sort_minor(s, x: tensor, k: int | None, descending: bool) -> tensor:
    """Sort along the last dimension, keeping the first ``k`` (all when None)."""
    n = x.shape[-1]
    log_n = _log2(n, "sort")
    log_k = log_n if k is None else _log2(k, "topk's k")
    lead = list(x.shape[:-1])
    if log_k == 0:
        if log_n == 0:
            return x
        red = _max if descending else _min
        return red(x, len(lead), keep_dims=True, _semantic=s)
    h = reshape(x, lead + [2] * log_n, _semantic=s)
    base = len(lead)
    for stage in range(1, log_k + 1):
        h = _merge(s, h, base, log_n, stage, descending, final=stage == log_n)
    bits = log_n
    while bits > log_k:
        # keep the better element of each pair of adjacent k-blocks (one ascending, one
        # descending): a bitonic block holding the best k of the 2k
        lo, hi, _ = _halves(s, h, base + bits - 1 - log_k)
        better = s.compare("gt" if descending else "lt", hi, lo)
        h = s.select(better, hi, lo)  # dims keep their order, the removed one gone
        bits -= 1
        h = _merge(s, h, base, bits, log_k, descending, final=bits == log_k)
    return reshape(h, lead + [2 ** log_k], _semantic=s)


def _sort_impl(s, x, k, dim, descending, what):
    x = _block(x, what)
    d = _dim(dim, len(x.shape), what)
    descending = as_bool(descending, "descending")
    if k is not None:
        k = as_int(k, "k")
        if k <= 0:
            raise CompilationError("topk: k must be greater than 0")
        if k & (k - 1):
            raise CompilationError(f"topk: k must be a power of two, got {k}")
        if k > x.shape[d]:
            raise CompilationError(f"topk: k must not exceed the size of the selected "
                                   f"dimension ({k} > {x.shape[d]})")
    if d == len(x.shape) - 1:
        return _sort_minor(s, x, k, descending)
    y, order = _to_minor(s, x, d)
    return _from_minor(s, _sort_minor(s, y, k, descending), order)


@tensor_member()
@builtin
def sort(x, dim=None, descending=False, _semantic=None):
    """``x`` sorted along ``dim`` (the last dimension when None), ascending unless
    ``descending``. NaNs compare false, so they stay where the network leaves them (as in
    Triton)."""
    return _sort_impl(_semantic, x, None, dim, descending, "sort")


@tensor_member()
@builtin
def topk(x, k, dim=None, descending=True, _semantic=None):
    """The ``k`` largest (smallest unless ``descending``) elements along ``dim``, in sorted
    order; ``k`` a power of two no larger than the dimension."""
    if unwrap(k) is None:
        raise CompilationError("topk needs k")
    return _sort_impl(_semantic, x, k, dim, descending, "topk")
