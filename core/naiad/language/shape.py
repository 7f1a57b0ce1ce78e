"""Shape manipulation: reshape/view, trans/permute, broadcasting, expand_dims, join/split and
``x[None, :]`` indexing."""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_int, as_shape, builtin, tensor, tensor_member, unwrap
from .semantics import describe, validate_shape


def _tensor(x, what: str) -> tensor:
    x = unwrap(x)
    if not isinstance(x, tensor):
        raise CompilationError(f"{what} needs a tensor, got {describe(x)}")
    return x


def _dims(args) -> tuple[int, ...]:
    """``f(x, 2, 3)`` and ``f(x, (2, 3))`` both mean the dims (2, 3)."""
    if len(args) == 1 and isinstance(unwrap(args[0]), (tuple, list)):
        args = unwrap(args[0])
    return tuple(as_int(a, "every dimension") for a in args)


def _normalize_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise CompilationError(f"invalid axis {axis}: {what} needs an axis in [{-rank}, {rank})")
    return axis % rank


@tensor_member()
@builtin
def reshape(input, *shape, can_reorder=False, _semantic=None):
    """Same elements in row-major order, new ``shape`` (a power of two per dimension)."""
    x = _semantic.to_tensor(input)
    shape = validate_shape(_dims(shape), "reshape")
    numel = 1
    for d in shape:
        numel *= d
    if numel != x.numel:
        raise CompilationError(f"cannot reshape {list(x.shape) or 'a scalar'} ({x.numel} "
                               f"elements) to {list(shape)} ({numel} elements)")
    if not x.is_block():
        return _semantic.splat(x, shape)
    if x.shape == shape:
        return x
    return _semantic.op("reshape", [x], irt.tensor(shape, x.type.scalar))


@tensor_member()
@builtin
def view(input, *shape, _semantic=None):
    """Deprecated alias of :func:`reshape`."""
    return reshape(input, *shape, _semantic=_semantic)


@tensor_member()
@builtin
def ravel(input, can_reorder=False, _semantic=None):
    """The tensor as 1-D."""
    x = _tensor(input, "tl.ravel")
    return reshape(x, (x.numel,), _semantic=_semantic)


@tensor_member()
@builtin
def permute(input, *dims, _semantic=None):
    """Reorder dimensions: result dim i is input dim ``dims[i]``."""
    x = _tensor(input, "tl.permute")
    order = _dims(dims)
    if sorted(order) != list(range(len(x.shape))):
        raise CompilationError(f"permutation {list(order)} is not a reordering of the "
                               f"{len(x.shape)} dimensions of {list(x.shape)}")
    if order == tuple(range(len(order))):
        return x
    shape = tuple(x.shape[o] for o in order)
    return _semantic.op("trans", [x], irt.tensor(shape, x.type.scalar), order=list(order))


@tensor_member()
@builtin
def trans(input, *dims, _semantic=None):
    """Permute by ``dims``; without them swap the last two axes (a batched 2-D transpose, as
    Triton)."""
    x = _tensor(input, "tl.trans")
    order = _dims(dims)
    if not order:
        n = len(x.shape)
        if n < 2:
            raise CompilationError(f"tl.trans invoked with a 0- or 1-dimensional tensor "
                                   f"({list(x.shape)}): there are no two axes to swap")
        order = (*range(n - 2), n - 1, n - 2)
    return permute(x, order, _semantic=_semantic)


@tensor_member()
@builtin
def broadcast_to(input, *shape, _semantic=None):
    """``input`` stretched to ``shape``: size-1 dimensions stretch, the rank must already match
    (Triton refuses a rank change here, unlike binary operators' implicit broadcasting); a
    scalar is splat."""
    x = _semantic.to_tensor(input)
    shape = validate_shape(_dims(shape), "broadcast_to")
    if x.is_block() and len(x.shape) != len(shape):
        raise CompilationError(f"tl.broadcast_to: Cannot broadcast, rank mismatch: "
                               f"{list(x.shape)}, {list(shape)} (add the missing dimensions "
                               f"first, e.g. with x[None, :] or tl.expand_dims)")
    return _semantic.broadcast_to(x, shape)


@builtin
def broadcast(input, other, _semantic=None):
    """Both operands broadcast to their common shape."""
    a, b = _semantic.to_tensor(input), _semantic.to_tensor(other)
    return tuple(_semantic.broadcast_all(a, b))


@tensor_member()
@builtin
def expand_dims(input, axis, _semantic=None):
    """Insert size-1 dimension(s) at ``axis`` (an int or a sequence; negative counts from the
    end of the result)."""
    x = _semantic.to_tensor(input)
    axes = as_shape(axis, "axis") if isinstance(unwrap(axis), (tuple, list)) else \
        (as_int(axis, "axis"),)
    rank = len(x.shape) + len(axes)
    norm = sorted(_normalize_axis(a, rank, "tl.expand_dims") for a in axes)
    if len(set(norm)) != len(norm):
        raise CompilationError(f"tl.expand_dims: duplicate axes, normalized axes = {norm}")
    for a in norm:
        x = _semantic.expand_dims(x, a)
    return x


