"""GPU-IR pass: pipeline a staged tensor-core K loop through a ring of shared-memory buffers
filled by ``cp.async`` (sm_80+), instead of prefetching the next tile into registers.

Why: the register prefetch keeps a whole A/B tile per thread live across the mmas and stores it
to shared memory every iteration (two barriers). With ``cp.async`` the copy goes global ->
shared without registers, ``S`` tiles are in flight, and one barrier per iteration suffices:

    prologue: copy tiles 0..S-2 into slots 0..S-2 (one commit group each, under lb+s*step < ub)
    loop i:   cp.async.wait_group S-2; barrier       # tile i landed, slot (i-1)%S free
              copy tile i+S-1 into slot (i-1)%S; commit (empty group past the end)
              nvidia.mma_ring(acc, slot i%S)         # ldmatrix + mma.sync from the slot
    after:    cp.async.wait_group 0

Eligibility is the register prefetch's (see :mod:`naiad_nvidia.passes.prefetch_loads`) plus: both
operands of the ``nvidia.mma_staged`` are loads directly in the body, each moving 16-byte
chunks (``vec`` >= 8 16-bit elements, so the mask is constant per chunk), ``other`` absent or
a constant 0, and no other shared-memory user in the loop. Anything else keeps the fallback.
"""
from __future__ import annotations

from naiad.backend import (OpDef, linear_of, register_op, register_scratch, run_length,
                           scratch_bytes, vector_run)
from naiad.ir import Module, Operation, Value, i1, i32

from ..ir.ldmatrix_plan import plan, swizzle_for, to_offsets
from .mma_staged import STAGED_OP
from .prefetch_loads import (NotEligible, check_next, check_slice, drop_dead, in_body,
                             materialize)

COPY_OP = "nvidia.cp_async"
COMMIT_OP = "nvidia.cp_async_commit"
WAIT_OP = "nvidia.cp_async_wait"
RING_OP = "nvidia.mma_ring"
#: bytes of one cp.async, and 16-bit elements in it
CHUNK = 16
CHUNK_ELEMS = 8

register_op(OpDef(COPY_OP, (3, 4), 0, 0, ("offset", "stage_bytes", "cols"), frozenset(),
                  "cp.async of a tile into ring slot `slot`: (ptr, valid i1, slot i32[, mask])"))
register_op(OpDef(COMMIT_OP, 0, 0, 0, (), frozenset(), "cp.async.commit_group"))
register_op(OpDef(WAIT_OP, 0, 0, 0, ("pending",), frozenset(), "cp.async.wait_group pending"))
register_op(OpDef(RING_OP, 2, 1, 0, ("kind", "k", "stage_bytes"), frozenset(),
                  "acc + A @ B read with ldmatrix from ring slot `slot`: (acc, slot i32)"))


def ring_bytes(op: Operation) -> int:
    """The ring's shared memory, claimed by its first writer and by its reader (so the core's
    allocator covers the ring and its barrier pass sees both)."""
    return int(op.attrs.get("ring_bytes", 0))


register_scratch(COPY_OP, ring_bytes)
register_scratch(RING_OP, ring_bytes)


def pipeline_async_copies(module: Module, ctx=None, num_stages: int = 3,
                          shared_limit: int = 227 * 1024) -> bool:
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in list(fn.walk()):
            if op.name == "for":
                stages = int(op.attrs.get("num_stages", num_stages))
                changed |= pipeline_loop(op, stages, shared_limit)
    return changed


def _zero_other(load: Operation) -> bool:
    if len(load.operands) < 3:
        return True
    d = load.operands[2].defining_op
    return d is not None and d.name == "constant" and d.attrs.get("value") == 0


def _copyable(load, mma, body) -> bool:
    d = load
    if d is None or d.name != "load" or d.parent is not body or d.attrs.get("volatile"):
        return False
    if int(d.attrs.get("vec", 1)) * 2 < CHUNK or not _zero_other(d):
        return False
    ptr_t = d.operands[0].type
    if getattr(ptr_t, "layout", None) is None or len(d.results[0].uses) != 1:
        return False
    # every thread's registers come in 16-byte chunks that stay contiguous when swizzled
    ll = linear_of(ptr_t.layout, ptr_t.shape)
    offs = to_offsets(ll, swizzle_for(ptr_t.shape[1]))
    return (ll.in_size("register") % CHUNK_ELEMS == 0 and vector_run(ll, CHUNK_ELEMS)
            == CHUNK_ELEMS and run_length(offs, 2) == CHUNK_ELEMS)


def _arg_deps(values, body) -> list[Value]:
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


def _closure(loads, body) -> list[Value]:
    """Carried values the loads' addresses need, closed under 'next value depends on'."""
    args = _arg_deps([v for ld in loads for v in ld.operands], body)
    i = 0
    while i < len(args):
        for a in _arg_deps([body.terminator.operands[args[i].index - 1]], body):
            if a not in args:
                args.append(a)
        i += 1
    return args


