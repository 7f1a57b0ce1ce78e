"""GPU-IR pass: carry a TMA ring (:mod:`naiad_nvidia.passes.tma_ring`) across the tiles of a
persistent loop, so the next tile's first loads are in flight during this tile's epilogue.

Why: a persistent kernel (tutorial 09) loops over output tiles around its K loop. Pipelined
per K loop, the ring restarts at every tile: its mbarriers are initialised and invalidated
around each K loop, the ring drains at the tile's end, and the next tile's prologue copies
wait for the epilogue (its TMA store). With K = 512 and BK = 64 a tile has 8 K steps, so the
restart costs about as much as the steps. After this pass a tile loop reads

    nvidia.tma_init                                  # once per program (resident buffer)
    prologue of the first tile (slots 0..D-1)        # under tile_lb < tile_ub
    for tile (..., slot, phase):
        ... K loop from (slot, phase) -> (slot', phase')
        wgmma_wait; barrier                           # every warp is done with the slots
        prologue of tile + step into slots slot'..slot'+D-1 (mod S), under tile + step < ub
        epilogue (TMA store, any shared-memory user: the ring is not in their buffer)
        yield ..., slot', phase'
    nvidia.tma_store_drain                           # when the stores were deferred
    nvidia.tma_release

The read slot and its mbarrier phase parity are carried from tile to tile, so every slot's
mbarrier completes its phases in order (copies and reads walk the slots in the same cyclic
order, the copies at most ``D`` ahead). The slots the next prologue writes are the ``D`` after
the last slot read, never that one (``S > D``), and the barrier after ``wgmma_wait`` makes
sure no warpgroup still reads any slot.

The ring's shared memory becomes a *resident* buffer (``register_resident_scratch``): it lives
across the epilogue, whose store buffer and layout conversions keep the common scratch
buffer at offset 0. :func:`place_resident_rings` (after the allocator) gives every op of the
ring the buffer's offset as ``ring_base``.

The next tile's addresses are the prologue's, recomputed with the tile loop's induction
variable advanced one step (and carried values advanced); ``div``/``rem`` on that path
(the tile -> (pid_m, pid_n) mapping) divide by 1 where the next tile does not exist, so the
speculative computation cannot trap. Where this does not apply the ring restarts per tile,
with a performance remark at the tile loop saying why.

Where their buffers fit too, the epilogue's TMA stores are deferred
(:func:`defer_epilogue_stores`): the copy of tile i out of shared memory runs on during tile
i+1's K loop, as Triton's persistent loops let it.

TMA loads of tile i+1 are issued before the global stores of tile i: as in Triton's flattened
persistent loops, a kernel that stores into memory a later tile loads through a descriptor
gets no ordering between the two.
"""
from __future__ import annotations

from naiad.backend import loop_pipelining, remarks, resident_scratch_bytes, scratch_bytes
from naiad.ir import Module, Operation, Value, i1, i32

from ..ir.tma_op import (TMA_COPY_OP, TMA_EXPECT_OP, TMA_INIT_OP, TMA_RELEASE_OP,
                         TMA_STORE_DRAIN_OP, TMA_STORE_OP, TMA_WAIT_OP)
from ..ir.wgmma_op import WGMMA_RING_OP, WGMMA_WAIT_OP
from .prefetch_loads import NotEligible, carried_dependencies, check_ahead, drop_dead, in_body
from .prefetch_loads import _hoist_before as hoist_before

#: the cp.async ring's copy op (:mod:`naiad_nvidia.passes.async_copy_pipeline`)
COPY_OP = "nvidia.cp_async"

#: alignment of the resident ring (the core allocator's for resident buffers; 128-byte
#: swizzled panels repeat every 1024 bytes)
RESIDENT_ALIGN = 1024
#: attribute naming the ring an op belongs to, once the ring is resident
RING_ATTR = "resident_ring"


