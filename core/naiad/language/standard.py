"""Triton's standard-library helpers that compose other builtins: softmax, interleave,
swizzle2d."""
from __future__ import annotations

from .core import builtin, tensor_member, unwrap
from .math import exp, minimum
from .reduction import max as _max, sum as _sum
from .shape import join, reshape


@tensor_member()
@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False, _semantic=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (0 when None, as in Triton); the
    result has ``x``'s shape."""
    s = _semantic
    x = s.to_tensor(x)
    axis = 0 if unwrap(dim) is None else dim
    z = s.binary("sub", x, s.broadcast_to(_max(x, axis, keep_dims=True, _semantic=s), x.shape))
    num = exp(z, _semantic=s)
    den = _sum(num, axis, keep_dims=True, _semantic=s)
    return s.true_divide(num, s.broadcast_to(den, num.shape), ieee_rounding=bool(unwrap(ieee_rounding)))


@builtin
def interleave(a, b, _semantic=None):
    """Elements of ``a`` and ``b`` alternating along the last dimension."""
    s = _semantic
    joined = join(a, b, _semantic=s)
    if len(joined.shape) == 1:      # two scalars: their pair
        return joined
    shape = list(joined.shape[:-2]) + [joined.shape[-2] * 2]
    return reshape(joined, shape, _semantic=s)


@builtin
def swizzle2d(i, j, size_i, size_j, size_g, _semantic=None):
    """Grouped (row-major within groups of ``size_g`` rows) reordering of a 2-D index, as in
    Triton: returns the new (i, j)."""
    s = _semantic
    ij = s.binary("add", s.binary("mul", i, size_j), j)
    size_gj = s.binary("mul", size_g, size_j)
    group_id = s.binary("floordiv", ij, size_gj)
    off_i = s.binary("mul", group_id, size_g)
    rem = s.binary("sub", size_i, off_i)
    size_g = minimum(rem, size_g, _semantic=s)
    ij = s.binary("mod", ij, size_gj)
    new_i = s.binary("add", off_i, s.binary("mod", ij, size_g))
    new_j = s.binary("floordiv", ij, size_g)
    return new_i, new_j
