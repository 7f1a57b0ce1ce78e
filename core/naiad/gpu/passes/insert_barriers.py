"""Barrier placement between shared-memory users.

A scratch user writes its buffer, waits at a barrier of its own, then reads. Its reads are
still *pending* afterwards: a later user must not overwrite the buffer until every thread has
finished reading, so a ``barrier`` op is placed before the next user's writes when reads may be
pending on some path. Loops are analysed to a fixed point (the first user of an iteration may
follow the last user of the previous one); an ``if`` is pending when either branch is.
"""
from __future__ import annotations

from ...ir.core import Block, Module, Operation


def insert_barriers(module: Module, ctx=None) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        _flow(fn.body.block, False, insert=True)


def _uses_scratch(op: Operation) -> bool:
    return bool(op.attrs.get("scratch"))


def _flow(block: Block, pending: bool, insert: bool) -> bool:
    """Pending state at the end of ``block`` given the state at its start."""
    for op in list(block.ops):
        if op.name == "barrier":
            pending = False
        elif op.name == "for":
            pending = _loop(op, [op.regions[0].block], pending, insert)
        elif op.name == "while":
            pending = _loop(op, [op.regions[0].block, op.regions[1].block], pending, insert)
        elif op.name == "if":
            then = _flow(op.regions[0].block, pending, insert)
            other = _flow(op.regions[1].block, pending, insert)
            pending = then or other
        elif _uses_scratch(op):
            if pending and insert:
                block.insert_before(op, Operation("barrier", loc=op.loc))
            pending = True
    return pending


def _loop(op: Operation, blocks: list[Block], pending: bool, insert: bool) -> bool:
    def once(state: bool, do_insert: bool) -> bool:
        for b in blocks:
            state = _flow(b, state, do_insert)
        return state

    entry = pending or once(pending, False)
    end = once(entry, insert)
    return entry or end
