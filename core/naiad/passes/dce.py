"""Dead-code elimination.

Erases ops whose results are unused and whose deletion cannot change behaviour: pure ops, loads
(a read has no effect), and ``for``/``if`` whose regions hold only such ops. Stores, atomics,
calls and ``while`` loops (which might not terminate) always stay. Also:

* ``for``: an iteration argument is dropped when its result is unused and its value only feeds
  its own next iteration (found by a liveness fixpoint over the body), e.g. an accumulator
  nobody reads;
* ``while``: a forwarded value is dropped when both its result and the "after" argument are
  unused; a loop-carried value is dropped when the "before" argument is unused;
* ``if``: unused results are dropped; an ``if`` with no results and empty regions is erased.
"""
from __future__ import annotations

from ..ir.core import Block, Module, Operation, Value
from .rewrite import is_removable, is_terminator, rebuild, remove_block_args


def dce(module: Module, ctx=None) -> bool:
    """Run DCE on every function of ``module`` in place; returns True when anything changed."""
    changed = False
    for fn in module.functions.values():
        while _dce_block(fn.body.block):
            changed = True
    return changed


def _dce_block(block: Block) -> bool:
    changed = False
    for op in reversed(list(block.ops)):
        if op.parent is None:
            continue
        for region in op.regions:
            changed |= _dce_block(region.block)
        if is_terminator(op):
            continue
        if all(not r.uses for r in op.results) and is_removable(op):
            op.erase()
            changed = True
            continue
        if op.name == "for":
            changed |= _prune_for(op)
        elif op.name == "while":
            changed |= _prune_while(op)
        elif op.name == "if":
            changed |= _prune_if(op)
    return changed


def _live_values(body: Block, roots: list[Value]) -> set[Value]:
    """Values of ``body`` (at any depth) that something other than dead code needs: operands of
    ops that must stay, plus ``roots``; the body's own block arguments are included when live."""
    live: set[Value] = set()
    work = list(roots)
    ops = [op for top in body.ops for op in top.walk()]
    for op in ops:
        if is_terminator(op) and op.parent is body:
            continue  # the body's yield: only its live positions matter (roots)
        if not is_removable(op) or is_terminator(op):
            work.extend(op.operands)
    producers: dict[Value, Operation] = {}
    for op in ops:
        for r in op.results:
            producers[r] = op
        for region in op.regions:
            for a in region.block.args:
                producers[a] = op
    while work:
        v = work.pop()
        if v in live:
            continue
        live.add(v)
        op = producers.get(v)
        if op is None:
            continue
        work.extend(op.operands)
        for inner in list(op.walk())[1:]:
            work.extend(inner.operands)
    return live


def _prune_for(op: Operation) -> bool:
    body = op.regions[0].block
    yield_op = body.terminator
    n = len(op.results)
    if n == 0 or yield_op is None:
        return False
    live_pos = {i for i in range(n) if op.results[i].uses}
    while True:
        live = _live_values(body, [yield_op.operands[i] for i in live_pos])
        grown = {i for i in range(n) if body.args[i + 1] in live} | live_pos
        if grown == live_pos:
            break
        live_pos = grown
    dead = [i for i in range(n) if i not in live_pos]
    if not dead:
        return False
    keep = [i for i in range(n) if i in live_pos]
    yield_op.set_operands([yield_op.operands[i] for i in keep])
    _erase_dead_ops(body)
    if any(body.args[i + 1].uses for i in dead):
        raise AssertionError("dce: a dropped for-loop argument is still used")
    remove_block_args(body, [i + 1 for i in dead])
    rebuild(op, list(op.operands[:3]) + [op.operands[3 + i] for i in keep], keep)
    return True


def _erase_dead_ops(block: Block) -> None:
    for op in reversed(list(block.ops)):
        for region in op.regions:
            _erase_dead_ops(region.block)
        if not is_terminator(op) and all(not r.uses for r in op.results) and is_removable(op):
            op.erase()


def _prune_while(op: Operation) -> bool:
    before, after = op.regions[0].block, op.regions[1].block
    cond_op, yield_op = before.terminator, after.terminator
    changed = False
    # forwarded values: condition operand i+1 -> result i and after-arg i
    dead = [i for i in range(len(op.results)) if not op.results[i].uses and not after.args[i].uses]
    if dead:
        keep = [i for i in range(len(op.results)) if i not in dead]
        cond_op.set_operands([cond_op.operands[0]] + [cond_op.operands[i + 1] for i in keep])
        remove_block_args(after, dead)
        op = rebuild(op, list(op.operands), keep)
        changed = True
    # carried values: init i -> before-arg i, fed back by yield operand i
    dead = [i for i in range(len(op.operands)) if not before.args[i].uses]
    if dead:
        keep = [i for i in range(len(op.operands)) if i not in dead]
        yield_op.set_operands([yield_op.operands[i] for i in keep])
        remove_block_args(before, dead)
        op.set_operands([op.operands[i] for i in keep])
        changed = True
    return changed


def _prune_if(op: Operation) -> bool:
    dead = [i for i in range(len(op.results)) if not op.results[i].uses]
    if not dead:
        return False
    keep = [i for i in range(len(op.results)) if i not in dead]
    for region in op.regions:
        y = region.block.terminator
        y.set_operands([y.operands[i] for i in keep])
    rebuild(op, list(op.operands), keep)
    return True