def carry_tma_rings_across_tiles(module: Module, ctx=None, shared_limit: int = 227 * 1024) -> bool:
    """The pass: each TMA ring whose K loop sits in a ``for`` loop is carried across that loop's
    iterations where eligible; else a remark at the tile loop says why it restarts."""
    changed = False
    rings = 0
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        _remark_cp_async_rings(module, fn)
        for init in [o for o in fn.walk() if o.name == TMA_INIT_OP]:
            tiles = _enclosing_loop(init)
            if tiles is None:
                continue
            try:
                if tiles.name != "for":
                    raise NotEligible(f"the tile loop is a `{tiles.name}` loop (only `for` "
                                      f"loops are pipelined across iterations)")
                ring = plan_tiles(tiles, init, fn, shared_limit)
            except NotEligible as e:
                remarks.remark(module, tiles.loc, "loop", f"restarts its TMA ring at every "
                               f"tile (loads of the next tile wait for this tile's epilogue) "
                               f"because {e}")
                continue
            rewrite_tiles(ring, rings)
            defer_epilogue_stores(ring, fn, shared_limit)
            rings += 1
            changed = True
    return changed


def _enclosing_loop(op: Operation) -> Operation | None:
    """The ``for``/``while`` whose body holds ``op`` directly, else None."""
    outer = op.parent_op
    return outer if outer is not None and outer.name in ("for", "while") else None


def _remark_cp_async_rings(module, fn) -> None:
    """A cp.async ring (its first copy claims the ring) in a loop over tiles restarts per
    tile: say so at that loop."""
    for op in fn.walk():
        if op.name != COPY_OP or not op.attrs.get("ring_bytes"):
            continue
        tiles = _enclosing_loop(op)
        if tiles is not None:
            remarks.remark(module, tiles.loc, "loop", "restarts its cp.async ring at every "
                           "tile (loads of the next tile wait for this tile's epilogue) "
                           "because only TMA rings (both dot operands tensor-descriptor loads "
                           "with tensor maps) are carried across tiles")


class TileRing:
    """What carrying one ring across a tile loop needs: the tile loop, the ring's init and
    release, the K loop, the prologue's copy ops and the values they read."""

    def __init__(self, tiles, init, release, kloop, prologue, slices):
        self.tiles, self.init, self.release, self.kloop = tiles, init, release, kloop
        self.prologue, self.slices = prologue, slices

    def anchor(self) -> Operation:
        """The op the next tile's prologue goes before: the one after the K loop and the
        wait for its accumulator."""
        ops = self.kloop.parent.ops
        at = ops.index(self.kloop) + 1
        if ops[at].name == WGMMA_WAIT_OP and ops[at].operands[0].defining_op is self.kloop:
            at += 1
        return ops[at]

    @property
    def slots(self) -> int:
        return int(self.init.attrs["slots"])


def _constant_int(v: Value):
    d = v.defining_op
    if d is not None and d.name == "constant" and isinstance(d.attrs.get("value"), int) \
            and not isinstance(d.attrs["value"], bool):
        return d.attrs["value"]
    return None


def _check_speculable(values, body, stops=()) -> None:
    """The ops of ``body`` computing ``values`` can run a tile ahead (scalar divisions
    allowed: they are guarded when cloned); else NotEligible saying which op."""
    try:
        check_ahead(values, body, stops, guarded_divisions=True)
    except NotEligible as e:
        if str(e) in loop_pipelining.DIVISIONS:
            raise NotEligible("the next tile's addresses divide tensors") from None
        raise NotEligible(f"the next tile's addresses need `{e}`, which cannot be computed "
                          f"ahead of the epilogue") from None


def plan_tiles(tiles: Operation, init: Operation, fn, shared_limit: int) -> TileRing:
    """The plan for carrying ``init``'s ring across ``tiles``; NotEligible(reason) if not."""
    body = tiles.regions[0].block
    ops = body.ops
    at = ops.index(init)
    kloop = next((o for o in ops[at:] if o.name == "for"), None)
    if kloop is None or not any(o.name == TMA_WAIT_OP for o in kloop.regions[0].block.ops):
        raise NotEligible("its K loop is not directly in the tile loop")
    kbody = kloop.regions[0].block
    if [a.name_hint for a in kbody.args[-2:]] != ["slot", "phase"]:
        raise NotEligible("the K loop does not carry the ring's slot and phase last")
    if any(_constant_int(v) != 0 for v in kloop.operands[-2:]):
        raise NotEligible("the K loop's ring does not start at slot 0")
    if sum(o.name == TMA_INIT_OP for o in tiles.walk()) != 1:
        raise NotEligible("the tile loop holds more than one TMA ring")
    kat = ops.index(kloop)
    prologue = [o for o in ops[at:kat] if o.name in (TMA_EXPECT_OP, TMA_COPY_OP)]
    release = next((o for o in ops[kat:] if o.name == TMA_RELEASE_OP), None)
    if release is None:
        raise NotEligible("the ring is not released after its K loop")
    for o in prologue:
        if o.name == TMA_EXPECT_OP and _constant_int(o.operands[1]) is None:
            raise NotEligible("a prologue copy's slot is not a constant")
    slices = [v for o in prologue for v in o.operands]
    _check_speculable(slices, body, stops=(kloop,))
    for arg in carried_dependencies(slices, body):
        _check_speculable([body.terminator.operands[arg.index - 1]], body, stops=(kloop,))
    ring = int(init.attrs["ring_bytes"])
    every = list(fn.walk())
    others = max((scratch_bytes(o) for o in every
                  if o.name not in (TMA_INIT_OP, WGMMA_RING_OP)), default=0)
    others = _aligned(others) + sum(_aligned(resident_scratch_bytes(o)) for o in every)
    if others + ring > shared_limit:
        raise NotEligible(f"its {ring}-byte ring and the other shared memory ({others} bytes, "
                          f"e.g. the epilogue's store buffer) do not fit together in "
                          f"{shared_limit} bytes")
    return TileRing(tiles, init, release, kloop, prologue, slices)


