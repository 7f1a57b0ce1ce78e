"""LLVM lowering of the TMA ring's ops (:mod:`naiad_nvidia.ir.tma_op`), as inline PTX (LLVM 22's
NVPTX intrinsics for bulk tensor copies and mbarriers exist, but inline asm keeps them ordered
against the wgmma asm and the ring's other asm by side effects and the memory clobber).

Shared addresses are 32-bit (``.shared::cta`` window offsets: the scratch buffer's address plus
the op's byte offset). The wait on an mbarrier is an LLVM loop around one
``mbarrier.try_wait.parity`` (which itself suspends the thread for a while), so no PTX labels
are needed.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import I32, i32, smem_write

from ..ir.tma_op import MBARRIER_BYTES
from ..ir.wgmma_smem import ALIGN, OperandTile
from ..runtime.tensor_map import panel_width
from .predicated_memory import MEMORY_CLOBBER, inline_asm

I1 = ir.IntType(1)
I64 = ir.IntType(64)


def _asm(builder, text, args=(), ret=None, constraints=""):
    ret = ret or ir.VoidType()
    fty = ir.FunctionType(ret, [a.type for a in args])
    cons = ",".join([c for c in (constraints, MEMORY_CLOBBER) if c])
    return builder.call(inline_asm(fty, text, cons, side_effect=True), list(args),
                        attrs=("nounwind",))


def _smem_base(kl):
    kl.smem.align = max(kl.smem.align or 0, ALIGN)
    return kl.cached("smem_addr", lambda: kl.entry.ptrtoint(kl.smem, I32))


def _ring_base(op) -> int:
    """Byte offset of the ring in shared memory: 0, or its resident buffer's
    (``ring_base``, set once a persistent loop carries the ring across tiles)."""
    return int(op.attrs.get("ring_base", 0))


def _barrier_address(kl, op, slot):
    """The shared address of slot ``slot``'s mbarrier (``slot`` an i32 value or int)."""
    b = kl.b
    slot = i32(slot) if isinstance(slot, int) else slot
    offset = b.add(i32(int(op.attrs["bar_offset"]) + _ring_base(op)),
                   b.mul(slot, i32(MBARRIER_BYTES)))
    return b.add(_smem_base(kl), offset)


def _thread0(kl, pred=None):
    first = kl.first_thread_pred()
    return first if pred is None else kl.b.and_(pred, first)


def lower_tma_init(kl, op) -> None:
    b = kl.b
    kl.ti.barrier(b)
    # earlier generic-proxy users of this shared memory before the copies' async-proxy writes
    _asm(b, "fence.proxy.async.shared::cta;")
    first = _thread0(kl)
    for s in range(int(op.attrs["slots"])):
        _asm(b, "@$1 mbarrier.init.shared::cta.b64 [$0], 1;",
             [_barrier_address(kl, op, s), first], constraints="r,b")
    _asm(b, "fence.mbarrier_init.release.cluster;")
    kl.ti.barrier(b)


def lower_tma_release(kl, op) -> None:
    b = kl.b
    kl.ti.barrier(b)
    first = _thread0(kl)
    for s in range(int(op.attrs["slots"])):
        _asm(b, "@$1 mbarrier.inval.shared::cta.b64 [$0];",
             [_barrier_address(kl, op, s), first], constraints="r,b")


def lower_tma_expect(kl, op) -> None:
    valid, slot = (kl.get(v)[0] for v in op.operands)
    _asm(kl.b, "@$2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
         [_barrier_address(kl, op, slot), i32(int(op.attrs["bytes"])), _thread0(kl, valid)],
         constraints="r,r,b")


