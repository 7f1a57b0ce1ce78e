"""GPU-IR pass: software-pipeline the K loop of a staged tensor-core matmul by prefetching the
next iteration's A/B tiles into registers.

Why: ``nvidia.mma_staged`` stores its operands into shared memory at the start of its lowering,
so an iteration ``load A_i, load B_i -> store -> barrier -> ldmatrix/mma`` waits for its own
global loads with nothing else to do: the whole memory latency is exposed once per K step.
After this pass the loop body reads

    load A_{i+1}, B_{i+1} (masked off on the last iteration)   # in flight ...
    mma_staged(A_i, B_i, acc)                                  # ... during these mmas
    yield ..., A_{i+1}, B_{i+1}

with ``A_i``/``B_i`` carried in registers (the loads' own layouts) and the first tiles loaded
before the loop under ``lb < ub``.

A ``for`` loop is rewritten when (all checked, otherwise it is left untouched):

* it holds one dot (several, as in attention, already fill the registers with their
  accumulators and intermediate tiles: carrying the next tiles too made such loops spill);
* its step is a positive integer constant (so "iteration ``iv + step`` exists" is
  ``iv + step < ub``);
* nothing in its body writes memory or calls (``store``, atomics, ``call``): moving a load one
  iteration earlier is then unobservable;
* a ``load`` directly in the body (not volatile) feeds an ``nvidia.mma_staged`` there, and its
  operands are computed from loop invariants, the induction variable and carried values by
  pure ops without division (which could trap on the extra iteration's values) and without the
  mma's results; a carried value's next-iteration value (its ``yield`` operand) must likewise
  not depend on the mma, and is moved ahead of the mma if it was computed after it.

The last iteration's prefetch and the prologue load are masked with the scalar condition
splatted to the pointer's layout (AND-ed with the load's own mask), so no address outside the
original loop's accesses is ever touched; masked-off registers are never used.
"""
from __future__ import annotations

from naiad.ir import Block, Module, Operation, TensorType, Value, i1, with_element
from naiad.backend import PURE, loop_pipelining, opdef

#: the loop helpers are the core's (``naiad.gpu.passes.loop_pipelining``); other NVIDIA passes
#: import them from here
drop_dead, in_body, materialize = (loop_pipelining.drop_dead, loop_pipelining.in_body,
                                   loop_pipelining.materialize)

from .mma_staged import STAGED_OP

#: pure ops not safe to run speculatively on the values of an iteration that does not exist
_UNSAFE = frozenset({"div", "rem"})
#: the ops a dot is at this point (only one per loop is prefetched for)
_DOTS = frozenset({STAGED_OP, "nvidia.mma", "dot"})
#: ops that write memory or may: their presence forbids reordering loads across iterations
_WRITES = frozenset({"store", "atomic_rmw", "atomic_cas", "atomic_poll", "call"})


class NotEligible(Exception):
    pass


def prefetch_staged_loads(module: Module, ctx=None, consumers=(STAGED_OP,)) -> bool:
    """The pass. ``consumers`` names the ops whose operand loads are prefetched (the tests use
    ``dot`` to check the rewrite with the reference executor)."""
    changed = False
    for op in loop_pipelining.kernel_loops(module):
        changed |= pipeline_loop(op, consumers)
    return changed


def staged_loads(loop: Operation, consumers=(STAGED_OP,)) -> list[tuple[Operation, Operation]]:
    """(load, first consumer using it) for the loads this pass would prefetch in ``loop``."""
    body = loop.regions[0].block
    found = []
    for op in body.ops:
        if op.name not in consumers:
            continue
        for v in op.operands[:2]:
            d = v.defining_op
            if (d is not None and d.name == "load" and d.parent is body
                    and not d.attrs.get("volatile") and all(d is not l for l, _ in found)):
                found.append((d, op))
    return found


def pipeline_loop(loop: Operation, consumers=(STAGED_OP,)) -> bool:
    """Prefetch the staged-mma operand loads of one ``for`` loop; False if not eligible."""
    body = loop.regions[0].block
    step = loop.operands[2].defining_op
    if step is None or step.name != "constant" or not isinstance(step.attrs.get("value"), int) \
            or isinstance(step.attrs["value"], bool) or step.attrs["value"] <= 0:
        return False
    if any(o.name in _WRITES for o in loop.walk()):
        return False
    if sum(o.name in _DOTS for o in body.ops) > 1:
        return False
    candidates = staged_loads(loop, consumers)
    chosen = []
    for load, mma in candidates:
        try:
            check_slice(load, body, set())
            for v in carried_dependencies(load.operands, body):
                check_next(v, body, mma)
        except NotEligible:
            continue
        chosen.append((load, mma))
    if not chosen:
        return False
    for load, mma in chosen:
        _prefetch(loop, load, mma)
    return True


# -- eligibility ---------------------------------------------------------------------------------



def check_slice(load: Operation, body: Block, seen: set) -> None:
    """Every in-body op computing ``load``'s operands is pure, safe and region-free."""
    stack = list(load.operands)
    while stack:
        d = in_body(stack.pop(), body)
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        if d.name in _UNSAFE or d.regions or not opdef(d.name).has(PURE):
            raise NotEligible(d.name)
        stack.extend(d.operands)


def check_next(arg: Value, body: Block, mma: Operation) -> None:
    """The value ``arg`` takes next iteration can be computed before ``mma``."""
    check_ahead([body.terminator.operands[arg.index - 1]], body, (mma,))


