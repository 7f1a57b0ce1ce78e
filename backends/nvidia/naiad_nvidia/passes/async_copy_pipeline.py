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
a constant 0, and no other shared-memory user in the loop. Anything else keeps the fallback,
with a performance remark (:mod:`naiad.remarks`) saying why.

Hopper (an mma marked ``wgmma`` by :mod:`naiad_nvidia.passes.accelerate_matmul`): the tiles are stored
in wgmma's swizzled panels (:mod:`naiad_nvidia.ir.wgmma_smem`), each iteration fences the
copies for the async proxy (``fence.proxy.async``) before its barrier, and ``nvidia.wgmma_ring``
multiplies straight from the slot. When the accumulator is carried by the loop untouched, the
wgmma of iteration i is left running (``wgmma.wait_group 1``, ``lag = 1``) and a
``nvidia.wgmma_wait`` after the loop finishes the last one. The slot the next copies overwrite
was read by the wgmma of iteration i-1, so those copies must wait until every warpgroup has
waited for it. Two schedules do that:

* early copies: the copies go before the wgmma (one barrier per iteration) and the ring has
  one more slot than ``num_stages``, rewritten two iterations after its wgmma was issued;
* late copies: the copies follow the wgmma, its ``wait_group 1`` and a second barrier; the ring
  has ``num_stages`` slots, Triton's shared-memory footprint for the same config.

float8 tiles (kinds ``e4m3``/``e5m2``, 16 one-byte elements per copy) go through the same
ring; wgmma reads their B only K-major, so B must be K-contiguous in global memory (a transposed
view, as Triton's tutorial passes it) and is copied into a K-major panel. tf32 tiles (4-byte
elements) too: wgmma reads a 32-bit B only K-major, and a B that is N-contiguous in global
memory (the usual row-major ``[K, N]``) is copied one element per 4-byte ``cp.async.ca`` into
its K-major panel (what Triton does on Hopper), rather than stored transposed from registers.

Early copies are used unless the extra slot does not fit, or costs a CTA per SM that late
copies would keep (:func:`prefer_late_copies`; measured on the H200: early copies are up to 10%
faster at equal occupancy, late copies up to 10% faster when they add a CTA per SM), or the
accumulator alone is over the register budget (4-warp 128x256: fewer spills in the K loop).

In general, with prefetch distance ``D = num_stages - 1``, the ring has ``S = D + 1 (+ 1 for
early copies with lag 1)`` slots, and iteration i writes tile ``i + D`` into slot ``(i + D) % S``.

