"""GPU-IR pass ``pipeline_fma_dots``: the K loop of a dot left on FMAs (fp32 with
``input_precision="ieee"``, a small tile, tensor cores off) copies its A/B tiles global ->
shared with ``cp.async`` into a ring of ``num_stages`` slots, as the tensor-core ring does.

Why: the core's FMA dot stores its loaded operands to shared memory and reads them back in the
dot_operand layout. Written as is, each iteration loads its tiles into registers, waits for
them (the whole global latency, nothing to overlap it), stores them, and needs two barriers;
Triton's FMA matmul was 1.1x faster on the H200 (fp32 ieee 2048^3). With the ring::

    prologue: copy tiles 0..S-2 into slots 0..S-2 (one commit group each, under "exists")
    loop i:   cp.async.wait_group S-2; barrier     # tile i landed; slot (i-1)%S read by all
              copy tile i+S-1 into slot (i+S-1)%S; commit
              nvidia.fma_ring(acc, slot i%S)       # the core's FMA loop, operands from the slot
    after:    cp.async.wait_group 0

The slots hold A and B row-major (what the core's FMA dot reads; its shared loads are as wide
as the dot_operand layout's K (A) or N (B) runs, 16 bytes for fp32 4x4 accumulator blocks).
No registers hold a tile in flight, so the register count stays the unpipelined loop's.

Eligible: a ``for`` loop with a positive constant step, no memory writes, exactly one rank-2
core ``dot`` and no other shared-memory user, whose A and B are two different non-volatile
loads of the body used only by the dot, with ``other`` absent or 0 (the zero fill of masked
chunks reproduces it), each thread's elements in whole 16-byte chunks (``vec`` * element
bytes >= 16, so a mask is constant per chunk), and addresses computable ahead
(:mod:`naiad.backend.loop_pipelining`). ``num_stages`` < 2 (option or ``tl.range``) leaves
the loop as written. A loop that holds a dot but does not qualify gets a performance remark.
"""
from __future__ import annotations

from naiad.backend import (OpDef, linear_of, loop_pipelining, register_op, register_scratch,
                           remarks, run_length, scratch_bytes, vector_run)
from naiad.ir import Module, Operation, i1, i32

from .async_copy_pipeline import CHUNK, COMMIT_OP, COPY_OP, WAIT_OP, ring_bytes
from .prefetch_loads import zero_other

FMA_RING_OP = "nvidia.fma_ring"
#: slot alignment (bytes)
SLOT_ALIGN = 128

register_op(OpDef(FMA_RING_OP, 2, 1, 0, ("k", "elem", "b_offset", "stage_bytes"), frozenset(),
                  "acc + A @ B by FMAs, A and B row-major in ring slot `slot`: (acc, slot i32)"))
register_scratch(FMA_RING_OP, ring_bytes)


class NotEligible(Exception):
    """Why a loop's FMA dot is left unpipelined."""


def pipeline_fma_dots(module: Module, ctx=None, num_stages: int = 3,
                      shared_limit: int = 227 * 1024) -> bool:
    changed = False
    for op in loop_pipelining.kernel_loops(module):
        stages = int(op.attrs.get("num_stages", num_stages))
        changed |= pipeline_loop(op, stages, shared_limit, module)
    return changed


