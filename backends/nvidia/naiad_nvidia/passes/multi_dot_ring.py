"""The cp.async ring of :mod:`naiad_nvidia.passes.async_copy_pipeline` for a loop holding several
wgmma dots -- attention's inner loop (``qk = q @ k.T``, softmax, ``acc += p @ v``).

Why: with two dots per iteration neither dot was pipelined; K and V were loaded into registers
and stored to shared memory each iteration, behind the previous iteration's wgmmas. Here each
iteration copies the B tiles of *all* its dots for iteration ``i + D`` (``D = num_stages - 1``)
straight into one ring slot, and each dot's ``nvidia.wgmma_ring`` reads its B from the slot:

    prologue:  tiles of iterations 0..D-1 -> slots 0..D-1, one commit group per dot's B
    loop i:    wait for group (i, 0); fence.proxy.async; barrier     # dot 0's B landed,
               copy iteration i+D's early tiles into slot (i+D) % S    # slot (i-1) % S free
               wgmma_ring dot 0 (slot i % S)
                 (with dots in flight: dot 0 is issued first, the early copies while it
                  runs, then wgmma_wait for dot 0)
               ... wait for group (i, j); fence; barrier; wgmma_ring dot j ...
               copy iteration i+D's late tiles (read by in-flight dots)
    after:     cp.async.wait_group 0 (and wgmma.wait_group 0 for in-flight results)

(with a barrier before the prologue: a ring loop just before, e.g. attention's causal off-band
loop, may still be read by slower warps)

``S = D + 1`` slots; a synchronous wgmma waits for its own result (``pending = 0``), so after
the first barrier of iteration i no warp still reads its tiles in slot ``(i - 1) % S``. A dot
whose result only flows to the next iteration runs in flight (:mod:`naiad_nvidia.passes.wgmma_async`
says when, and where it is waited for); the tiles it reads are *late*: copied after the
iteration's last dot, past the barrier that follows the synchronous wait retiring it. Each
iteration commits its early tiles' groups first, then its late ones, which fixes each wait's
count. A slot holds each loaded tile once (1024-byte aligned, in the order the dots first read
them; one commit group each),
whether one dot reads it or several -- the backward kernels read ``qT`` as B of ``k @ qT`` and
its transpose as B of ``dsT @ qT.T``: a tile stored ``R x C`` is B = (k x n) K-major when
(n, k) = (R, C) and N-major when (k, n) = (R, C), so each dot picks its ``imm-trans-b``. Each
dot's A must not need the ring: computed in registers in wgmma's A fragment (attention's
``p``), or loop-invariant and stored once in a resident buffer (``q``,
:mod:`naiad_nvidia.passes.wgmma_operands`). A B may be a load or the transposed view
(``trans``) of one; the tile is stored as loaded or transposed, whichever keeps each 16-byte
``cp.async`` chunk contiguous. Other shared-memory users in the loop (the backward's layout
conversions of its 1-D ``m`` and ``Delta`` loads) keep the start of the common scratch; the ring
begins after theirs (1024-byte aligned), and the core's barrier pass orders them as usual.

When every tile is a tensor-descriptor load with a tensor map, TMA fills the slots instead, on
one mbarrier per tile and slot (:mod:`naiad_nvidia.passes.multi_dot_tma`): same schedule, the
``cp.async`` waits become mbarrier waits and the copies ``cp.async.bulk.tensor`` boxes.
"""
from __future__ import annotations

from naiad.backend import linear_of, opdef, run_length, scratch_bytes, vector_run, PURE
from naiad.ir import Operation, Value, i1, i32

from ..ir.mma_op import MMA_OP
from ..ir.wgmma_op import FENCE_ASYNC_OP, WGMMA_RING_OP, WGMMA_WAIT_OP
from ..ir.wgmma_smem import KIND_BYTES, OperandTile, align
from . import multi_dot_tma
from .mma_staged import STAGED_OP
from .tma_ring import access_of
from .prefetch_loads import NotEligible, drop_dead, in_body, materialize, zero_other
from .prefetch_loads import insert_constant as _const, next_iteration_env as _advance
from .prefetch_loads import carried_dependencies as _carried_deps, check_ahead as _check_ahead
from .wgmma_async import in_flight_dots, place_waits
from .wgmma_operands import (RESIDENT_OP, _defined_outside, a_from_registers, resident_a,
                             resident_tile)