def pipeline_loop(loop: Operation, stages: int, shared_limit: int) -> bool:
    body = loop.regions[0].block
    step = loop.operands[2].defining_op
    if step is None or step.name != "constant" or not isinstance(step.attrs.get("value"), int) \
            or isinstance(step.attrs["value"], bool) or step.attrs["value"] <= 0:
        return False
    if any(o.name in ("store", "atomic_rmw", "atomic_cas", "call") or scratch_bytes(o)
           for o in loop.walk() if o.name != STAGED_OP):
        return False
    mmas = [o for o in body.ops if o.name == STAGED_OP]
    if len(mmas) != 1:
        return False
    mma = mmas[0]
    la, lb = (v.defining_op for v in mma.operands[:2])
    if la is lb or not (_copyable(la, mma, body) and _copyable(lb, mma, body)):
        return False
    (m, k), n = mma.operands[0].type.shape, mma.operands[1].type.shape[1]
    fp = plan(m, n, k, mma.results[0].type.layout.warps_per_cta)
    stage_bytes = (fp.scratch + 127) // 128 * 128
    stages = min(stages, shared_limit // stage_bytes)
    if stages < 2:
        return False
    try:
        for ld in (la, lb):
            check_slice(ld, body, set())
        carried = _closure((la, lb), body)
        for a in carried:
            check_next(a, body, mma)
    except NotEligible:
        return False
    _rewrite(loop, la, lb, mma, fp, stage_bytes, stages, carried)
    return True


def _const(block, anchor, value, ty, loc):
    return block.insert_before(anchor, Operation("constant", [], [ty], {"value": value},
                                                 loc=loc)).result


def _advance(env, body, block, anchor, carried, step, loc):
    """The environment of the next iteration given ``env`` (block args -> values)."""
    iv = body.args[0]
    nxt = {iv: block.insert_before(anchor, Operation("add", [env.get(iv, iv), step],
                                                     [iv.type], loc=loc)).result}
    cache: dict = {}
    for a in carried:
        nxt[a] = materialize(body.terminator.operands[a.index - 1], body, env, block, anchor,
                              cache)
    return nxt


def _copies(loads, env, body, block, anchor, valid, slot, fp, stage_bytes, loc):
    for ld, offset, cols in zip(loads, (0, fp.b_offset), (loads[0].results[0].type.shape[1],
                                                        loads[1].results[0].type.shape[1])):
        cache: dict = {}
        ops = [materialize(v, body, env, block, anchor, cache) for v in ld.operands[:2]]
        block.insert_before(anchor, Operation(COPY_OP, [ops[0], valid, slot] + ops[1:2], [],
                                              {"offset": offset, "stage_bytes": stage_bytes,
                                               "cols": cols}, loc=loc))
    block.insert_before(anchor, Operation(COMMIT_OP, [], [], {}, loc=loc))


def _rewrite(loop, la, lb, mma, fp, stage_bytes, stages, carried):
    body = loop.regions[0].block
    lbv, ub, step = loop.operands[:3]
    iv = body.args[0]
    outer = loop.parent
    loc = loop.loc
    loads = (la, lb)

    # prologue: tiles 0..S-2 into slots 0..S-2
    env = {iv: lbv}
    env.update({a: init for a, init in zip(body.args[1:], loop.operands[3:])})
    for s in range(stages - 1):
        if s:
            env = _advance(env, body, outer, loop, carried, step, loc)
        valid = outer.insert_before(loop, Operation("cmp", [env[iv], ub], [i1], {"pred": "lt"},
                                                    loc=loc)).result
        _copies(loads, env, body, outer, loop, valid, _const(outer, loop, s, i32, loc), fp,
                stage_bytes, loc)
    # the first copy claims the ring (its registered scratch size is ``ring_bytes``), so
    # the core's barrier pass separates it from earlier shared-memory users
    first_copy = [o for o in outer.ops if o.name == COPY_OP][0]
    first_copy.attrs["ring_bytes"] = stages * stage_bytes

    # the slot counter: read slot i % S is carried; write slot is (i - 1) % S
    slot = body.add_arg(i32, "slot")
    loop.add_operand(_const(outer, loop, 0, i32, loc))
    loop.results.append(Value(i32, loop, len(loop.results)))

    body.insert_before(mma, Operation(WAIT_OP, [], [], {"pending": stages - 2}, loc=loc))
    body.insert_before(mma, Operation("barrier", loc=loc))
    zero = _const(body, mma, 0, i32, loc)
    last = _const(body, mma, stages - 1, i32, loc)
    one = _const(body, mma, 1, i32, loc)
    is0 = body.insert_before(mma, Operation("cmp", [slot, zero], [i1], {"pred": "eq"},
                                            loc=loc)).result
    dec = body.insert_before(mma, Operation("sub", [slot, one], [i32], loc=loc)).result
    wslot = body.insert_before(mma, Operation("select", [is0, last, dec], [i32], loc=loc)).result
    env = {}
    for _ in range(stages - 1):
        env = _advance(env, body, body, mma, carried, step, loc)
    valid = body.insert_before(mma, Operation("cmp", [env[iv], ub], [i1], {"pred": "lt"},
                                              loc=loc)).result
    _copies(loads, env, body, body, mma, valid, wslot, fp, stage_bytes, loc)
    ring = Operation(RING_OP, [mma.operands[2], slot], [mma.results[0].type],
                     {"kind": mma.attrs["kind"], "k": la.results[0].type.shape[1],
                      "stage_bytes": stage_bytes, "ring_bytes": stages * stage_bytes}, loc=mma.loc)
    body.insert_before(mma, ring)
    ring.result.name_hint = mma.results[0].name_hint
    # next read slot
    inc = body.insert_before(mma, Operation("add", [slot, one], [i32], loc=loc)).result
    wrap = body.insert_before(mma, Operation("cmp", [slot, last], [i1], {"pred": "eq"},
                                             loc=loc)).result
    nslot = body.insert_before(mma, Operation("select", [wrap, zero, inc], [i32],
                                              loc=loc)).result
    body.terminator.add_operand(nslot)
    mma.results[0].replace_all_uses_with(ring.result)
    mma.erase()
    la.erase()
    lb.erase()
    drop_dead(body)
    after = outer.ops[outer.ops.index(loop) + 1]
    outer.insert_before(after, Operation(WAIT_OP, [], [], {"pending": 0}, loc=loc))
