"""Vendor-neutral pieces of software pipelining a ``for`` loop: which loops qualify, and how to
compute a value of a later iteration ahead of time.

A pipeliner issues the loads of iteration ``i + d`` while iteration ``i`` computes. That is only
sound when nothing observable changes:

* the step is a positive integer constant, so "iteration ``iv + d * step`` exists" is
  ``iv + d * step < ub`` (:func:`constant_step`);
* nothing in the loop writes memory or calls (:func:`loop_writes`): a load moved ahead of
  earlier iterations reads what it would have read;
* a moved load's address and mask are computed by pure, region-free ops without division (which
  could trap on the values of an iteration that does not exist), from loop invariants, the
  induction variable and carried values whose next values are computed the same way and not
  from the op being overlapped (:func:`check_ahead`).

:func:`ahead` clones that computation with the induction variable and carried values of
iteration ``i + d``; :func:`guarded_load` re-issues a load under "that iteration exists" AND its
own mask, so no address outside the original loop's accesses is touched.

The NVIDIA plugin's register prefetch and cp.async ring have their own copies of these steps;
moving them onto this module is a later change.
"""
from __future__ import annotations

from ...ir.core import Block, Operation, Value
from ...ir.ops import PURE, opdef
from ...ir.types import TensorType, i1, with_element

#: pure ops not safe to run on the values of an iteration that does not exist
SPECULATION_UNSAFE = frozenset({"div", "rem"})
#: ops that write memory (or may)
WRITES = frozenset({"store", "atomic_rmw", "atomic_cas", "call", "print", "assert"})


class NotPipelinable(Exception):
    """Why a loop (or a load in it) is left alone."""


def kernel_loops(module) -> list[Operation]:
    """Every ``for`` op of the module's kernels (not of its device functions), outermost first,
    listed before a pipeliner rewrites any of them."""
    return [op for fn in module.functions.values() if fn.attrs.get("kernel", True) is not False
            for op in fn.walk() if op.name == "for"]


def constant_step(loop: Operation) -> int | None:
    step = loop.operands[2].defining_op
    value = step.attrs.get("value") if step is not None and step.name == "constant" else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def loop_writes(loop: Operation) -> bool:
    return any(o.name in WRITES for o in loop.walk())


def in_body(v: Value, body: Block) -> Operation | None:
    d = v.defining_op
    return d if d is not None and d.parent is body else None


def _check_pure_slice(roots, body: Block, forbidden: Operation | None) -> set:
    """The body's block arguments ``roots`` depend on; raises NotPipelinable on an op that
    cannot be run ahead (or on ``forbidden``)."""
    args, seen, stack = set(), set(), list(roots)
    while stack:
        v = stack.pop()
        if v.is_block_arg and v.owner is body:
            args.add(v)
            continue
        d = in_body(v, body)
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        if d is forbidden or d.name in SPECULATION_UNSAFE or d.regions or \
                not opdef(d.name).has(PURE):
            raise NotPipelinable(f"{d.name} cannot run ahead")
        stack.extend(d.operands)
    return args


def check_ahead(values, body: Block, forbidden: Operation) -> list[Value]:
    """Check ``values`` can be computed for a later iteration before ``forbidden`` runs; return
    the carried block arguments (not the induction variable) they depend on, closed under
    "the next value of a carried argument depends on"."""
    iv = body.args[0]
    carried: list[Value] = []
    todo = list(_check_pure_slice(values, body, forbidden))
    while todo:
        a = todo.pop()
        if a is iv or a in carried:
            continue
        carried.append(a)
        nxt = body.terminator.operands[a.index - 1]
        todo.extend(_check_pure_slice([nxt], body, forbidden))
    return carried


#: integer ops that trap on a zero divisor
DIVISIONS = frozenset({"div", "rem"})