#: operand kinds the multi-dot ring copies (16-bit: wgmma transposes B either way)
KINDS = ("f16", "bf16")
CHUNK = 16
_UNSAFE = frozenset({"div", "rem"})


class TileCopy:
    """One loaded tile copied into each slot (one commit group), read by one or more dots."""

    def __init__(self, load, transposed_copy: bool, group: int):
        self.load = load
        #: the copy stores the loaded tile transposed (see :func:`b_storage`)
        self.transposed_copy = transposed_copy
        #: its commit group's index among an iteration's groups
        self.group = group
        self.b_offset = 0
        #: the load's ``descriptor_access`` op when TMA fills the tile
        #: (:mod:`naiad_nvidia.passes.multi_dot_tma`), else None
        self.access = None

    @property
    def bytes(self) -> int:
        rows, cols = self.load.results[0].type.shape
        return align(rows * cols * self.load.results[0].type.element.itemsize)


class DotSlot:
    """One dot of the loop, its A, and the ring tile its B is read from."""

    def __init__(self, dot, load, chain, trans, a, a_regs, transposed_copy):
        self.dot, self.load, self.chain, self.trans = dot, load, chain, trans
        #: the A operand as the wgmma_ring takes it (registers, or the loop-invariant value)
        self.a, self.a_regs = a, a_regs
        self.transposed_copy = transposed_copy
        self.tile: TileCopy | None = None
        #: why cp.async cannot copy B's tile (only TMA can), or None
        self.copy_problem: str | None = None

    @property
    def kind(self) -> str:
        return self.dot.attrs["kind"]

    @property
    def b_k_major(self) -> bool:
        """wgmma reads B K-major (``imm-trans-b = 0``): B (k x n) is stored as an (n x k)
        tile exactly when the copy's orientation differs from B's."""
        return self.transposed_copy != self.trans


class MultiRingPlan:
    def __init__(self, dots, tiles, carried, stage_bytes, distance, base=0):
        self.dots, self.tiles, self.carried = dots, tiles, carried
        self.stage_bytes, self.distance = stage_bytes, distance
        #: the ring's first byte in the common scratch: past the scratch of the loop's other
        #: shared-memory users (the tiles' ``b_offset`` include it)
        self.base = base

    @property
    def tma(self) -> bool:
        """TMA fills the slots (every tile has its descriptor access)."""
        return all(t.access is not None for t in self.tiles)

    @property
    def slots(self) -> int:
        return self.distance + 1

    @property
    def bar_offset(self) -> int:
        """Byte offset of the TMA form's mbarriers (after the slots)."""
        return self.base + self.slots * self.stage_bytes

    @property
    def ring_bytes(self) -> int:
        return self.bar_offset + (multi_dot_tma.barrier_bytes(len(self.tiles), self.slots)
                                  if self.tma else 0)


def copy_offsets(ll, elem_bytes: int, transposed: bool):
    """Element offsets of a loaded tile's registers in its slot: the tile as loaded (``rows x
    cols``) or, when ``transposed``, its transpose, in wgmma's swizzled panels."""
    rows, cols = ll.out_shape
    if transposed:
        return OperandTile(cols, rows, "K", elem_bytes).offsets(ll, transposed=True)
    return OperandTile(rows, cols, "K", elem_bytes).offsets(ll)


def _whole_chunks(ll, offs, elem_bytes: int) -> bool:
    chunk = CHUNK // elem_bytes
    return (ll.in_size("register") % chunk == 0 and vector_run(ll, chunk) == chunk
            and run_length(offs, elem_bytes) == chunk)


def _b_source(dot, body, which: str):
    """(load, ops between it and the dot, B is the load's transpose)."""
    v = dot.operands[1]
    chain = []
    d = v.defining_op
    if dot.name == MMA_OP and d is not None and d.name == "convert_layout":
        chain.append(d)
        v = d.operands[0]
        d = v.defining_op
    trans = False
    if d is not None and d.name == "trans" and d.parent is body:
        chain.append(d)
        trans = True
        v = d.operands[0]
        d = v.defining_op
    if d is None or d.name != "load" or d.parent is not body:
        raise NotEligible(f"B of {which} is not loaded in the loop body")
    for op in chain:
        if len(op.results[0].uses) != 1:
            raise NotEligible(f"the B operand of {which} has other users than the dot")
    if d.attrs.get("volatile"):
        raise NotEligible(f"the load of B of {which} is volatile")
    return d, chain, trans


