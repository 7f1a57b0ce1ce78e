"""LLVM lowering of the ``cp.async`` ops placed by :mod:`naiad_nvidia.passes.async_copy_pipeline`, as
inline PTX (LLVM has no intrinsic for the zero-filling, predicated form).

``nvidia.cp_async(ptr, valid, slot[, mask])``: every owner thread copies each of its 16-byte
chunks with ``@p cp.async.cg.shared.global [dst], [src], 16, size`` where ``p`` is ``valid``
(the tile exists) and ``size`` is 16, or 0 where the chunk is masked off (zero fill). ``dst``
is the chunk's swizzled offset (:func:`naiad_nvidia.ir.ldmatrix_plan.swizzle_for`, or wgmma's
panels when the op is marked ``wgmma``; ``k_major`` stores a ``k x n`` B tile transposed; with
``row_major`` the tile is stored unswizzled, row-major, for the FMA dot of
:mod:`naiad_nvidia.passes.fma_ring`) in ring slot ``slot``. A chunk is ``16 / elem_bytes`` elements (attribute, default 2 bytes);
with ``chunk_bytes = 4`` every element is its own ``cp.async.ca`` of 4 bytes (a tf32 B stored
transposed, whose elements are not contiguous along K in memory). Commit and wait are
``cp.async.commit_group`` / ``cp.async.wait_group N``. All of them have side effects and
clobber memory, so neither LLVM nor ptxas moves shared accesses across.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import I32, i32

from ..passes.async_copy_pipeline import CHUNK, tile_offsets
from .predicated_memory import MEMORY_CLOBBER, inline_asm

I64 = ir.IntType(64)
COPY_TEXT = "@$3 cp.async.cg.shared.global [$0], [$1], 16, $2;"
#: one 4-byte element (``.cg`` takes 16 bytes only)
ELEMENT_COPY_TEXT = "@$3 cp.async.ca.shared.global [$0], [$1], 4, $2;"


def _asm(builder, text, args=(), types=(), constraints=""):
    fty = ir.FunctionType(ir.VoidType(), list(types))
    cons = ",".join([c for c in (constraints, MEMORY_CLOBBER) if c])
    builder.call(inline_asm(fty, text, cons, side_effect=True), list(args),
                 attrs=("nounwind",))


def lower_cp_async(kl, op) -> None:
    b = kl.b
    ptr, valid, slot = op.operands[:3]
    mask = kl.get(op.operands[3]) if len(op.operands) > 3 else None
    ll = kl.linear(ptr)
    elem_bytes = int(op.attrs.get("elem_bytes", 2))
    chunk_bytes = int(op.attrs.get("chunk_bytes", CHUNK))
    chunk_elems = chunk_bytes // elem_bytes
    text = COPY_TEXT if chunk_bytes == CHUNK else ELEMENT_COPY_TEXT
    offs = ll if op.attrs.get("row_major") else tile_offsets(
        ll, bool(op.attrs.get("wgmma")), elem_bytes, bool(op.attrs.get("k_major")))
    thread = kl.thread_flat(offs)
    pred = kl.get(valid)[0]
    owner = kl.owner_pred(ll)
    if owner is not None:
        pred = b.and_(pred, owner)
    base = b.add(b.mul(kl.get(slot)[0], i32(int(op.attrs["stage_bytes"]))),
                 i32(int(op.attrs["offset"])))
    ptrs = kl.get(ptr)
    owners = set(kl.owner_registers(ll))
    # where no lane/warp bit meets a register's offset bits, XOR is addition: each chunk's
    # address is then one base (per iteration) plus a constant, not a register per chunk kept
    # live across the loop
    thread_bits = 0
    for dim in ("lane", "warp"):
        for vec in offs.flat_bases(dim):
            thread_bits |= vec
    start = b.add(base, b.mul(thread, i32(elem_bytes)))
    for r in range(0, len(ptrs), chunk_elems):
        if r not in owners:
            continue
        const = offs.apply_flat(register=r)
        if const & thread_bits == 0:
            byte = b.add(start, i32(const * elem_bytes))
        else:
            byte = b.add(base, b.mul(b.xor(thread, i32(const)), i32(elem_bytes)))
        dst = b.ptrtoint(kl.smem_ptr(byte), I64)
        size = i32(chunk_bytes) if mask is None else b.select(mask[r], i32(chunk_bytes), i32(0))
        _asm(b, text, [dst, ptrs[r], size, pred], [I64, ptrs[r].type, I32, ir.IntType(1)],
             "l,l,r,b")


def lower_cp_async_commit(kl, op) -> None:
    _asm(kl.b, "cp.async.commit_group;")


def lower_cp_async_wait(kl, op) -> None:
    _asm(kl.b, f"cp.async.wait_group {int(op.attrs['pending'])};")


LOWERINGS = {"nvidia.cp_async": lower_cp_async, "nvidia.cp_async_commit": lower_cp_async_commit,
             "nvidia.cp_async_wait": lower_cp_async_wait}