When both operands are tensor-descriptor loads with a tensor map, the same ring is filled by
TMA instead (:mod:`naiad_nvidia.passes.tma_ring`). A loop holding several wgmma dots
(attention) gets the ring's multi-dot form, :mod:`naiad_nvidia.passes.multi_dot_ring`: only
B tiles in the slots, each dot waiting for its own.
"""
from __future__ import annotations

import sys

from naiad.backend import (OpDef, linear_of, loop_pipelining, register_op, register_scratch,
                           remarks, run_length, scratch_bytes, vector_run)
from naiad.ir import Module, Operation, Value, i1, i32

from ..ir.tma_op import MBARRIER_BYTES, TMA_INIT_OP, TMA_RELEASE_OP, TMA_WAIT_OP
from ..ir.wgmma_op import FENCE_ASYNC_OP, WGMMA_RING_OP, WGMMA_WAIT_OP
from ..ir.wgmma_op import PROMOTE_ATTR
from ..ir.wgmma_smem import KIND_BYTES, OperandTile, WgmmaStage
from ..ir.ldmatrix_plan import plan, swizzle_for, to_offsets
from .mma_staged import STAGED_OP, stage_for_wgmma
from .wgmma_operands import a_source_is_resident, remark_serializing_calls
from .wgmma_order import ACCUMULATOR_BUDGET
from .prefetch_loads import insert_constant as _const, next_iteration_env as _advance
from .prefetch_loads import carried_dependencies as _arg_deps, zero_other
from .prefetch_loads import (NotEligible, check_next, check_slice, drop_dead, in_body,
                             materialize)
from . import multi_dot_ring, tma_ring

COPY_OP = "nvidia.cp_async"
COMMIT_OP = "nvidia.cp_async_commit"
WAIT_OP = "nvidia.cp_async_wait"
RING_OP = "nvidia.mma_ring"
#: shared memory of one SM (H100/H200), and what the driver reserves per CTA on sm_90
SM_SHARED = 228 * 1024
CTA_RESERVED = 1024
#: registers of one SM, and the estimate of a thread's registers beside its accumulators
SM_REGISTERS = 65536
REGISTERS_BESIDE_ACC = 48
#: the same beside a TMA ring: thread 0 issues the copies, so the other threads keep no copy
#: addresses or masks (ptxas gives the tutorials' TMA matmuls 26 registers beside the
#: accumulator, their cp.async twins 56 to 104)
TMA_REGISTERS_BESIDE_ACC = 32
#: bytes of one cp.async
CHUNK = 16
#: bytes of one cp.async per element (cp.async.ca, for a 4-byte B stored transposed)
ELEMENT_CHUNK = 4

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
register_scratch(WGMMA_RING_OP, ring_bytes)
register_scratch(TMA_INIT_OP, ring_bytes)


def pipeline_async_copies(module: Module, ctx=None, num_stages: int = 3,
                          shared_limit: int = 227 * 1024) -> bool:
    changed = False
    for op in loop_pipelining.kernel_loops(module):
        stages = int(op.attrs.get("num_stages", num_stages))
        changed |= pipeline_loop(op, stages, shared_limit, module)
    return changed


def tile_offsets(ll, wgmma: bool, elem_bytes: int = 2, k_major_b: bool = False):
    """Element offsets of a tile's registers in its ring slot: wgmma's panels (a B tile
    ``k x n`` stored transposed, K-major, when ``k_major_b``), or the ldmatrix swizzle."""
    rows, cols = ll.out_shape
    if k_major_b:
        return OperandTile(cols, rows, "K", elem_bytes).offsets(ll, transposed=True)
    if wgmma:
        return OperandTile(rows, cols, "K", elem_bytes).offsets(ll)
    return to_offsets(ll, swizzle_for(cols))


def _check_copyable(load, body, wgmma: bool, which: str, k_major_b: bool = False) -> int:
    """The bytes each cp.async of ``load`` moves: 16, or 4 for a 4-byte B stored K-major that
    is not K-contiguous (tf32 with a row-major B: one copy per element, as wgmma reads a
    32-bit B only K-major). Raise NotEligible (with the reason) when it cannot be copied."""
    d = load
    if d is None or d.name != "load" or d.parent is not body:
        raise NotEligible(f"operand {which} is not loaded directly in the loop body")
    if d.attrs.get("volatile"):
        raise NotEligible(f"the load of {which} is volatile")
    if not zero_other(d):
        raise NotEligible(f"the load of {which} has an `other` value that is not 0")
    ptr_t = d.operands[0].type
    if getattr(ptr_t, "layout", None) is None or len(d.results[0].uses) != 1:
        raise NotEligible(f"the loaded {which} tile has other users than the dot")
    size = d.results[0].type.element.itemsize
    ll = linear_of(ptr_t.layout, ptr_t.shape)
    if _whole_chunks(d, ll, wgmma, size, k_major_b):
        return CHUNK
    if k_major_b and size == ELEMENT_CHUNK:
        return ELEMENT_CHUNK
    chunk_elems = CHUNK // size
    if int(d.attrs.get("vec", 1)) * size < CHUNK:
        along = "K" if k_major_b else "its rows"
        raise NotEligible(f"the load of {which} moves {int(d.attrs.get('vec', 1)) * size}-byte "
                          f"vectors, not 16-byte ones (its row stride is not known to be a "
                          f"multiple of {chunk_elems}, or a thread holds fewer than "
                          f"{chunk_elems} consecutive elements along {along})")
    what = ("16-byte chunks along K (B is not K-contiguous in memory; wgmma reads a "
            f"{size}-byte B only K-major)" if k_major_b else "16-byte chunks")
    raise NotEligible(f"the {which} tile's layout does not give each thread whole {what}")


def _whole_chunks(load, ll, wgmma: bool, size: int, k_major_b: bool) -> bool:
    """Every thread's registers come in 16-byte vectors (``vec``) that stay contiguous where
    the ring slot stores them (swizzled)."""
    chunk_elems = CHUNK // size
    if int(load.attrs.get("vec", 1)) * size < CHUNK:
        return False
    offs = tile_offsets(ll, wgmma, size, k_major_b)
    return (ll.in_size("register") % chunk_elems == 0 and vector_run(ll, chunk_elems)
            == chunk_elems and run_length(offs, size) == chunk_elems)


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


class RingPlan:
    """How one K loop is pipelined: the loads, the mma, slot geometry and schedule."""

    def __init__(self, la, lb, mma, carried, stage_bytes, b_offset, distance, lag, wgmma,
                 late_copies=False, elem_bytes=2, k_major_b=False, tma=None,
                 b_chunk=CHUNK):
        self.la, self.lb, self.mma, self.carried = la, lb, mma, carried
        self.stage_bytes, self.b_offset = stage_bytes, b_offset
        self.distance, self.lag, self.wgmma = distance, lag, wgmma
        self.late_copies = late_copies
        #: bytes per element of A and B; B copied into a K-major panel (float8 on wgmma)
        self.elem_bytes, self.k_major_b = elem_bytes, k_major_b
        #: bytes per cp.async of B: 16, or 4 when B is copied element by element (tf32 whose
        #: B is not K-contiguous, stored K-major)
        self.b_chunk = b_chunk
        #: the operands TMA moves (:class:`~naiad_nvidia.passes.tma_ring.TmaOperands`) or None
        self.tma = tma

    @property
    def bar_offset(self) -> int:
        """Byte offset of the TMA ring's mbarriers (one per slot, after the slots)."""
        return self.slots * self.stage_bytes

    @property
    def ring_bytes(self) -> int:
        return self.bar_offset + (MBARRIER_BYTES * self.slots if self.tma else 0)

    @property
    def extra_slots(self) -> int:
        return self.lag and not self.late_copies

    @property
    def slots(self) -> int:
        return self.distance + 1 + self.extra_slots