def _dot_slot(dot, loop, body, which: str) -> DotSlot:
    kind = dot.attrs.get("kind")
    if not dot.attrs.get("wgmma") or kind not in KINDS:
        raise NotEligible("the loop holds more than one dot, and the ring pipelines several "
                          "dots only as f16/bf16 wgmmas")
    load, chain, trans = _b_source(dot, body, which)
    size = KIND_BYTES[kind]
    # what keeps cp.async from copying the tile; TMA (a descriptor load with a map) copies it
    # whatever its register layout, stored as loaded
    copy_problem = None
    if int(load.attrs.get("vec", 1)) * size < CHUNK:
        copy_problem = (f"the load of B of {which} moves "
                        f"{int(load.attrs.get('vec', 1)) * size}-byte vectors, not 16-byte ones")
    if not zero_other(load):
        raise NotEligible(f"the load of B of {which} has an `other` value that is not 0")
    ptr_t = load.operands[0].type
    if getattr(ptr_t, "layout", None) is None:
        raise NotEligible(f"the load of B of {which} has no register layout")
    storage = None if copy_problem else b_storage(linear_of(ptr_t.layout, ptr_t.shape), trans,
                                                  size)
    if storage is None:
        copy_problem = copy_problem or (f"the B tile of {which} does not give each thread "
                                        "whole 16-byte chunks")
        if access_of(load, body) is None:
            raise NotEligible(copy_problem)
        storage = (False, trans)
    a_regs = dot.name == MMA_OP and a_from_registers(dot.operands[0], dot.operands[2], kind)
    a = dot.operands[0]
    if not a_regs:
        d = a.defining_op
        if dot.name == MMA_OP and d is not None and d.name == "convert_layout":
            a = d.operands[0]
        if not (_defined_outside(a, loop) and not a.is_block_arg) and \
                not (a.defining_op is not None and a.defining_op.name == RESIDENT_OP):
            raise NotEligible(f"A of {which} is computed in the loop but not in wgmma's "
                              "register fragment")
    slot = DotSlot(dot, load, chain, trans, a, a_regs, storage[0])
    slot.copy_problem = copy_problem
    return slot


def b_storage(ll, trans: bool, elem_bytes: int):
    """How a loaded tile (register layout ``ll``) is stored as a B operand -- B is the tile, or
    its transpose when ``trans`` -- so that each thread's 16-byte chunks stay whole:
    ``(transposed_copy, b_k_major)``, or None when neither orientation does. B (k x n) is
    stored K-major as an (n x k) panel tile, N-major as a (k x n) one, so the copy transposes
    the loaded tile exactly when the stored orientation differs from the loaded one."""
    for transposed in (False, True):
        if _whole_chunks(ll, copy_offsets(ll, elem_bytes, transposed), elem_bytes):
            return transposed, transposed != trans
    return None