def materialize(v: Value, body: Block, env: dict, block: Block, anchor: Operation,
                cache: dict, valid: Value | None = None) -> Value:
    """``v`` computed with the body's block arguments replaced by ``env``: the body ops on the
    way are cloned before ``anchor`` in ``block``; loop invariants are used as they are.
    ``valid`` (scalar i1, for an iteration that may not exist): where it is false, cloned
    divisions divide by 1, so computing ahead never traps."""
    if v in env:
        return env[v]
    d = in_body(v, body)
    if d is None:
        return v
    if id(d) not in cache:
        mapping = {x: materialize(x, body, env, block, anchor, cache, valid)
                   for x in d.operands}
        if valid is not None and d.name in DIVISIONS:
            divisor = mapping[d.operands[1]]
            one = constant(1, divisor.type, block, anchor, d.loc)
            mapping[d.operands[1]] = block.insert_before(anchor, Operation(
                "select", [valid, divisor, one], [divisor.type], loc=d.loc)).result
        clone = d.clone(mapping)
        block.insert_before(anchor, clone)
        cache[id(d)] = clone
    return cache[id(d)].results[v.index]


def constant(value: int, ty, block: Block, anchor: Operation, loc=None) -> Value:
    return block.insert_before(anchor, Operation("constant", [], [ty], {"value": value},
                                                 loc=loc)).result


def ahead(loop: Operation, carried: list[Value], distance: int, block: Block,
          anchor: Operation, start: dict | None = None) -> dict:
    """The environment of iteration ``i + distance`` (induction variable and ``carried``
    arguments), computed before ``anchor``. ``start`` is iteration i's environment (default:
    the body's own arguments; the prologue passes the loop's initial values and ``lb``)."""
    body = loop.regions[0].block
    iv = body.args[0]
    env = dict(start) if start is not None else {}
    base_iv = env.get(iv, iv)
    env[iv] = base_iv
    step = constant_step(loop)
    for j in range(1, distance + 1):
        cache: dict = {}
        nxt = {a: materialize(body.terminator.operands[a.index - 1], body, env, block, anchor,
                              cache) for a in carried}
        off = constant(j * step, iv.type, block, anchor, loop.loc)
        nxt[iv] = block.insert_before(anchor, Operation("add", [base_iv, off], [iv.type],
                                                        loc=loop.loc)).result
        env.update(nxt)
    return env


def guarded_load(load: Operation, body: Block, env: dict, valid: Value, block: Block,
                 anchor: Operation) -> Operation:
    """``load`` as iteration ``env`` would issue it, with ``valid`` (scalar i1) AND-ed into its
    mask, placed before ``anchor``."""
    cache: dict = {}
    operands = [materialize(v, body, env, block, anchor, cache) for v in load.operands]
    ptr = operands[0]
    mask = valid
    if isinstance(ptr.type, TensorType):
        mask = block.insert_before(anchor, Operation(
            "splat", [valid], [with_element(ptr.type, i1)], loc=load.loc)).result
    if len(operands) > 1:
        mask = block.insert_before(anchor, Operation(
            "and", [operands[1], mask], [mask.type], loc=load.loc)).result
    new = Operation("load", [ptr, mask] + operands[2:], [load.results[0].type],
                    dict(load.attrs), loc=load.loc)
    block.insert_before(anchor, new)
    new.result.name_hint = load.results[0].name_hint
    return new


def iteration_exists(loop: Operation, env: dict, block: Block, anchor: Operation) -> Value:
    """``env``'s induction variable < ub (an i1 before ``anchor``)."""
    iv = loop.regions[0].block.args[0]
    return block.insert_before(anchor, Operation("cmp", [env[iv], loop.operands[1]], [i1],
                                                 {"pred": "lt"}, loc=loop.loc)).result


def add_carried(loop: Operation, init: Value, name: str | None = None) -> Value:
    """A new carried value: initial value ``init``; returns its block argument (the caller
    adds the yield operand with :func:`yield_carried`)."""
    body = loop.regions[0].block
    loop.add_operand(init)
    arg = body.add_arg(init.type, name)
    loop.results.append(Value(init.type, loop, len(loop.results)))
    return arg


def yield_carried(loop: Operation, v: Value) -> None:
    loop.regions[0].block.terminator.add_operand(v)


def drop_dead(body: Block) -> None:
    """Erase pure, region-free ops of ``body`` whose results are unused."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(body.ops)):
            if (op.results and not op.regions and opdef(op.name).has(PURE)
                    and all(not r.uses for r in op.results)):
                op.erase()
                changed = True