@tensor_member()
@builtin
def join(a, b, _semantic=None):
    """Two tensors of one type stacked along a new minor dimension of size 2. Tensors of
    different types are refused, as Triton's ``tt.join`` requires operands of the same type (a
    Python number takes the tensor's type)."""
    s = _semantic
    ta, tb = unwrap(a), unwrap(b)
    if isinstance(ta, tensor) and isinstance(tb, tensor) and ta.type.scalar != tb.type.scalar:
        raise CompilationError(f"tl.join: operands must have the same type, got "
                               f"{ta.type.scalar} and {tb.type.scalar}; cast one of them")
    x, y = s.promote(a, b)
    if not x.is_block():
        # two scalars: [x, y] by a select on the position (no 0-d join in the GPU layouts)
        from .creation import arange
        first = s.compare("eq", arange(0, 2, _semantic=s), 0)
        return s.select(first, s.splat(x, (2,)), s.splat(y, (2,)))
    return s.op("join", [x, y], irt.tensor(x.shape + (2,), x.type.scalar))


@tensor_member()
@builtin
def split(a, _semantic=None):
    """The two halves of a tensor whose last dimension is 2 (inverse of :func:`join`)."""
    x = _tensor(a, "tl.split")
    if x.shape[-1] != 2:
        raise CompilationError(f"tl.split needs a last dimension of size 2, got {list(x.shape)}")
    rest = x.shape[:-1]
    if not rest:
        return _split_pair(_semantic, x)
    rt = irt.tensor(rest, x.type.scalar)
    op = _semantic.builder.create("split", [x.handle], [rt, rt])
    return tensor(op.results[0]), tensor(op.results[1])


def _split_pair(s, x: tensor):
    """The two scalars of a 2-element tensor: an integer sum of each element's bits where its
    position matches (exact, and a scalar is uniform across a GPU program's threads)."""
    from .creation import arange
    from .reduction import sum as _sum

    elem = x.type.scalar
    if elem.is_pointer:
        raise CompilationError("tl.split of a 2-element tensor of pointers is not supported")
    bits_t = irt.ScalarType({1: "i8", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}[elem.bitwidth])
    bits = s.cast(x, bits_t) if elem == irt.i1 else s.bitcast(x, bits_t)
    pos = arange(0, 2, _semantic=s)
    out = []
    for k in (0, 1):
        picked = s.select(s.compare("eq", pos, k), bits, 0)
        total = s.cast(_sum(picked, 0, _semantic=s), bits_t)
        out.append(s.cast(total, elem) if elem == irt.i1 else s.bitcast(total, elem))
    return out[0], out[1]


def subscript(s, x, index):
    """``x[None, :]``-style indexing, as Triton: each ``None`` inserts a size-1 dim at its
    position, each ``:`` leaves the tensor as it is (so ``ptr[None, None, :]`` on a scalar is
    ``[1, 1]`` and the count of ``:`` need not match the rank)."""
    x = _tensor(x, "indexing")
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if i is not None and not (isinstance(i, slice) and i.start is None and i.stop is None
                                  and i.step is None):
            raise CompilationError(f"unsupported tensor index {i!r}: only None and ':' can "
                                   f"index a tensor in a kernel; use masks with "
                                   f"tl.load/tl.where instead")
    for pos, i in enumerate(items):
        if i is None:
            if pos > len(x.shape):
                raise CompilationError(f"unsupported tensor index: None at position {pos} of "
                                       f"a tensor of rank {len(x.shape)} (at most {len(x.shape)})")
            x = s.expand_dims(x, pos)
    return x


@tensor_member()
@builtin
def squeeze(x, dim, _semantic=None):
    """``x`` without its length-1 dimension ``dim`` (negative counts from the end)."""
    t = _tensor(x, "tl.squeeze")
    d = _normalize_axis(as_int(dim, "dim"), len(t.shape), "tl.squeeze")
    if t.shape[d] != 1:
        raise CompilationError(f"tl.squeeze: dimension {d} of {list(t.shape)} has length "
                               f"{t.shape[d]}, not 1")
    return reshape(t, t.shape[:d] + t.shape[d + 1:], _semantic=_semantic)


@tensor_member()
@builtin
def unsqueeze(x, dim, _semantic=None):
    """``x`` with a length-1 dimension inserted at ``dim`` (as :func:`expand_dims` with one
    axis; negative counts from the end of the result)."""
    t = _semantic.to_tensor(x)
    d = _normalize_axis(as_int(dim, "dim"), len(t.shape) + 1, "tl.unsqueeze")
    return _semantic.expand_dims(t, d)