def plan_multi(loop, dots, stages: int, shared_limit: int) -> MultiRingPlan:
    """The ring for a loop with several dots; raises NotEligible(reason)."""
    body = loop.regions[0].block
    if sum(o.name in (STAGED_OP, MMA_OP) for o in loop.walk()) != len(dots):
        # its shared memory (placed later, at the start of the scratch) would meet the ring
        raise NotEligible("a dot of the loop is inside a nested region")
    slots_of = [_dot_slot(d, loop, body, f"dot {i + 1}") for i, d in enumerate(dots)]
    tiles: dict = {}
    for s in slots_of:   # one ring tile per loaded tile, in the order the dots first read them
        if id(s.load) not in tiles:
            tiles[id(s.load)] = TileCopy(s.load, s.transposed_copy, len(tiles))
        s.tile = tiles[id(s.load)]
    tiles = list(tiles.values())
    owned = {id(o) for s in slots_of for o in [s.dot, s.load] + s.chain}
    readers = {id(s.chain[-1] if s.chain else s.dot) for s in slots_of}
    for t in tiles:
        if any(id(user) not in readers for user, _ in t.load.results[0].uses):
            raise NotEligible("a tile loaded for a dot's B has other users than dots")
    others = 0   # the scratch of the loop's other shared-memory users (the backward's 1-D
    for o in loop.walk():   # layout conversions): the ring starts past it
        if o is loop or id(o) in owned:
            continue
        if o.name in ("store", "atomic_rmw", "atomic_cas", "atomic_poll", "call"):
            raise NotEligible(f"the loop also has a {o.name}")
        others = max(others, scratch_bytes(o))
    base = align(others)
    stage_bytes = sum(t.bytes for t in tiles)
    offset = base
    for t in tiles:
        t.b_offset = offset
        offset += t.bytes
    resident = {id(s.a): resident_tile_bytes(s) for s in slots_of if not s.a_regs}
    fn_top = loop
    while fn_top.parent_op is not None:
        fn_top = fn_top.parent_op
    taken = sum(resident_tile(o).bytes for top in fn_top.parent.ops for o in top.walk()
                if o.name == RESIDENT_OP)
    room = shared_limit - taken - sum(resident.values()) - base
    accesses = multi_dot_tma.tile_accesses(tiles, body)
    if accesses is None:
        for s in slots_of:
            if s.copy_problem:
                raise NotEligible(s.copy_problem)
    else:   # the tiles' mbarriers, after the slots
        room -= multi_dot_tma.barrier_bytes(len(tiles), stages)
    distance = min(stages - 1, room // stage_bytes - 1)
    if distance < 1:
        raise NotEligible(f"num_stages={stages} leaves no tile to prefetch" if stages < 2 else
                          f"two {stage_bytes}-byte stages do not fit in shared memory")
    sources = [v for t in tiles for v in t.load.operands]
    if accesses is not None:   # the copies read the accesses' map and offsets
        sources += [v for a in accesses for v in a.operands]
    try:
        _check_ahead(sources, body, dots)
        carried = _carried_deps(sources, body)
        i = 0
        while i < len(carried):
            nxt = body.terminator.operands[carried[i].index - 1]
            _check_ahead([nxt], body, dots)
            for a in _carried_deps([nxt], body):
                if a not in carried:
                    carried.append(a)
            i += 1
    except NotEligible as e:
        raise NotEligible(f"the next tiles' addresses depend on `{e}` computed in the loop "
                          f"after a dot") from None
    # the loop-invariant A tiles get their resident buffers (last: nothing declines after)
    for s in slots_of:
        if not s.a_regs and s.a.defining_op.name != RESIDENT_OP:
            res = resident_a(s.dot, s.a, s.kind)
            if res is None:
                raise NotEligible("the loop-invariant A tiles exceed the resident budget")
            s.a = res
    for t, a in zip(tiles, accesses or [None] * len(tiles)):
        t.access = a
    return MultiRingPlan(slots_of, tiles, carried, stage_bytes, distance, base)


def resident_tile_bytes(s: DotSlot) -> int:
    if s.a.defining_op is not None and s.a.defining_op.name == RESIDENT_OP:
        return 0   # already counted among the function's resident buffers
    m, k = s.a.type.shape
    return OperandTile(m, k, "K", KIND_BYTES[s.kind]).bytes


def _copies(rp: MultiRingPlan, tiles, env, body, block, anchor, valid, slot, loc, ops):
    """One commit group per ring tile of ``tiles``, holding that tile of iteration ``env`` (TMA:
    each tile's boxes completing on its mbarrier)."""
    if rp.tma:
        multi_dot_tma.emit_copies(rp, tiles, env, body, block, anchor, valid, slot, loc)
        return
    for s in tiles:
        cache: dict = {}
        operands = [materialize(v, body, env, block, anchor, cache) for v in s.load.operands[:2]]
        attrs = {"offset": s.b_offset, "stage_bytes": rp.stage_bytes,
                 "cols": s.load.results[0].type.shape[1], "wgmma": True}
        if s.transposed_copy:
            attrs["k_major"] = True
        block.insert_before(anchor, Operation(ops.COPY_OP, [operands[0], valid, slot]
                                              + operands[1:2], [], attrs, loc=loc))
        block.insert_before(anchor, Operation(ops.COMMIT_OP, [], [], {}, loc=loc))


def rewrite_multi(loop, rp: MultiRingPlan, ops, module=None) -> None:
    """Rewrite ``loop`` per the module doc (``ops``: the ring op names' module; ``module``:
    where remarks go)."""
    body = loop.regions[0].block
    lbv, ub, step = loop.operands[:3]
    iv = body.args[0]
    outer = loop.parent
    loc = loop.loc
    distance, slots, groups = rp.distance, rp.slots, len(rp.tiles)

    first_readers, seen = [], set()
    for j, s in enumerate(rp.dots):   # the first reader of a tile waits for its group
        if s.tile.group not in seen:
            seen.add(s.tile.group)
            first_readers.append(j)
    in_flight = in_flight_dots(body, rp.dots, first_readers, module)
    # a tile an in-flight dot reads is copied late: after the iteration's last dot, past the
    # barrier that follows the wait retiring the previous iteration's reads of its slot
    late = {id(rp.dots[j].tile) for j in in_flight}
    early = [t for t in rp.tiles if id(t) not in late]
    rp.tiles = early + [t for t in rp.tiles if id(t) in late]
    for g, t in enumerate(rp.tiles):
        t.group = g

    # an earlier ring loop (attention's causal off-band loop) may still be read by warps
    # behind this one: no prologue copy before every warp is past it
    fence = outer.insert_before(loop, Operation("barrier", loc=loc))
    env = {iv: lbv}
    env.update({a: init for a, init in zip(body.args[1:], loop.operands[3:])})
    for s in range(distance):
        if s:
            env = _advance(env, body, outer, loop, rp.carried, step, loc)
        valid = outer.insert_before(loop, Operation("cmp", [env[iv], ub], [i1], {"pred": "lt"},
                                                    loc=loc)).result
        _copies(rp, rp.tiles, env, body, outer, loop, valid, _const(outer, loop, s, i32, loc),
                loc, ops)
    # this loop's own prologue (an earlier ring loop of the block has one too: the causal
    # forward's off-band loop; anchoring on its copies left this loop's mbarriers
    # uninitialised, invalidated by that loop's release -- the H200 hang of issue 9)
    prologue = outer.ops[outer.ops.index(fence) + 1:outer.ops.index(loop)]
    if rp.tma:
        multi_dot_tma.init_before(rp, prologue, outer, loc)
    else:
        first_copy = [o for o in prologue if o.name == ops.COPY_OP][0]
        first_copy.attrs["ring_bytes"] = rp.ring_bytes

    slot = body.add_arg(i32, "slot")
    loop.add_operand(_const(outer, loop, 0, i32, loc))
    loop.results.append(Value(i32, loop, len(loop.results)))
    phase = None
    if rp.tma:   # the mbarrier phase of the read slot, flipped as it wraps
        phase = body.add_arg(i32, "phase")
        loop.add_operand(_const(outer, loop, 0, i32, loc))
        loop.results.append(Value(i32, loop, len(loop.results)))

    rings = []
    for j, s in enumerate(rp.dots):
        dot = s.dot
        if j in first_readers:
            # groups committed after this tile's: the later tiles of its iteration, D - 1
            # iterations ahead, and the early tiles of iteration i + D once dot 0 copied them
            if rp.tma:
                body.insert_before(dot, multi_dot_tma.wait(rp, s.tile, slot, phase, loc))
            else:
                g = s.tile.group
                pending = groups * distance - g - 1 + (len(early) if j else 0)
                body.insert_before(dot, Operation(ops.WAIT_OP, [], [], {"pending": pending},
                                                  loc=loc))
                body.insert_before(dot, Operation(FENCE_ASYNC_OP, [], [], {}, loc=loc))
            body.insert_before(dot, Operation("barrier", loc=loc))
        # with dots in flight, dot 0 waits for its result after the early copies, so they are
        # issued while it runs (they write the slot its previous iteration read, retired then)
        overlap = j == 0 and bool(in_flight) and 0 not in in_flight
        if j == 0 and not overlap:
            ahead, valid, wslot, nslot = _copy_ahead(rp, early, body, dot, slot, iv, ub, step,
                                                     ops, loc)
        (m, k), n = dot.operands[0].type.shape, dot.operands[1].type.shape[1]
        attrs = {"kind": s.kind, "k": k, "stage_bytes": rp.stage_bytes, "pending": 0,
                 "ring_bytes": rp.ring_bytes, "b_offset": s.tile.b_offset}
        if s.b_k_major:
            attrs["b_k_major"] = True
        if s.a_regs:
            attrs["a_regs"] = True
        if j in in_flight or overlap:
            attrs["in_flight"] = True
        ring = Operation(WGMMA_RING_OP, [dot.operands[2], slot, s.a], [dot.results[0].type],
                         attrs, loc=dot.loc)
        body.insert_before(dot, ring)
        rings.append(ring)
        ring.result.name_hint = dot.results[0].name_hint
        result = ring.result
        if overlap:
            ahead, valid, wslot, nslot = _copy_ahead(rp, early, body, dot, slot, iv, ub, step,
                                                     ops, loc)
            wait = body.insert_before(dot, Operation(WGMMA_WAIT_OP, [ring.result],
                                                     [ring.result.type], {"pending": 0},
                                                     loc=dot.loc))
            result = wait.result
        dot.results[0].replace_all_uses_with(result)
    if len(early) < groups:   # while the last dot runs
        anchor = body.ops[body.ops.index(rp.dots[-1].dot) + 1]
        _copies(rp, rp.tiles[len(early):], ahead, body, body, anchor, valid, wslot, loc, ops)
    body.terminator.add_operand(nslot)
    if rp.tma:
        term = body.terminator
        last = _const(body, term, slots - 1, i32, loc)
        one = _const(body, term, 1, i32, loc)
        wrap = body.insert_before(term, Operation("cmp", [slot, last], [i1], {"pred": "eq"},
                                                  loc=loc)).result
        flipped = body.insert_before(term, Operation("xor", [phase, one], [i32],
                                                     loc=loc)).result
        term.add_operand(body.insert_before(term, Operation(
            "select", [wrap, flipped, phase], [i32], loc=loc)).result)
    for s in rp.dots:
        s.dot.erase()
        for o in s.chain:
            o.erase()
    for t in rp.tiles:
        t.load.erase()
        if t.access is not None:
            t.access.erase()
    place_waits(loop, rings, in_flight, loc)
    drop_dead(body)
    after = outer.ops[outer.ops.index(loop) + 1]
    outer.insert_before(after, multi_dot_tma.release(rp, loc) if rp.tma else
                        Operation(ops.WAIT_OP, [], [], {"pending": 0}, loc=loc))


def _copy_ahead(rp: MultiRingPlan, tiles, body, anchor, slot, iv, ub, step, ops, loc):
    """Before ``anchor``: copy iteration ``i + D``'s ``tiles`` into slot ``(i + D) % S =
    (i - 1) % S``; returns (the env of iteration i + D, its in-range flag, that slot, the next
    iteration's slot)."""
    slots = rp.slots
    zero = _const(body, anchor, 0, i32, loc)
    last = _const(body, anchor, slots - 1, i32, loc)
    one = _const(body, anchor, 1, i32, loc)
    wraps = body.insert_before(anchor, Operation("cmp", [slot, zero], [i1], {"pred": "eq"},
                                                 loc=loc)).result
    down = body.insert_before(anchor, Operation("sub", [slot, one], [i32], loc=loc)).result
    wslot = body.insert_before(anchor, Operation("select", [wraps, last, down], [i32],
                                                 loc=loc)).result
    ahead = {}
    for _ in range(rp.distance):
        ahead = _advance(ahead, body, body, anchor, rp.carried, step, loc)
    valid = body.insert_before(anchor, Operation("cmp", [ahead[iv], ub], [i1], {"pred": "lt"},
                                                 loc=loc)).result
    _copies(rp, tiles, ahead, body, body, anchor, valid, wslot, loc, ops)
    inc = body.insert_before(anchor, Operation("add", [slot, one], [i32], loc=loc)).result
    wrap = body.insert_before(anchor, Operation("cmp", [slot, last], [i1], {"pred": "eq"},
                                                loc=loc)).result
    nslot = body.insert_before(anchor, Operation("select", [wrap, zero, inc], [i32],
                                                 loc=loc)).result
    return ahead, valid, wslot, nslot
