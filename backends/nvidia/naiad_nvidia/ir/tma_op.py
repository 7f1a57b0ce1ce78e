"""GPU-IR ops of the TMA ring (placed by :mod:`naiad_nvidia.passes.tma_ring`, lowered by
:mod:`naiad_nvidia.lowering.tma`): tensor-descriptor tiles moved global -> shared memory by
``cp.async.bulk.tensor``, each ring slot completed on an mbarrier of its own.

* ``nvidia.tma_init {slots, bar_offset}``: after a CTA barrier and a proxy fence (earlier
  generic-proxy uses of the buffer come before the copies' async-proxy writes), thread 0
  initialises the ``slots`` mbarriers (8 bytes each at ``bar_offset`` of the ring's shared
  memory, arrival count 1), fences the initialisation and every thread waits at a barrier.
* ``nvidia.tma_expect(valid, slot) {bytes, bar_offset}``: thread 0, where ``valid``, arrives on
  slot ``slot``'s mbarrier expecting ``bytes`` from the copies of this phase.
* ``nvidia.tma_copy(valid, slot, map, row, col) {offset, rows, cols, elem_bytes, stage_bytes,
  bar_offset}``: thread 0, where ``valid``, copies the ``rows x cols`` block at ``(row, col)``
  of the tensor map ``map`` (a global pointer) into slot ``slot`` at byte ``offset``, as
  ``cols / panel`` boxes (one swizzle panel each: :mod:`naiad_nvidia.ir.wgmma_smem`'s layout),
  completing on the slot's mbarrier. Out-of-bounds elements arrive as zeros (the map's fill).
  The map was written to global memory by a synchronous host copy before the launch, so no
  tensor-map proxy fence is needed (that is for maps modified on the device).
* ``nvidia.tma_wait(slot, phase) {bar_offset}``: every thread waits until slot ``slot``'s
  mbarrier has completed the phase of parity ``phase``.
* ``nvidia.tma_release {slots, bar_offset}``: after a CTA barrier, thread 0 invalidates the
  mbarriers, so the shared memory is ordinary scratch again.

A ring carried across a persistent loop's tiles (:mod:`naiad_nvidia.passes.tma_persistent`)
lives in a resident buffer that its ``nvidia.tma_init`` claims (``resident_bytes``); its ops
carry ``resident_ring`` (the ring's id) and, once allocated, ``ring_base``: the buffer's byte
offset, added to every slot and mbarrier address (also by ``nvidia.wgmma_ring``).

And the store of a descriptor block (placed by
:func:`naiad_nvidia.passes.tma_ring.lower_descriptor_accesses`):

* ``nvidia.tma_store(value, map, row, col) {rows, cols, elem_bytes, scratch_bytes}``: every
  thread writes its registers of ``value`` into the scratch buffer in the map's box layout
  (swizzled panels), fences them for the async proxy (``fence.proxy.async.shared::cta``) and
  waits at a barrier; thread 0 stores the boxes with ``cp.async.bulk.tensor ...
  .global.shared::cta.bulk_group`` (the hardware drops what lies outside the tensor), commits
  and waits until the shared memory has been read (``cp.async.bulk.wait_group.read 0``), and a
  last barrier frees the buffer. A *deferred* store (``resident_bytes`` instead of
  ``scratch_bytes``: a buffer of its own, placed by
  :mod:`naiad_nvidia.passes.tma_persistent` in a tile loop) waits for the read of its previous
  execution's store at its start instead (thread 0, then a barrier) and does not wait at its
  end: the copy out of shared memory overlaps what follows (the next tile's K loop).
* ``nvidia.tma_store_drain``: thread 0 waits until every TMA store it issued has completed
  (``cp.async.bulk.wait_group 0``); after a loop of deferred stores.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op, register_resident_scratch, register_scratch

TMA_INIT_OP = "nvidia.tma_init"
TMA_EXPECT_OP = "nvidia.tma_expect"
TMA_COPY_OP = "nvidia.tma_copy"
TMA_WAIT_OP = "nvidia.tma_wait"
TMA_RELEASE_OP = "nvidia.tma_release"
TMA_STORE_OP = "nvidia.tma_store"
TMA_STORE_DRAIN_OP = "nvidia.tma_store_drain"
#: bytes of one mbarrier object
MBARRIER_BYTES = 8

register_op(OpDef(TMA_INIT_OP, 0, 0, 0, ("slots", "bar_offset"), frozenset(),
                  "initialise the ring's mbarriers (thread 0, between CTA barriers)"))
register_op(OpDef(TMA_EXPECT_OP, 2, 0, 0, ("bytes", "bar_offset"), frozenset(),
                  "mbarrier.arrive.expect_tx on slot `slot`: (valid i1, slot i32)"))
register_op(OpDef(TMA_COPY_OP, 5, 0, 0, ("offset", "rows", "cols", "elem_bytes", "stage_bytes",
                                         "bar_offset"), frozenset(),
                  "cp.async.bulk.tensor of a descriptor block into ring slot `slot`: "
                  "(valid i1, slot i32, map ptr, row i32, col i32)"))
register_op(OpDef(TMA_WAIT_OP, 2, 0, 0, ("bar_offset",), frozenset(),
                  "wait for slot `slot`'s mbarrier phase of parity `phase`: (slot, phase i32)"))
register_op(OpDef(TMA_RELEASE_OP, 0, 0, 0, ("slots", "bar_offset"), frozenset(),
                  "invalidate the ring's mbarriers (thread 0, after a CTA barrier)"))
register_op(OpDef(TMA_STORE_OP, 4, 0, 0, ("rows", "cols", "elem_bytes", "scratch_bytes"),
                  frozenset(), "TMA store of a descriptor block through shared memory: "
                               "(value, map ptr, row i32, col i32)"))
register_scratch(TMA_STORE_OP, lambda op: int(op.attrs.get("scratch_bytes", 0)))
register_resident_scratch(TMA_STORE_OP, lambda op: int(op.attrs.get("resident_bytes", 0)))
register_op(OpDef(TMA_STORE_DRAIN_OP, 0, 0, 0, (), frozenset(),
                  "wait for every TMA store of thread 0 to complete"))
#: a ring carried across a persistent loop's tiles (:mod:`naiad_nvidia.passes.tma_persistent`)
#: lives in a buffer of its own, claimed by its ``nvidia.tma_init``
register_resident_scratch(TMA_INIT_OP, lambda op: int(op.attrs.get("resident_bytes", 0)))
