"""TMA copies for the multi-dot ring (:mod:`naiad_nvidia.passes.multi_dot_ring`): when every
ring tile of the loop is a tensor-descriptor load with a tensor map (attention's ``desc_k.load``
and ``desc_v.load`` with host ``TensorDescriptor`` s or in-kernel descriptors), thread 0 fills
each tile of a slot with ``cp.async.bulk.tensor`` boxes completing on that tile's own mbarrier,
instead of every thread issuing masked ``cp.async`` chunks.

Why: the cp.async form recomputes each row's 64-bit address and both bounds per thread and
iteration (about 100 SASS instructions of attention's forward loop); TMA needs one instruction
per 128-byte panel, zero-fills out-of-bounds rows in hardware, and writes the swizzled panels
wgmma reads -- the layout the cp.async ring stores a tile in when it keeps it as loaded.

The schedule stays the multi-dot ring's; per tile ``g`` (an iteration's early tiles first):

    before the loop:  nvidia.tma_init                 # G x S mbarriers after the slots
                      (each ring loop its own, just before its own prologue)
    prologue:         tma_expect + tma_copy of each tile of iterations 0..D-1
    first reader of g: tma_wait(slot, phase) {tile g's mbarriers}; barrier
    copies of i + D:  tma_expect + tma_copy into slot (i + D) % S, where the cp.async ring
                      copies (early tiles after dot 0's barrier, late ones after the last dot)
    after the loop:   nvidia.tma_release

Tile ``g``'s mbarrier of slot ``s`` sits at ``bar_offset + (g * S + s) * 8``; one arrival
(thread 0's ``expect``) and one tile's bytes complete each phase, so each dot waits only for
its own tile. ``phase`` (the read slot's parity) is carried and flips when the slot wraps.
No ``fence.proxy.async`` is needed: TMA writes through the async proxy wgmma reads from.
"""
from __future__ import annotations

from naiad.ir import Operation

from ..ir.tma_op import (MBARRIER_BYTES, TMA_COPY_OP, TMA_EXPECT_OP, TMA_INIT_OP,
                         TMA_RELEASE_OP, TMA_WAIT_OP)
from .prefetch_loads import materialize
from .tma_ring import TMA_KINDS, access_of

#: the remark on a tile's descriptor load when another tile of its loop keeps the cp.async ring
NOT_ALL_TILES = ("another tile its loop's dots read is not a tensor-descriptor load with a "
                 "tensor map (the multi-dot TMA ring moves every tile)")


def _why_not(tile, access) -> str | None:
    """Why TMA cannot fill ``tile`` (a :class:`~.multi_dot_ring.TileCopy`) from ``access``."""
    t = tile.load.results[0].type
    block = list(access.attrs["block"])
    if len(block) != 2 or list(t.shape) != block:
        return "the multi-dot TMA ring moves whole two-dimensional blocks"
    elem = t.element.itemsize
    if elem != 2:
        return f"the TMA ring moves {'/'.join(TMA_KINDS)} tiles"
    if tile.transposed_copy:
        return "the ring stores this tile transposed, which TMA boxes cannot"
    if block[1] * elem < 32:
        return (f"the rows of the block ({block[1]} x {elem} bytes) are narrower than "
                f"wgmma's 32-byte swizzle")
    return None


def tile_accesses(tiles, body) -> list | None:
    """The ``descriptor_access`` op of each ring tile's load, when TMA can fill every tile;
    None otherwise (the loads keep the cp.async ring; the accesses get the reason for their
    remark)."""
    accesses = [access_of(t.load, body) for t in tiles]
    if all(a is None for a in accesses):
        return None
    why = None
    for t, a in zip(tiles, accesses):
        if a is None:
            why = why or NOT_ALL_TILES
            continue
        why = why or _why_not(t, a)
    if why is None:
        return accesses
    for a in accesses:
        if a is not None:
            a.attrs["why"] = why
    return None


def barrier_bytes(tiles: int, slots: int) -> int:
    return MBARRIER_BYTES * tiles * slots


def tile_bar_offset(rp, group: int) -> int:
    """Byte offset of tile ``group``'s mbarriers (one per slot)."""
    return rp.bar_offset + group * rp.slots * MBARRIER_BYTES


def emit_copies(rp, tiles, env, body, block, anchor, valid, slot, loc) -> None:
    """Before ``anchor``: thread 0 fills slot ``slot`` with ``tiles`` of the iteration ``env``
    describes, where ``valid``; each tile completes on its own mbarrier."""
    for t in tiles:
        rows, cols = t.load.results[0].type.shape
        elem = t.load.results[0].type.element.itemsize
        bar = tile_bar_offset(rp, t.group)
        block.insert_before(anchor, Operation(
            TMA_EXPECT_OP, [valid, slot], [], {"bytes": rows * cols * elem, "bar_offset": bar},
            loc=loc))
        cache: dict = {}
        tmap, row, col = (materialize(v, body, env, block, anchor, cache)
                          for v in t.access.operands)
        block.insert_before(anchor, Operation(
            TMA_COPY_OP, [valid, slot, tmap, row, col], [],
            {"offset": t.b_offset, "rows": rows, "cols": cols, "elem_bytes": elem,
             "stage_bytes": rp.stage_bytes, "bar_offset": bar}, loc=loc))


def init_before(rp, prologue, outer, loc) -> None:
    """The mbarriers' initialisation before the first expect of ``prologue`` (this loop's
    prologue ops, in ``outer``); it claims the ring (its registered scratch is
    ``ring_bytes``) for the core's barrier pass."""
    first = [o for o in prologue if o.name == TMA_EXPECT_OP][0]
    outer.insert_before(first, Operation(
        TMA_INIT_OP, [], [], {"slots": rp.slots * len(rp.tiles), "bar_offset": rp.bar_offset,
                              "ring_bytes": rp.ring_bytes}, loc=loc))


def wait(rp, tile, slot, phase, loc) -> Operation:
    """Every thread waits for ``tile`` of the read slot."""
    return Operation(TMA_WAIT_OP, [slot, phase], [],
                     {"bar_offset": tile_bar_offset(rp, tile.group)}, loc=loc)


def release(rp, loc) -> Operation:
    return Operation(TMA_RELEASE_OP, [], [], {"slots": rp.slots * len(rp.tiles),
                                               "bar_offset": rp.bar_offset}, loc=loc)
