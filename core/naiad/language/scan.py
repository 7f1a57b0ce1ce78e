"""Scans: ``tl.associative_scan`` with a combine function, ``cumsum`` and ``cumprod``.

One ``scan`` op per call; like reductions, its region combines (accumulators..., elements...).
"""
from __future__ import annotations

from ..errors import CompilationError
from .core import as_bool, builtin, tensor_member, unwrap
from .reduction import _axis, _binary_combine, _inputs, _one, _sum_dtype, build_combine_op


def scan_tensors(s, inputs, axis, combine, reverse=False):
    ax = _axis(axis, len(inputs[0].shape), "scan")
    return build_combine_op(s, "scan", inputs, ax, combine, inputs[0].shape,
                            reverse=as_bool(reverse, "reverse"))


@tensor_member()
@builtin
def associative_scan(input, axis, combine_fn, reverse=False, _semantic=None):
    """Inclusive scan of ``input`` (a tensor or tuple of tensors) along ``axis`` with the @jit
    ``combine_fn(acc..., elem...)``."""
    s = _semantic
    inputs, as_tuple = _inputs(input, "tl.associative_scan")
    fn = unwrap(combine_fn)
    if unwrap(axis) is None:
        raise CompilationError("tl.associative_scan needs an axis")
    results = scan_tensors(s, inputs, axis,
                           lambda accs, elems: s.codegen.inline_jit(fn, accs + elems,
                                                                    "tl.associative_scan"),
                           reverse)
    return tuple(results) if as_tuple else results[0]


def _cumulative(s, input, axis, reverse, dtype, opname, what):
    x = _one(input, what)
    x = s.cast(x, _sum_dtype(x.type.scalar, dtype))
    return scan_tensors(s, [x], axis, _binary_combine(s, opname), reverse)[0]


@tensor_member()
@builtin
def cumsum(input, axis=0, reverse=False, dtype=None, _semantic=None):
    """Inclusive prefix sum along ``axis`` (narrow integers accumulate in (u)int32)."""
    return _cumulative(_semantic, input, axis, reverse, dtype, "add", "tl.cumsum")


@tensor_member()
@builtin
def cumprod(input, axis=0, reverse=False, dtype=None, _semantic=None):
    """Inclusive prefix product along ``axis`` (narrow integers accumulate in (u)int32)."""
    return _cumulative(_semantic, input, axis, reverse, dtype, "mul", "tl.cumprod")
