"""Compiler hints: facts about values that the axis-info analysis cannot prove.

Each becomes a ``hint`` op (the identity) with one attribute holding a per-dimension list:
``divisibility`` (tl.multiple_of), ``contiguity`` (tl.max_contiguous), ``constancy``
(tl.max_constancy). A scalar gets a one-element list.
"""
from __future__ import annotations

from ..errors import CompilationError
from .core import as_int, builtin, unwrap


def _hint(s, input, values, attr: str, what: str):
    x = s.to_tensor(input)
    values = unwrap(values)
    items = list(values) if isinstance(values, (tuple, list)) else [values]
    items = [as_int(v, f"{what}'s values") for v in items]
    rank = max(len(x.shape), 1)
    if len(items) == 1 and rank > 1:
        raise CompilationError(f"{what} needs one value per dimension ({rank}) of "
                               f"{list(x.shape)}, got {items}")
    if len(items) != rank:
        raise CompilationError(f"{what} needs {rank} value(s) for shape {list(x.shape) or 'scalar'}"
                               f", got {len(items)}")
    if any(v < 1 for v in items):
        raise CompilationError(f"{what}'s values must be positive, got {items}")
    return s.op("hint", [x], x.type, **{attr: items})


@builtin
def multiple_of(input, values, _semantic=None):
    """Promise that ``input``'s values are multiples of ``values`` (per dimension)."""
    return _hint(_semantic, input, values, "divisibility", "tl.multiple_of")


@builtin
def max_contiguous(input, values, _semantic=None):
    """Promise that ``input`` holds runs of ``values`` consecutive integers (per dimension)."""
    return _hint(_semantic, input, values, "contiguity", "tl.max_contiguous")


@builtin
def max_constancy(input, values, _semantic=None):
    """Promise that ``input`` holds runs of ``values`` equal elements (per dimension)."""
    return _hint(_semantic, input, values, "constancy", "tl.max_constancy")
