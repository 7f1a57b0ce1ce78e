"""Reductions: ``tl.reduce`` with a combine function, and sum/max/min/argmax/argmin/xor_sum.

Every reduction is one ``reduce`` op whose region receives (accumulators..., elements...) as
scalars and yields the combined scalars. ``argmax``/``argmin`` reduce (value, index) pairs with
Triton's combine: the larger (smaller) value wins and ties go to the lower index; a NaN loses to
every number, consistent with ``tl.max``/``tl.min`` ignoring NaN (see :func:`_arg_combine`).
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from ..ir.core import Block, Region
from .core import as_bool, as_dtype, as_int, builtin, tensor, tensor_member, unwrap
from .semantics import describe, is_number


def _inputs(input, what: str) -> tuple[list[tensor], bool]:
    """The tensors to reduce and whether the caller passed a tuple."""
    value = unwrap(input)
    as_tuple = isinstance(value, (tuple, list))
    items = list(value) if as_tuple else [value]
    if not items:
        raise CompilationError(f"{what} needs at least one tensor")
    for x in items:
        if not isinstance(x, tensor) or not x.is_block():
            raise CompilationError(f"{what} needs block tensors, got {describe(x)}")
    if any(x.shape != items[0].shape for x in items):
        raise CompilationError(f"{what}: all inputs must have one shape, got "
                               f"{[list(x.shape) for x in items]}")
    return items, as_tuple


def _axis(axis, rank: int, what: str) -> int:
    axis = as_int(axis, f"{what}'s axis")
    if not -rank <= axis < rank:
        raise CompilationError(f"{what}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def build_combine_op(s, opname: str, inputs: list[tensor], axis: int, combine, result_shape,
                     **attrs) -> list[tensor]:
    """Emit ``reduce``/``scan`` over ``inputs`` whose region runs ``combine(accs, elems)``."""
    elems = [x.type.scalar for x in inputs]
    block = Block(elems + elems)
    n = len(inputs)
    with s.builder.at_end_of(block):
        args = [tensor(a) for a in block.args]
        outs = combine(args[:n], args[n:])
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if len(outs) != n:
            raise CompilationError(f"the combine function must return {n} value(s) (one per "
                                   f"input), got {len(outs)}")
        yielded = []
        for out, t in zip(outs, elems):
            out = unwrap(out)
            if is_number(out):
                out = s.constant(out, t)
            if not isinstance(out, tensor) or out.type != t:
                raise CompilationError(f"the combine function must return scalars of type {t}, "
                                       f"got {describe(out)}")
            yielded.append(out.handle)
        s.builder.create("yield", yielded)
    rtypes = [irt.tensor(result_shape, t) if result_shape else t for t in elems]
    op = s.builder.create(opname, [x.handle for x in inputs], rtypes, dict(axis=axis, **attrs),
                          regions=[Region(block)])
    return [tensor(r) for r in op.results]


def reduce_tensors(s, inputs: list[tensor], axis, combine, keep_dims=False) -> list[tensor]:
    """Reduce along ``axis`` (None: over all elements) with ``combine(accs, elems)``."""
    keep_dims = as_bool(keep_dims, "keep_dims")
    rank = len(inputs[0].shape)
    if unwrap(axis) is None:
        from .shape import reshape
        numel = inputs[0].numel
        inputs = [reshape(x, (numel,), _semantic=s) for x in inputs] if rank != 1 else inputs
        results = reduce_tensors(s, inputs, 0, combine)
        if keep_dims:
            results = [s.broadcast_to(r, (1,) * rank) if not r.is_block() else r
                       for r in results]
        return results
    ax = _axis(axis, rank, "reduction")
    shape = inputs[0].shape[:ax] + inputs[0].shape[ax + 1:]
    results = build_combine_op(s, "reduce", inputs, ax, combine, shape)
    if keep_dims:
        results = [s.expand_dims(r, ax) for r in results]
    return results


@tensor_member()
@builtin
def reduce(input, axis, combine_fn, keep_dims=False, _semantic=None):
    """Reduce ``input`` (a tensor or a tuple of same-shaped tensors) along ``axis`` with the
    @jit ``combine_fn(acc..., elem...)``."""
    s = _semantic
    inputs, as_tuple = _inputs(input, "tl.reduce")
    fn = unwrap(combine_fn)
    results = reduce_tensors(s, inputs, axis,
                             lambda accs, elems: s.codegen.inline_jit(fn, accs + elems,
                                                                      "tl.reduce"),
                             keep_dims)
    return tuple(results) if as_tuple else results[0]


def _binary_combine(s, opname):
    return lambda accs, elems: [s.op(opname, [accs[0], elems[0]], accs[0].type)]


def _one(input, what) -> tensor:
    inputs, as_tuple = _inputs(input, what)
    if as_tuple:
        raise CompilationError(f"{what} takes a single tensor, not a tuple")
    return inputs[0]


def _sum_dtype(t: irt.ScalarType, dtype) -> irt.ScalarType:
    if unwrap(dtype) is not None:
        return as_dtype(dtype, "dtype").to_ir()
    if t.is_int and t.bitwidth < 32:
        return irt.u32 if t.is_unsigned else irt.i32
    return t


@tensor_member()
@builtin
def sum(input, axis=None, keep_dims=False, dtype=None, _semantic=None):
    """Sum along ``axis`` (all elements when None); integers narrower than 32 bits sum in
    (u)int32."""
    s = _semantic
    x = _one(input, "tl.sum")
    x = s.cast(x, _sum_dtype(x.type.scalar, dtype))
    return reduce_tensors(s, [x], axis, _binary_combine(s, "add"), keep_dims)[0]


def _widen_for_minmax(s, x: tensor) -> tensor:
    t = x.type.scalar
    if t.is_pointer:
        raise CompilationError("cannot take the max/min of pointers")
    if t.bitwidth < 32:
        return s.cast(x, irt.f32 if t.is_float else irt.i32)
    return x


def _arg_combine(s, greater: bool, tie_break_left: bool):
    """(value, index) pairs: the larger (smaller) value wins; with ``tie_break_left`` equal
    values go to the lower index. On floats a NaN loses to any number (and NaNs tie with each
    other), as ``tl.max``/``tl.min`` ignore NaN: the index is that of the extremum of the
    non-NaN values, the first NaN's only when every value is NaN. (Triton's combine lets NaN
    compare false, so its answer depends on the combine order.)"""
    pred = "gt" if greater else "lt"

    def combine(accs, elems):
        (v1, i1), (v2, i2) = accs, elems
        better = s.compare(pred, v1, v2)
        same = s.compare("eq", v1, v2)
        if v1.type.scalar.is_float:
            nan1, nan2 = s.compare("ne", v1, v1), s.compare("ne", v2, v2)
            better = s.logical("or", better, s.logical("and", nan2, s.unary("not", nan1)))
            same = s.logical("or", same, s.logical("and", nan1, nan2))
        if tie_break_left:
            tie = s.logical("and", same, s.compare("lt", i1, i2))
            better = s.logical("or", better, tie)
        return [s.select(better, v1, v2), s.select(better, i1, i2)]
    return combine


def _with_indices(s, x: tensor, axis, greater: bool, tie_break_left, keep_dims):
    tie_break_left = as_bool(tie_break_left, "tie_break_left")
    from .shape import reshape
    rank = len(x.shape)
    flat = unwrap(axis) is None
    if flat:
        x = reshape(x, (x.numel,), _semantic=s) if rank != 1 else x
        ax = 0
    else:
        ax = _axis(axis, rank, "argmax/argmin")
    n = x.shape[ax]
    idx = s.op("make_range", [], irt.tensor((n,), irt.i32), start=0, end=n)
    for d in range(len(x.shape)):
        if d != ax:
            idx = s.expand_dims(idx, d)
    idx = s.broadcast_to(idx, x.shape)
    results = reduce_tensors(s, [x, idx], ax, _arg_combine(s, greater, tie_break_left),
                             keep_dims and not flat)
    if flat and as_bool(keep_dims, "keep_dims"):
        results = [s.broadcast_to(r, (1,) * rank) for r in results]
    return results[0], results[1]


def _minmax(s, input, axis, return_indices, tie_break_left, keep_dims, greater: bool, name):
    x = _one(input, f"tl.{name}")
    if as_bool(return_indices, "return_indices"):
        return _with_indices(s, x, axis, greater, tie_break_left, keep_dims)
    x = _widen_for_minmax(s, x)
    return reduce_tensors(s, [x], axis, _binary_combine(s, "max" if greater else "min"),
                          keep_dims)[0]


@tensor_member()
@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False, _semantic=None):
    """Maximum along ``axis``; with return_indices=True also the (first) index of it."""
    return _minmax(_semantic, input, axis, return_indices, return_indices_tie_break_left,
                   keep_dims, True, "max")


@tensor_member()
@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False, _semantic=None):
    """Minimum along ``axis``; with return_indices=True also the (first) index of it."""
    return _minmax(_semantic, input, axis, return_indices, return_indices_tie_break_left,
                   keep_dims, False, "min")


@tensor_member()
@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False, _semantic=None):
    """Index (i32) of the maximum along ``axis``; ties give the lowest index."""
    x = _one(input, "tl.argmax")
    return _with_indices(_semantic, x, axis, True, tie_break_left, keep_dims)[1]


@tensor_member()
@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False, _semantic=None):
    """Index (i32) of the minimum along ``axis``; ties give the lowest index."""
    x = _one(input, "tl.argmin")
    return _with_indices(_semantic, x, axis, False, tie_break_left, keep_dims)[1]


@tensor_member()
@builtin
def xor_sum(input, axis=None, keep_dims=False, _semantic=None):
    """Bitwise xor of the elements along ``axis`` (integers only)."""
    s = _semantic
    x = _one(input, "tl.xor_sum")
    if not x.type.scalar.is_int:
        raise CompilationError(f"tl.xor_sum needs integers, got {x.type}")
    return reduce_tensors(s, [x], axis, _binary_combine(s, "xor"), keep_dims)[0]