def _exists(iv_next: Value, tiles: Operation, block, anchor, loc) -> Value:
    """``iv_next`` is an iteration of ``tiles`` (``lb < ub`` for the first)."""
    ub, step = tiles.operands[1], tiles.operands[2]
    const_step = _constant_int(step)
    if const_step is not None and const_step > 0:
        return block.insert_before(anchor, Operation("cmp", [iv_next, ub], [i1],
                                                     {"pred": "lt"}, loc=loc)).result
    zero = loop_pipelining.constant(0, step.type, block, anchor, loc)

    def cmp(a, b, pred):
        return block.insert_before(anchor, Operation("cmp", [a, b], [i1], {"pred": pred},
                                                     loc=loc)).result

    def both(a, b, name):
        return block.insert_before(anchor, Operation(name, [a, b], [i1], loc=loc)).result

    up = both(cmp(step, zero, "gt"), cmp(iv_next, ub, "lt"), "and")
    down = both(cmp(step, zero, "lt"), cmp(iv_next, ub, "gt"), "and")
    return both(up, down, "or")


def _emit_prologue(ring: TileRing, env, block, anchor, exists, slot_base, loc) -> list:
    """The prologue's copies for the tile ``env`` describes, before ``anchor``: each copy's
    validity AND-ed with ``exists``, its slot ``slot_base + s`` (mod S) or ``s``. Returns the
    new copy ops."""
    body = ring.tiles.regions[0].block
    cache: dict = {}
    slots = {}
    made = []
    for op in ring.prologue:
        values = [loop_pipelining.materialize(v, body, env, block, anchor, cache, exists)
                  for v in op.operands]
        valid = block.insert_before(anchor, Operation("and", [values[0], exists], [i1],
                                                      loc=loc)).result
        s = _constant_int(op.operands[1])
        if slot_base is not None:
            if s not in slots:
                offset = loop_pipelining.constant(s, i32, block, anchor, loc)
                ahead = block.insert_before(anchor, Operation(
                    "add", [slot_base, offset], [i32], loc=loc)).result
                count = loop_pipelining.constant(ring.slots, i32, block, anchor, loc)
                wraps = block.insert_before(anchor, Operation(
                    "cmp", [ahead, count], [i1], {"pred": "ge"}, loc=loc)).result
                back = block.insert_before(anchor, Operation(
                    "sub", [ahead, count], [i32], loc=loc)).result
                slots[s] = block.insert_before(anchor, Operation(
                    "select", [wraps, back, ahead], [i32], loc=loc)).result
            values[1] = slots[s]
        made.append(block.insert_before(anchor, Operation(op.name, [valid] + values[1:], [],
                                                          dict(op.attrs), loc=op.loc)))
    return made