def check_ahead(values, body: Block, stops=(), guarded_divisions: bool = False) -> None:
    """The in-body ops computing ``values`` are pure, safe, region-free and none of ``stops``
    (the dots they must be computable ahead of); else :class:`NotEligible` naming the op.
    ``guarded_divisions``: scalar divisions are safe too (the caller clones them with
    ``loop_pipelining.materialize``'s ``valid``)."""
    stack, seen = list(values), set()
    while stack:
        d = in_body(stack.pop(), body)
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        unsafe = d.name in _UNSAFE and not (
            guarded_divisions and not isinstance(d.operands[1].type, TensorType))
        if d in stops or unsafe or d.regions or not opdef(d.name).has(PURE):
            raise NotEligible(d.name)
        stack.extend(d.operands)


def zero_other(load: Operation) -> bool:
    """No ``other``, or a constant 0 (also one converted to the tile's type, as float8's is):
    what a zero-filled copy of the masked-off elements reproduces."""
    if len(load.operands) < 3:
        return True
    d = load.operands[2].defining_op
    if d is not None and d.name == "cast":
        d = d.operands[0].defining_op
    return d is not None and d.name == "constant" and d.attrs.get("value") == 0


def carried_dependencies(values, body: Block) -> list[Value]:
    """The loop-carried block arguments (not the induction variable) ``values`` depend on."""
    out, seen, stack = [], set(), list(values)
    while stack:
        v = stack.pop()
        if v.is_block_arg and v.owner is body:
            if v.index > 0 and v not in out:
                out.append(v)
            continue
        d = in_body(v, body)
        if d is not None and id(d) not in seen:
            seen.add(id(d))
            stack.extend(d.operands)
    return out


# -- the rewrite ---------------------------------------------------------------------------------

def _hoist_before(v: Value, body: Block, anchor: Operation) -> None:
    """Move the in-body ops computing ``v`` that sit after ``anchor`` to just before it."""
    d = in_body(v, body)
    if d is None or body.ops.index(d) < body.ops.index(anchor):
        return
    for x in d.operands:
        _hoist_before(x, body, anchor)
    body.ops.remove(d)
    body.insert_before(anchor, d)




def _masked_load(load: Operation, operands: list[Value], valid: Value, block: Block,
                 anchor: Operation) -> Operation:
    """``load`` of ``operands`` with ``valid`` (scalar i1) AND-ed into its mask."""
    ptr = operands[0]
    mask_t = with_element(ptr.type, i1)
    mask = valid
    if isinstance(ptr.type, TensorType):
        mask = block.insert_before(anchor, Operation("splat", [valid], [mask_t],
                                                     loc=load.loc)).result
    if len(operands) > 1:
        mask = block.insert_before(anchor, Operation("and", [operands[1], mask], [mask_t],
                                                     loc=load.loc)).result
    new = Operation("load", [ptr, mask] + operands[2:], [load.results[0].type],
                    dict(load.attrs), loc=load.loc)
    block.insert_before(anchor, new)
    new.result.name_hint = load.results[0].name_hint
    return new


def _prefetch(loop: Operation, load: Operation, mma: Operation) -> None:
    body = loop.regions[0].block
    lb, ub, step = loop.operands[:3]
    inits = loop.operands[3:]
    iv = body.args[0]
    outer = loop.parent
    yield_op = body.terminator

    # prologue: iteration 0's tile, loaded under lb < ub
    env0 = {iv: lb}
    env0.update({a: init for a, init in zip(body.args[1:], inits)})
    cache0: dict = {}
    ops0 = [materialize(v, body, env0, outer, loop, cache0) for v in load.operands]
    first = outer.insert_before(loop, Operation("cmp", [lb, ub], [i1], {"pred": "lt"},
                                                loc=loop.loc)).result
    pro = _masked_load(load, ops0, first, outer, loop)

    # in the body, before the mma: iteration i+1's tile, loaded under iv + step < ub
    carried = carried_dependencies(load.operands, body)
    for a in carried:
        _hoist_before(yield_op.operands[a.index - 1], body, mma)
    nxt_iv = body.insert_before(mma, Operation("add", [iv, step], [iv.type],
                                               loc=loop.loc)).result
    env = {iv: nxt_iv}
    env.update({a: yield_op.operands[a.index - 1] for a in carried})
    ops1 = [materialize(v, body, env, body, mma, {}) for v in load.operands]
    more = body.insert_before(mma, Operation("cmp", [nxt_iv, ub], [i1], {"pred": "lt"},
                                             loc=loop.loc)).result
    nxt = _masked_load(load, ops1, more, body, mma)

    # carry the tile: new init, block argument, yield operand and (unused) result
    res_t = load.results[0].type
    loop.add_operand(pro.result)
    cur = body.add_arg(res_t, load.results[0].name_hint)
    yield_op.add_operand(nxt.result)
    loop.results.append(Value(res_t, loop, len(loop.results)))
    load.results[0].replace_all_uses_with(cur)
    load.erase()
    drop_dead(body)


def insert_constant(block, anchor, value, ty, loc):
    """A ``constant`` of ``ty`` inserted before ``anchor`` in ``block``; its value."""
    return block.insert_before(anchor, Operation("constant", [], [ty], {"value": value},
                                                 loc=loc)).result


def next_iteration_env(env, body, block, anchor, carried, step, loc):
    """The environment of the next iteration given ``env`` (block args -> values)."""
    iv = body.args[0]
    nxt = {iv: block.insert_before(anchor, Operation("add", [env.get(iv, iv), step],
                                                     [iv.type], loc=loc)).result}
    cache: dict = {}
    for a in carried:
        nxt[a] = materialize(body.terminator.operands[a.index - 1], body, env, block, anchor,
                              cache)
    return nxt