def _aligned(n: int, to: int) -> int:
    return -(-n // to) * to


class FmaRing:
    """One loop's ring: the dot, its two loads, slot geometry and the carried values the
    loads' addresses need."""

    def __init__(self, dot, la, lb, carried, b_offset, stage_bytes, distance):
        self.dot, self.la, self.lb, self.carried = dot, la, lb, carried
        self.b_offset, self.stage_bytes, self.distance = b_offset, stage_bytes, distance

    @property
    def slots(self) -> int:
        return self.distance + 1

    @property
    def ring_bytes(self) -> int:
        return self.slots * self.stage_bytes


def _check_load(load, body, which: str) -> int:
    """Bytes per element of an operand load the ring can copy; NotEligible otherwise."""
    if load is None or load.name != "load" or load.parent is not body:
        raise NotEligible(f"operand {which} is not loaded directly in the loop body")
    if load.attrs.get("volatile"):
        raise NotEligible(f"the load of {which} is volatile")
    if not zero_other(load):
        raise NotEligible(f"the load of {which} has an `other` value that is not 0")
    if len(load.results[0].uses) != 1:
        raise NotEligible(f"the loaded {which} tile has other users than the dot")
    ptr_t = load.operands[0].type
    size = load.results[0].type.element.itemsize
    chunk = CHUNK // size
    ll = linear_of(ptr_t.layout, ptr_t.shape)
    if not (int(load.attrs.get("vec", 1)) * size >= CHUNK
            and ll.in_size("register") % chunk == 0 and vector_run(ll, chunk) == chunk
            and run_length(ll, size) == chunk):
        raise NotEligible(f"the load of {which} does not give each thread whole 16-byte "
                          f"chunks (it moves {int(load.attrs.get('vec', 1)) * size}-byte "
                          f"vectors)")
    return size


def plan_loop(loop: Operation, stages: int, shared_limit: int) -> FmaRing | None:
    """The ring for ``loop``; None when it holds no FMA dot; NotEligible(reason) otherwise."""
    body = loop.regions[0].block
    dots = [o for o in body.ops if o.name == "dot"]
    if not dots:
        return None
    if len(dots) > 1:
        raise NotEligible(f"the loop holds {len(dots)} dots")
    dot = dots[0]
    if loop_pipelining.constant_step(loop) is None:
        raise NotEligible("the loop step is not a positive constant")
    if loop_pipelining.loop_writes(loop):
        raise NotEligible("the loop writes memory")
    for o in loop.walk():
        if o is not dot and scratch_bytes(o):
            raise NotEligible(f"the loop has another shared-memory user ({o.name})")
    a, b, acc = dot.operands
    if len(acc.type.shape) != 2:
        raise NotEligible("the dot is batched (rank 3)")
    la, lb = a.defining_op, b.defining_op
    if la is lb:
        raise NotEligible("A and B are the same load")
    size = _check_load(la, body, "A")
    if _check_load(lb, body, "B") != size or a.type.scalar != b.type.scalar:
        raise NotEligible("A and B have different element types")
    a_bytes = _aligned(a.type.numel * size, SLOT_ALIGN)
    stage_bytes = _aligned(a_bytes + b.type.numel * size, SLOT_ALIGN)
    distance = min(stages - 1, shared_limit // stage_bytes - 1)
    if distance < 1:
        raise NotEligible(f"two {stage_bytes}-byte stages do not fit in shared memory")
    try:
        carried = loop_pipelining.check_ahead([v for ld in (la, lb) for v in ld.operands],
                                              body, dot)
    except loop_pipelining.NotPipelinable as e:
        raise NotEligible(f"the next tile's address cannot be computed ahead ({e})") from None
    return FmaRing(dot, la, lb, carried, a_bytes, stage_bytes, distance)


def pipeline_loop(loop: Operation, stages: int, shared_limit: int, module=None) -> bool:
    if stages < 2:
        return False
    try:
        ring = plan_loop(loop, stages, shared_limit)
    except NotEligible as e:
        if module is not None:
            dot = next(o for o in loop.regions[0].block.ops if o.name == "dot")
            remarks.remark(module, dot.loc, "dot", "does not pipeline its A/B tiles through "
                           f"a cp.async ring (num_stages {stages}) because {e}")
        return False
    if ring is None:
        return False
    _rewrite(loop, ring)
    return True


def _copies(ring: FmaRing, env, body, block, anchor, valid, slot, loc) -> list[Operation]:
    """cp.async of both tiles of the iteration ``env`` into ``slot``, then a commit."""
    out = []
    for ld, offset in ((ring.la, 0), (ring.lb, ring.b_offset)):
        cache: dict = {}
        ops = [loop_pipelining.materialize(v, body, env, block, anchor, cache)
               for v in ld.operands[:2]]
        t = ld.results[0].type
        attrs = {"offset": offset, "stage_bytes": ring.stage_bytes, "cols": t.shape[1],
                 "elem_bytes": t.element.itemsize, "row_major": True}
        out.append(block.insert_before(anchor, Operation(COPY_OP, [ops[0], valid, slot]
                                                         + ops[1:2], [], attrs, loc=loc)))
    block.insert_before(anchor, Operation(COMMIT_OP, [], [], {}, loc=loc))
    return out


def _rewrite(loop: Operation, ring: FmaRing) -> None:
    lp = loop_pipelining
    body = loop.regions[0].block
    iv = body.args[0]
    outer = loop.parent
    loc = loop.loc
    dot = ring.dot

    # prologue: tiles 0..D-1 into slots 0..D-1
    start = {iv: loop.operands[0]}
    start.update({a: init for a, init in zip(body.args[1:], loop.operands[3:])})
    first = None
    for s in range(ring.distance):
        env = lp.ahead(loop, ring.carried, s, outer, loop, start) if s else start
        valid = lp.iteration_exists(loop, env, outer, loop)
        copies = _copies(ring, env, body, outer, loop, valid,
                         lp.constant(s, i32, outer, loop, loc), loc)
        first = first or copies[0]
    # the first copy claims the ring (its registered scratch size), so the core's barrier
    # pass separates it from earlier shared-memory users
    first.attrs["ring_bytes"] = ring.ring_bytes

    slot = lp.add_carried(loop, lp.constant(0, i32, outer, loop, loc), "slot")
    body.insert_before(dot, Operation(WAIT_OP, [], [], {"pending": ring.distance - 1},
                                      loc=loc))
    body.insert_before(dot, Operation("barrier", loc=loc))

    def const(v):
        return lp.constant(v, i32, body, dot, loc)

    def emit(name, operands, ty=i32, **attrs):
        return body.insert_before(dot, Operation(name, operands, [ty], attrs, loc=loc)).result

    # write slot (i + D) % S = (i - 1) % S
    last = const(ring.slots - 1)
    wslot = emit("select", [emit("cmp", [slot, const(0)], i1, pred="eq"), last,
                            emit("sub", [slot, const(1)])])
    env = lp.ahead(loop, ring.carried, ring.distance, body, dot)
    valid = lp.iteration_exists(loop, env, body, dot)
    _copies(ring, env, body, body, dot, valid, wslot, loc)
    a = dot.operands[0]
    fma = Operation(FMA_RING_OP, [dot.operands[2], slot], [dot.results[0].type],
                    {"k": a.type.shape[1], "elem": a.type.scalar.name,
                     "b_offset": ring.b_offset, "stage_bytes": ring.stage_bytes,
                     "ring_bytes": ring.ring_bytes}, loc=dot.loc)
    body.insert_before(dot, fma)
    fma.result.name_hint = dot.results[0].name_hint
    nslot = emit("select", [emit("cmp", [slot, last], i1, pred="eq"), const(0),
                            emit("add", [slot, const(1)])])
    lp.yield_carried(loop, nslot)
    dot.results[0].replace_all_uses_with(fma.result)
    dot.erase()
    ring.la.erase()
    ring.lb.erase()
    lp.drop_dead(body)
    after = outer.ops[outer.ops.index(loop) + 1]
    outer.insert_before(after, Operation(WAIT_OP, [], [], {"pending": 0}, loc=loc))