def rewrite_tiles(ring: TileRing, ring_id: int) -> None:
    tiles, kloop = ring.tiles, ring.kloop
    body = tiles.regions[0].block
    outer = tiles.parent
    loc = tiles.loc
    iv = body.args[0]
    lb, step = tiles.operands[0], tiles.operands[2]
    after = outer.ops[outer.ops.index(tiles) + 1]

    # the mbarriers live for the whole loop: initialised before it, released after it
    for op, block, anchor in ((ring.init, outer, tiles), (ring.release, outer, after)):
        body.ops.remove(op)
        op.parent = None
        block.insert_before(anchor, op)
    ring.init.attrs["resident_bytes"] = ring.init.attrs.pop("ring_bytes")
    ring.init.attrs.pop("scratch", None)

    # the first tile's prologue, before the tile loop
    env0 = {iv: lb}
    env0.update({a: init for a, init in zip(body.args[1:], tiles.operands[3:])})
    first = _exists(lb, tiles, outer, tiles, loc)
    members = [ring.init, ring.release]
    members += _emit_prologue(ring, env0, outer, tiles, first, None, loc)

    # slot and phase carried from tile to tile
    carried = []
    for name, k_index in (("slot", -2), ("phase", -1)):
        arg = body.add_arg(i32, name)
        tiles.add_operand(loop_pipelining.constant(0, i32, outer, tiles, loc))
        tiles.results.append(Value(i32, tiles, len(tiles.results)))
        kloop.set_operand(len(kloop.operands) + k_index, arg)
        body.terminator.add_operand(kloop.results[k_index])
        carried.append(arg)

    # the next tile's prologue, once every warp is done with the slots
    anchor = ring.anchor()
    body.insert_before(anchor, Operation("barrier", loc=loc))
    for arg in carried_dependencies(ring.slices, body):
        hoist_before(body.terminator.operands[arg.index - 1], body, anchor)
    nxt = body.insert_before(anchor, Operation("add", [iv, step], [iv.type], loc=loc)).result
    env1 = {iv: nxt}
    env1.update({a: body.terminator.operands[a.index - 1]
                 for a in carried_dependencies(ring.slices, body)})
    exists = _exists(nxt, tiles, body, anchor, loc)
    members += _emit_prologue(ring, env1, body, anchor, exists, kloop.results[-2], loc)

    for op in ring.prologue:
        op.erase()
    drop_dead(body)
    drop_dead(outer)

    # the ring's shared memory is resident; mark its ops for place_resident_rings
    members += [o for o in kloop.regions[0].block.ops
                if o.name in (TMA_EXPECT_OP, TMA_COPY_OP, TMA_WAIT_OP, WGMMA_RING_OP)]
    for op in members:
        op.attrs[RING_ATTR] = ring_id
        if op.name == WGMMA_RING_OP:
            op.attrs["ring_bytes"] = 0   # not in the common scratch buffer


def place_resident_rings(module: Module, ctx=None) -> None:
    """After the allocator: every op of a resident ring reads its buffer's offset
    (``ring_base``) from the ring's ``nvidia.tma_init`` (``smem_offset``)."""
    for fn in module.functions.values():
        ops = list(fn.walk())
        bases = {o.attrs[RING_ATTR]: int(o.attrs["smem_offset"]) for o in ops
                 if o.name == TMA_INIT_OP and RING_ATTR in o.attrs}
        for o in ops:
            if RING_ATTR in o.attrs:
                o.attrs["ring_base"] = bases[o.attrs[RING_ATTR]]


def _aligned(n: int) -> int:
    return -(-n // RESIDENT_ALIGN) * RESIDENT_ALIGN


def defer_epilogue_stores(ring: TileRing, fn, shared_limit: int) -> bool:
    """Let the TMA stores of the tile loop's epilogue run on during the next tile: each gets
    a buffer of its own (resident), waits for its previous copy out of it before writing it
    again, and one ``nvidia.tma_store_drain`` after the loop waits for the last ones. Only
    where those buffers fit beside the ring and the common scratch; True when done."""
    tiles = ring.tiles
    body = tiles.regions[0].block
    stores = [o for o in body.ops if o.name == TMA_STORE_OP]
    if not stores:
        return False
    ops = list(fn.walk())
    common = max((scratch_bytes(o) for o in ops if o.name != TMA_STORE_OP or o not in stores),
                 default=0)
    resident = sum(_aligned(resident_scratch_bytes(o)) for o in ops)
    extra = sum(_aligned(int(o.attrs["scratch_bytes"])) for o in stores)
    if _aligned(common) + resident + extra > shared_limit:
        return False
    for o in stores:
        o.attrs["resident_bytes"] = o.attrs.pop("scratch_bytes")
        o.attrs.pop("scratch", None)
    outer = tiles.parent
    outer.insert_before(outer.ops[outer.ops.index(tiles) + 1],
                        Operation(TMA_STORE_DRAIN_OP, [], [], {}, loc=tiles.loc))
    return True