def copy_boxes(rows: int, cols: int, elem_bytes: int) -> list[tuple[int, int]]:
    """``(column offset, shared byte offset)`` of each box of a ``rows x cols`` block: one per
    swizzle panel (the map's box, :func:`naiad_nvidia.runtime.tensor_map.panel_width`), panels
    stored one after another as :class:`naiad_nvidia.ir.wgmma_smem.OperandTile` lays them out."""
    panel = panel_width(cols, elem_bytes)
    return [(p * panel, p * rows * panel * elem_bytes) for p in range(cols // panel)]


def lower_tma_copy(kl, op) -> None:
    b = kl.b
    valid, slot, tmap, row, col = (kl.get(v)[0] for v in op.operands)
    pred = _thread0(kl, valid)
    bar = _barrier_address(kl, op, slot)
    start = b.add(_smem_base(kl), b.add(b.mul(slot, i32(int(op.attrs["stage_bytes"]))),
                                       i32(int(op.attrs["offset"]) + _ring_base(op))))
    tmap = b.ptrtoint(b.addrspacecast(tmap, ir.PointerType()), I64)   # generic address
    text = ("@$5 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
            "[$0], [$1, {$2, $3}], [$4];")
    for col_off, byte_off in copy_boxes(int(op.attrs["rows"]), int(op.attrs["cols"]),
                                        int(op.attrs["elem_bytes"])):
        _asm(b, text, [b.add(start, i32(byte_off)), tmap, b.add(col, i32(col_off)), row, bar,
                       pred], constraints="r,l,r,r,r,b")


def lower_tma_wait(kl, op) -> None:
    """Spin on ``mbarrier.try_wait.parity`` until the slot's phase of parity ``phase`` is
    complete."""
    b = kl.b
    slot, phase = (kl.get(v)[0] for v in op.operands)
    bar = _barrier_address(kl, op, slot)
    loop_bb, done_bb = kl.new_block("tma_wait"), kl.new_block("tma_ready")
    b.branch(loop_bb)
    b.position_at_end(loop_bb)
    text = ("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
            "selp.u32 $0, 1, 0, p;\n}")
    ready = _asm(b, text, [bar, phase], ret=I32, constraints="=r,r,r")
    b.cbranch(b.icmp_unsigned("!=", ready, i32(0)), done_bb, loop_bb)
    b.position_at_end(done_bb)


def lower_tma_store(kl, op) -> None:
    """See :mod:`naiad_nvidia.ir.tma_op`: a deferred store (own buffer at ``smem_offset``)
    waits for its previous read before writing, and not after its own copy."""
    b = kl.b
    value, tmap, row, col = op.operands
    rows, cols, elem = (int(op.attrs[k]) for k in ("rows", "cols", "elem_bytes"))
    deferred = "smem_offset" in op.attrs
    base = int(op.attrs.get("smem_offset", 0))
    first = _thread0(kl)
    if deferred:   # the previous store out of this buffer has read it
        _asm(b, "@$0 cp.async.bulk.wait_group.read 0;", [first], constraints="b")
        kl.ti.barrier(b)
    tile = OperandTile(rows, cols, "K", elem)   # the boxes' swizzled panels
    smem_write(kl, kl.get(value), tile.offsets(kl.linear(value)), value.type.scalar, base=base)
    _asm(b, "fence.proxy.async.shared::cta;")
    kl.ti.barrier(b)
    tmap = b.ptrtoint(b.addrspacecast(kl.get(tmap)[0], ir.PointerType()), I64)
    row, col = kl.get(row)[0], kl.get(col)[0]
    start = b.add(_smem_base(kl), i32(base))
    text = "@$4 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"
    for col_off, byte_off in copy_boxes(rows, cols, elem):
        _asm(b, text, [tmap, b.add(col, i32(col_off)), row, b.add(start, i32(byte_off)), first],
             constraints="l,r,r,r,b")
    _asm(b, "@$0 cp.async.bulk.commit_group;", [first], constraints="b")
    if not deferred:
        _asm(b, "@$0 cp.async.bulk.wait_group.read 0;", [first], constraints="b")
        kl.ti.barrier(b)


def lower_tma_store_drain(kl, op) -> None:
    _asm(kl.b, "@$0 cp.async.bulk.wait_group 0;", [_thread0(kl)], constraints="b")


LOWERINGS = {"nvidia.tma_store": lower_tma_store,
             "nvidia.tma_store_drain": lower_tma_store_drain,
             "nvidia.tma_init": lower_tma_init, "nvidia.tma_release": lower_tma_release,
             "nvidia.tma_expect": lower_tma_expect, "nvidia.tma_copy": lower_tma_copy,
             "nvidia.tma_wait": lower_tma_wait}
