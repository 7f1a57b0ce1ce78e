"""Loop-invariant code motion: hoist pure, region-free ops out of ``for``/``while`` loops.

An op moves to just before its loop when all its operands are defined outside the loop (or by ops
already hoisted) and moving it cannot introduce undefined behaviour: pure ops are speculatable
except integer ``div``/``rem`` by something not known to be a safe constant, and those move only
when the loop surely runs them (a ``for`` with constant bounds and at least one trip, or the
"before" region of a ``while``, which always runs once). Only ops directly in the loop's body are
candidates: ops nested in an ``if`` inside the loop stay conditional. Loads, stores, atomics and
calls never move. Inner loops are processed first, so invariants climb out of a nest step by step.
"""
from __future__ import annotations

from ..ir.core import Block, Module, Operation, Value
from ..ir.types import ScalarType
from .rewrite import constant_value, is_pure, is_terminator, move_before
from .scalar_eval import int_bounds


def licm(module: Module, ctx=None) -> bool:
    """Hoist loop invariants in every function of ``module``; returns True when anything moved."""
    changed = False
    for fn in module.functions.values():
        changed |= _visit_block(fn.body.block)
    return changed


def _visit_block(block: Block) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            changed |= _visit_block(region.block)
        if op.name == "for":
            changed |= _hoist(op, [(op.regions[0].block, _for_runs(op))])
        elif op.name == "while":
            changed |= _hoist(op, [(op.regions[0].block, True), (op.regions[1].block, False)])
    return changed


def _for_runs(op: Operation) -> bool:
    lb, ub, step = (constant_value(v) for v in op.operands[:3])
    return lb is not None and ub is not None and step is not None and step > 0 and lb < ub


def _hoist(loop: Operation, bodies: list[tuple[Block, bool]]) -> bool:
    inside = _values_defined_inside(loop)
    moved = False
    for body, surely_runs in bodies:
        for op in list(body.ops):
            if op.regions or is_terminator(op) or not is_pure(op):
                continue
            if any(v in inside for v in op.operands):
                continue
            if not surely_runs and not _speculatable(op):
                continue
            move_before(op, loop)
            inside.difference_update(op.results)
            moved = True
    return moved


def _values_defined_inside(loop: Operation) -> set[Value]:
    inside: set[Value] = set()
    for inner in loop.walk():
        if inner is not loop:
            inside.update(inner.results)
        for region in inner.regions:
            inside.update(region.block.args)
    return inside


def _speculatable(op: Operation) -> bool:
    """Pure ops that cannot trap or be undefined when executed on values a skipped iteration
    would never have produced. Integer division by zero (or INT_MIN / -1) is undefined."""
    if op.name not in ("div", "rem"):
        return True
    t = op.operands[1].type.scalar
    if not isinstance(t, ScalarType) or t.is_float:
        return True
    c = constant_value(op.operands[1])
    if c is None or c == 0:
        return False
    if t.is_signed and c == -1:
        lo, _ = int_bounds(t)
        return constant_value(op.operands[0]) not in (None, lo)
    return True
