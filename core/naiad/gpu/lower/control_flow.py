"""Structured control flow -> LLVM basic blocks, with one phi per register of every carried
value.

``for``: ``iv`` runs from ``lb`` while ``iv < ub`` (``iv > ub`` for a negative step; the sign
is tested at run time unless the step is a constant), comparisons by the bounds' signedness.
``while``: the before-region computes the condition and the values passed on; the after-region
yields the next inits. ``if``: both branches merge with phis. Conditions are scalars, uniform
across the program's threads, so barriers inside any region are reached by all of them.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.types import ScalarType
from .context import KernelLowering, lowers


def _phis(kl: KernelLowering, values: list[list]) -> list[list]:
    return [[kl.b.phi(x.type) for x in regs] for regs in values]


def _add_incoming(phis: list[list], values: list[list], block) -> None:
    for prow, vrow in zip(phis, values):
        for p, v in zip(prow, vrow):
            p.add_incoming(v, block)


@lowers("for")
def lower_for(kl: KernelLowering, op) -> None:
    b = kl.b
    lb, ub, step = (kl.get(v)[0] for v in op.operands[:3])
    ity = op.operands[0].type
    unsigned = isinstance(ity, ScalarType) and ity.is_unsigned
    inits = [kl.get(v) for v in op.operands[3:]]
    body = op.regions[0].block
    pre = b.block
    header, loop, exit_ = kl.new_block("for_header"), kl.new_block("for_body"), \
        kl.new_block("for_exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    carried = _phis(kl, inits)
    _add_incoming(carried, inits, pre)

    def less(x, y):
        return b.icmp_unsigned("<", x, y) if unsigned else b.icmp_signed("<", x, y)

    if isinstance(step, ir.Constant) and not unsigned:
        positive = _const_int(step) > 0
        cond = less(iv, ub) if positive else less(ub, iv)
    elif unsigned:
        cond = less(iv, ub)
    else:
        up = b.icmp_signed(">", step, ir.Constant(step.type, 0))
        cond = b.select(up, less(iv, ub), less(ub, iv))
    b.cbranch(cond, loop, exit_)

    b.position_at_end(loop)
    kl.values[body.args[0]] = [iv]
    for arg, regs in zip(body.args[1:], carried):
        kl.values[arg] = list(regs)
    kl.lower_block(body)
    yielded = [kl.get(v) for v in body.terminator.operands]
    nxt = b.add(iv, step)
    iv.add_incoming(nxt, b.block)
    _add_incoming(carried, yielded, b.block)
    b.branch(header)

    b.position_at_end(exit_)
    for res, regs in zip(op.results, carried):
        kl.set(res, list(regs))


def _const_int(c: ir.Constant) -> int:
    v = int(c.constant)
    bits = c.type.width
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


@lowers("while")
def lower_while(kl: KernelLowering, op) -> None:
    b = kl.b
    before, after = op.regions[0].block, op.regions[1].block
    inits = [kl.get(v) for v in op.operands]
    pre = b.block
    head, body, exit_ = kl.new_block("while_before"), kl.new_block("while_after"), \
        kl.new_block("while_exit")
    b.branch(head)
    b.position_at_end(head)
    carried = _phis(kl, inits)
    _add_incoming(carried, inits, pre)
    for arg, regs in zip(before.args, carried):
        kl.values[arg] = list(regs)
    kl.lower_block(before)
    cond_op = before.terminator
    cond = kl.get(cond_op.operands[0])[0]
    passed = [kl.get(v) for v in cond_op.operands[1:]]
    b.cbranch(cond, body, exit_)

    b.position_at_end(body)
    for arg, regs in zip(after.args, passed):
        kl.values[arg] = list(regs)
    kl.lower_block(after)
    nxt = [kl.get(v) for v in after.terminator.operands]
    _add_incoming(carried, nxt, b.block)
    b.branch(head)

    b.position_at_end(exit_)
    for res, regs in zip(op.results, passed):
        kl.set(res, list(regs))


@lowers("if")
def lower_if(kl: KernelLowering, op) -> None:
    b = kl.b
    cond = kl.get(op.operands[0])[0]
    then_bb, else_bb, merge = kl.new_block("if_then"), kl.new_block("if_else"), \
        kl.new_block("if_merge")
    b.cbranch(cond, then_bb, else_bb)
    ends = []
    for region, bb in zip(op.regions, (then_bb, else_bb)):
        b.position_at_end(bb)
        kl.lower_block(region.block)
        ends.append(([kl.get(v) for v in region.block.terminator.operands], b.block))
        b.branch(merge)
    b.position_at_end(merge)
    if not op.results:
        return
    phis = _phis(kl, ends[0][0])
    for vals, block in ends:
        _add_incoming(phis, vals, block)
    for res, regs in zip(op.results, phis):
        kl.set(res, regs)
