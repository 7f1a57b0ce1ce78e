"""Compiler hints: facts about values that the axis-info analysis cannot prove.

Each becomes a ``hint`` op (the identity) with one attribute holding a per-dimension list:
``divisibility`` (tl.multiple_of), ``contiguity`` (tl.max_contiguous), ``constancy``
(tl.max_constancy). A scalar gets a one-element list. As in Triton, the hint also holds for the
value it was given, from that point on (see :func:`_apply_in_place`).
"""
from __future__ import annotations

from ..errors import CompilationError
from .core import as_int, builtin, tensor, unwrap


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
    hinted = s.op("hint", [x], x.type, **{attr: items})
    _apply_in_place(s, unwrap(input), hinted)
    return hinted


def _apply_in_place(s, original, hinted) -> None:
    """Triton's hints also mark the value they are given, so ``tl.multiple_of(ptrs, 16)`` as a
    statement (its result unused, as tutorial 08 writes it) still holds for the later uses of
    ``ptrs``. Done here by pointing ``original`` at the hinted value -- only when ``original``
    is defined in the block being built (a loop's carried value in its own body, say), so no
    use outside that block can see a value defined inside it."""
    if not isinstance(original, tensor):
        return
    v = original.handle
    block = v.owner if v.is_block_arg else getattr(v.owner, "parent", None)
    if block is not None and block is s.builder.block:
        original.handle = hinted.handle


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
