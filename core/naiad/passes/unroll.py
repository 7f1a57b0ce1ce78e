"""Full unrolling of ``for`` loops with constant bounds.

A loop is unrolled when its trip count is known (constant ``lb``, ``ub``, ``step > 0``) and
one of: it carries ``attrs["unroll"]`` (``True``, or an integer at least the trip count); it
carries ``attrs["loop_unroll_factor"]`` (from ``tl.range(..., loop_unroll_factor=n)``) at least
the trip count (partial unrolling is not done); or the trip count is at most ``threshold``
(option ``unroll_threshold``, default 0: only loops that ask are unrolled; the frontend already
unrolls ``static_range``). A loop whose unrolled body would exceed ``max_ops`` operations is left
alone. Each copy of the body sees the induction variable as a constant and the previous copy's
yielded values as its iteration arguments.
"""
from __future__ import annotations

from ..ir.core import Module, Operation, Value
from .rewrite import constant_value, create_constant, replace_op

DEFAULT_THRESHOLD = 0
DEFAULT_MAX_OPS = 4096


def trip_count(op: Operation) -> int | None:
    """Number of iterations of a ``for`` with constant bounds and positive step, else None."""
    lb, ub, step = (constant_value(v) for v in op.operands[:3])
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def unroll(module: Module, ctx=None, threshold: int | None = None,
           max_ops: int | None = None) -> bool:
    """Unroll eligible loops of ``module`` in place (innermost first); True when any was."""
    opts = getattr(ctx, "options", None) or {}
    if threshold is None:
        threshold = _option(opts, "unroll_threshold", DEFAULT_THRESHOLD)
    if max_ops is None:
        max_ops = _option(opts, "unroll_max_ops", DEFAULT_MAX_OPS)
    changed = False
    for fn in module.functions.values():
        loops = [op for op in fn.walk() if op.name == "for"]
        for op in reversed(loops):  # post-order: inner loops before the loops holding them
            n = trip_count(op)
            if n is None or not _wanted(op, n, threshold):
                continue
            size = sum(1 for top in op.regions[0].block.ops for _ in top.walk())
            if n * size > max_ops:
                continue
            _unroll(op, n)
            changed = True
    return changed


def _option(opts, name, default):
    if isinstance(opts, dict):
        value = opts.get(name)
    else:
        value = getattr(opts, name, None)
    return default if value is None else value


def _wanted(op: Operation, n: int, threshold: int) -> bool:
    flag = op.attrs.get("unroll")
    if flag is True:
        return True
    for factor in (flag, op.attrs.get("loop_unroll_factor")):
        if isinstance(factor, int) and not isinstance(factor, bool) and factor >= max(n, 2):
            return True
    return n <= threshold


def _unroll(op: Operation, n: int) -> None:
    lb, step = constant_value(op.operands[0]), constant_value(op.operands[2])
    body = op.regions[0].block
    iv_type = body.args[0].type
    carried: list[Value] = list(op.operands[3:])
    ops = body.ops[:-1]
    for k in range(n):
        iv = create_constant(lb + k * step, iv_type, op, body.args[0].name_hint)
        mapping: dict[Value, Value] = {body.args[0]: iv}
        mapping.update(zip(body.args[1:], carried))
        for inner in ops:
            op.parent.insert_before(op, inner.clone(mapping))
        carried = [mapping.get(v, v) for v in body.terminator.operands]
    replace_op(op, carried)