def _carried_accumulator(mma, body) -> int | None:
    """Index ``j`` of the loop result the mma's accumulator is carried in, when it is carried
    untouched (block arg ``j + 1`` feeds only the mma, the mma feeds only yield operand j)."""
    acc = mma.operands[2]
    uses = mma.results[0].uses
    if not (acc.is_block_arg and acc.owner is body and len(acc.uses) == 1 and len(uses) == 1):
        return None
    user, idx = uses[0]
    if user is not body.terminator or idx != acc.index - 1:
        return None
    return idx


def ctas_per_sm(shared_bytes: int, registers: int, threads: int) -> int:
    regs = min(255, (registers + 7) // 8 * 8)
    return min(SM_SHARED // (shared_bytes + CTA_RESERVED), SM_REGISTERS // (regs * threads))


def prefer_late_copies(stage_bytes: int, stages: int, shared_limit: int, acc_shape,
                       warps: int, beside_acc: int = REGISTERS_BESIDE_ACC) -> bool:
    """Late copies (see the module doc) when early ones' extra slot does not fit in shared
    memory or lowers the CTAs per SM (registers estimated from the accumulator plus
    ``beside_acc``), or when the accumulator alone exceeds the register budget
    (:mod:`naiad_nvidia.passes.wgmma_order`)."""
    if (stages + 1) * stage_bytes > shared_limit:
        return True
    m, n = acc_shape
    threads = 32 * warps
    if m * n // threads > ACCUMULATOR_BUDGET:
        # the accumulator is partly in local memory whatever the schedule: early copies keep
        # their addresses live across the wgmma chain while ptxas swaps accumulator blocks
        # (4-warp 128x256x32: 128 spill stores in the K loop early, 96 late; Triton's 88)
        return True
    registers = m * n // threads + beside_acc
    return (ctas_per_sm(stages * stage_bytes, registers, threads)
            > ctas_per_sm((stages + 1) * stage_bytes, registers, threads))


def plan_loop(loop: Operation, stages: int, shared_limit: int) -> RingPlan | None:
    """The ring for ``loop``, None when it holds no staged mma; raises NotEligible(reason)."""
    body = loop.regions[0].block
    mmas = [o for o in body.ops if o.name == STAGED_OP]
    dots = [o for o in body.ops if o.name in (STAGED_OP, "nvidia.mma")]
    if len(dots) > 1 and (mmas or any(d.attrs.get("wgmma") for d in dots)):
        return multi_dot_ring.plan_multi(loop, dots, stages, shared_limit)
    if not mmas:
        return None
    mma = mmas[0]
    step = loop.operands[2].defining_op
    if step is None or step.name != "constant" or not isinstance(step.attrs.get("value"), int) \
            or isinstance(step.attrs["value"], bool) or step.attrs["value"] <= 0:
        raise NotEligible("the loop step is not a positive constant")
    for o in loop.walk():
        if o.name in ("store", "atomic_rmw", "atomic_cas", "atomic_poll", "call"):
            raise NotEligible(f"the loop also has a {o.name}")
        if o.name != STAGED_OP and scratch_bytes(o):
            raise NotEligible(f"the loop has another shared-memory user ({o.name})")
    wgmma = bool(mma.attrs.get("wgmma"))
    kind = mma.attrs["kind"]
    (m, k), n = mma.operands[0].type.shape, mma.operands[1].type.shape[1]
    k_major_b = wgmma and not WgmmaStage(m, n, k, kind).b_mn_major
    tma = tma_ring.tma_operands(mma, body) if wgmma else None
    b_chunk = CHUNK
    if tma is not None:
        la, lb = tma.a.load, tma.b.load
        sliced = tma.accesses
        shared_limit -= MBARRIER_BYTES * (stages + 1)   # the slots' mbarriers
    else:
        la, lb = (v.defining_op for v in mma.operands[:2])
        if la is lb:
            raise NotEligible("A and B are the same load")
        _check_copyable(la, body, wgmma, "A")
        b_chunk = _check_copyable(lb, body, wgmma, "B", k_major_b)
        sliced = (la, lb)
    if wgmma:
        ws = WgmmaStage(m, n, k, kind, tma is not None and tma.b_k_major)
        stage_bytes, b_offset = ws.bytes, ws.b_offset
        lag = 1 if _carried_accumulator(mma, body) is not None else 0
    else:
        fp = plan(m, n, k, mma.results[0].type.layout.warps_per_cta)
        stage_bytes, b_offset, lag = (fp.scratch + 127) // 128 * 128, fp.b_offset, 0
    # a TMA ring carried across tiles shares shared memory with the epilogue's store buffer
    reserve = tma_ring.epilogue_reserve(loop) if tma is not None else 0
    late = bool(lag) and prefer_late_copies(stage_bytes, stages, shared_limit - reserve,
                                            mma.results[0].type.shape,
                                            mma.results[0].type.layout.warps_per_cta[0],
                                            REGISTERS_BESIDE_ACC if tma is None
                                            else TMA_REGISTERS_BESIDE_ACC)
    distance = min(stages - 1, shared_limit // stage_bytes - 1 - (lag and not late))
    if distance < 1:
        raise NotEligible(f"num_stages={stages} leaves no tile to prefetch"
                          if stages < 2 else
                          f"two {stage_bytes}-byte stages do not fit in shared memory")
    try:
        for ld in sliced:
            check_slice(ld, body, set())
        carried = _closure(sliced, body)
        for a in carried:
            check_next(a, body, mma)
    except NotEligible as e:
        raise NotEligible(f"the next tile's address depends on `{e}` computed in the loop "
                          f"after the dot") from None
    return RingPlan(la, lb, mma, carried, stage_bytes, b_offset, distance, lag, wgmma, late,
                    KIND_BYTES[kind], k_major_b, tma, b_chunk)


def pipeline_loop(loop: Operation, stages: int, shared_limit: int, module=None) -> bool:
    try:
        rp = plan_loop(loop, stages, shared_limit)
    except NotEligible as e:
        if module is not None:
            _remark_declined(module, loop, str(e))
        return False
    if rp is None:
        return False
    if isinstance(rp, multi_dot_ring.MultiRingPlan):
        multi_dot_ring.rewrite_multi(loop, rp, sys.modules[__name__], module)
        return True
    _rewrite(loop, rp)
    return True


def _remark_declined(module, loop, reason: str) -> None:
    body = loop.regions[0].block
    for mma in [o for o in body.ops if o.name in (STAGED_OP, "nvidia.mma")]:
        if mma.attrs.get("wgmma"):
            # place_staged_wgmma says how it computes the dot instead, and why
            mma.attrs["ring_declined"] = reason
            continue
        if mma.name != STAGED_OP:
            continue
        fallback = "reads them through a register prefetch"
        remarks.remark(module, mma.loc, "dot", f"does not pipeline its A/B tiles through a "
                       f"cp.async ring ({fallback}) because {reason}")


def _copies(rp, env, body, block, anchor, valid, slot, loc):
    if rp.tma is not None:
        tma_ring.emit_copies(rp.tma, rp, env, body, block, anchor, valid, slot, loc)
        return
    for ld, offset in zip((rp.la, rp.lb), (0, rp.b_offset)):
        cache: dict = {}
        ops = [materialize(v, body, env, block, anchor, cache) for v in ld.operands[:2]]
        attrs = {"offset": offset, "stage_bytes": rp.stage_bytes,
                 "cols": ld.results[0].type.shape[1], "wgmma": rp.wgmma}
        if rp.elem_bytes != 2:
            attrs["elem_bytes"] = rp.elem_bytes
        if ld is rp.lb and rp.k_major_b:
            attrs["k_major"] = True
        if ld is rp.lb and rp.b_chunk != CHUNK:
            attrs["chunk_bytes"] = rp.b_chunk
        block.insert_before(anchor, Operation(COPY_OP, [ops[0], valid, slot] + ops[1:2], [],
                                              attrs, loc=loc))
    block.insert_before(anchor, Operation(COMMIT_OP, [], [], {}, loc=loc))


def _rewrite(loop, rp: RingPlan):
    body = loop.regions[0].block
    lbv, ub, step = loop.operands[:3]
    iv = body.args[0]
    outer = loop.parent
    loc = loop.loc
    mma, carried = rp.mma, rp.carried
    slots, distance = rp.slots, rp.distance
    acc_index = _carried_accumulator(mma, body) if rp.lag else None

    # prologue: tiles 0..D-1 into slots 0..D-1
    start = outer.ops.index(loop)
    env = {iv: lbv}
    env.update({a: init for a, init in zip(body.args[1:], loop.operands[3:])})
    for s in range(distance):
        if s:
            env = _advance(env, body, outer, loop, carried, step, loc)
        valid = outer.insert_before(loop, Operation("cmp", [env[iv], ub], [i1], {"pred": "lt"},
                                                    loc=loc)).result
        _copies(rp, env, body, outer, loop, valid, _const(outer, loop, s, i32, loc), loc)
    # the first copy (TMA: the mbarriers' initialisation) claims the ring (its registered
    # scratch size is ``ring_bytes``), so the core's barrier pass separates it from earlier
    # shared-memory users. This loop's own prologue: with two ring loops in one block, the
    # first copy of the block is the earlier loop's (issue 9: a TMA ring loop after another
    # then used mbarriers the earlier loop had invalidated, and hung)
    prologue = outer.ops[start:outer.ops.index(loop)]
    if rp.tma is not None:
        first = [o for o in prologue if o.name == tma_ring.TMA_EXPECT_OP][0]
        outer.insert_before(first, Operation(
            TMA_INIT_OP, [], [], {"slots": slots, "bar_offset": rp.bar_offset,
                                  "ring_bytes": rp.ring_bytes}, loc=loc))
    else:
        first_copy = [o for o in prologue if o.name == COPY_OP][0]
        first_copy.attrs["ring_bytes"] = rp.ring_bytes

    # the slot counter: read slot i % S is carried; write slot is (i + D) % S
    slot = body.add_arg(i32, "slot")
    loop.add_operand(_const(outer, loop, 0, i32, loc))
    loop.results.append(Value(i32, loop, len(loop.results)))

    if rp.tma is not None:   # the mbarrier phase of the read slot, flipped as it wraps
        phase = body.add_arg(i32, "phase")
        loop.add_operand(_const(outer, loop, 0, i32, loc))
        loop.results.append(Value(i32, loop, len(loop.results)))
        body.insert_before(mma, Operation(TMA_WAIT_OP, [slot, phase], [],
                                          {"bar_offset": rp.bar_offset}, loc=loc))
    else:
        body.insert_before(mma, Operation(WAIT_OP, [], [], {"pending": distance - 1}, loc=loc))
        if rp.wgmma:
            body.insert_before(mma, Operation(FENCE_ASYNC_OP, [], [], {}, loc=loc))
    body.insert_before(mma, Operation("barrier", loc=loc))
    k = mma.operands[0].type.shape[1]
    if rp.wgmma:
        ring = Operation(WGMMA_RING_OP, [mma.operands[2], slot], [mma.results[0].type],
                         {"kind": mma.attrs["kind"], "k": k, "stage_bytes": rp.stage_bytes,
                          "pending": rp.lag, "ring_bytes": rp.ring_bytes}, loc=mma.loc)
        if rp.tma is not None and rp.tma.b_k_major:
            ring.attrs["b_k_major"] = True
        if PROMOTE_ATTR in mma.attrs:
            ring.attrs[PROMOTE_ATTR] = mma.attrs[PROMOTE_ATTR]
    else:
        ring = Operation(RING_OP, [mma.operands[2], slot], [mma.results[0].type],
                         {"kind": mma.attrs["kind"], "k": k, "stage_bytes": rp.stage_bytes,
                          "ring_bytes": rp.ring_bytes}, loc=mma.loc)
    if rp.late_copies:  # every warpgroup has waited for the previous wgmma past this barrier
        body.insert_before(mma, ring)
        body.insert_before(mma, Operation("barrier", loc=loc))
    zero = _const(body, mma, 0, i32, loc)
    last = _const(body, mma, slots - 1, i32, loc)
    one = _const(body, mma, 1, i32, loc)
    back = _const(body, mma, slots - distance, i32, loc)
    ahead = _const(body, mma, distance, i32, loc)
    wraps = body.insert_before(mma, Operation("cmp", [slot, back], [i1], {"pred": "ge"},
                                              loc=loc)).result
    down = body.insert_before(mma, Operation("sub", [slot, back], [i32], loc=loc)).result
    up = body.insert_before(mma, Operation("add", [slot, ahead], [i32], loc=loc)).result
    wslot = body.insert_before(mma, Operation("select", [wraps, down, up], [i32],
                                              loc=loc)).result
    env = {}
    for _ in range(distance):
        env = _advance(env, body, body, mma, carried, step, loc)
    valid = body.insert_before(mma, Operation("cmp", [env[iv], ub], [i1], {"pred": "lt"},
                                              loc=loc)).result
    _copies(rp, env, body, body, mma, valid, wslot, loc)
    if not rp.late_copies:
        body.insert_before(mma, ring)
    ring.result.name_hint = mma.results[0].name_hint
    # next read slot
    inc = body.insert_before(mma, Operation("add", [slot, one], [i32], loc=loc)).result
    wrap = body.insert_before(mma, Operation("cmp", [slot, last], [i1], {"pred": "eq"},
                                             loc=loc)).result
    nslot = body.insert_before(mma, Operation("select", [wrap, zero, inc], [i32],
                                              loc=loc)).result
    body.terminator.add_operand(nslot)
    if rp.tma is not None:
        flipped = body.insert_before(mma, Operation("xor", [phase, one], [i32],
                                                    loc=loc)).result
        body.terminator.add_operand(body.insert_before(mma, Operation(
            "select", [wrap, flipped, phase], [i32], loc=loc)).result)
    mma.results[0].replace_all_uses_with(ring.result)
    mma.erase()
    if rp.tma is not None:
        rp.tma.a.erase()
        rp.tma.b.erase()
    else:
        rp.la.erase()
        rp.lb.erase()
    drop_dead(body)
    after = outer.ops[outer.ops.index(loop) + 1]
    if acc_index is not None:  # the last wgmma is still running: wait before any use
        res = loop.results[acc_index]
        wait = Operation(WGMMA_WAIT_OP, [], [res.type], {"pending": 0}, loc=loc)
        outer.insert_before(after, wait)
        res.replace_all_uses_with(wait.result)
        wait.add_operand(res)
    if rp.tma is not None:
        outer.insert_before(after, Operation(TMA_RELEASE_OP, [], [],
                                             {"slots": slots, "bar_offset": rp.bar_offset},
                                             loc=loc))
    else:
        outer.insert_before(after, Operation(WAIT_OP, [], [], {"pending": 0}, loc=loc))


def staged_wgmma_inputs(op: Operation) -> str:
    """How a ``nvidia.wgmma_staged`` gets its operands, for its remark."""
    if op.attrs.get("a_regs"):
        a = "A from registers"
    elif a_source_is_resident(op.operands[0]):
        a = "A stored once before the loop"
    else:
        return "stores them to shared memory each iteration"
    return f"stores B to shared memory each iteration, {a}"


def place_staged_wgmma(module: Module, ctx=None) -> None:
    """Marked dots the ring did not pipeline become ``nvidia.wgmma_staged``: their A and B
    (as loaded, maybe prefetched in registers, or any other register tensors) are stored to
    shared memory for wgmma at each execution."""
    for fn in module.functions.values():
        for op in list(fn.walk()):
            if op.name in (STAGED_OP, "nvidia.mma") and op.attrs.pop("wgmma", None):
                reason = op.attrs.pop("ring_declined", None)
                staged = stage_for_wgmma(op)
                if reason is not None:
                    remarks.remark(module, staged.loc, "dot", "does not pipeline its A/B tiles "
                                   f"through a cp.async ring ({staged_wgmma_inputs(staged)}) "
                                   f"because {reason}")
        remark_serializing_calls(module, fn)

