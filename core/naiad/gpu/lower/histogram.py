"""``histogram``: counting with one shared-memory atomic per element.

The op's scratch buffer holds ``num_bins`` i32 counters. Every thread zeroes its stripe of
them; a barrier; each element's owner (the one thread and register holding it, as for global
atomics) adds 1 to its bin with an ``atomicrmw add`` on shared memory where the value lies in
``[0, num_bins)`` and the mask holds; a barrier; each thread reads the counters its result
registers hold. The code grows with the elements a thread holds, not with elements x bins
(NVIDIA: ``atom.shared.add`` / ``red.shared.add``, which ptxas emits as ``ATOMS.POPC.INC``;
AMD: ``ds_add_u32``). The result's reads stay pending after the op, as every scratch user's
do: the barrier pass separates the next user.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import CodegenError
from .context import KernelLowering, lowers
from .shared import smem_read
from .types import i32

#: widest zeroing store, in i32 counters (16 bytes)
_ZERO_VECTOR = 4


@lowers("histogram")
def lower_histogram(kl: KernelLowering, op) -> None:
    bins = int(op.attrs["num_bins"])
    if not getattr(kl.ti, "shared_atomics", True):
        where = f"{op.loc}: " if op.loc is not None else ""
        raise CodegenError(
            f"{where}tl.histogram counts with shared-memory atomics, which this target has none "
            f"of ({type(kl.ti).__name__}.shared_atomics is False); the backend can select the "
            "core pass expand_histogram (naiad.backend) before assign_layouts in its "
            "naiad_lowering_passes to count with a one-hot compare-and-sum instead (its code "
            "grows with elements x bins)")
    if not op.attrs.get("scratch"):
        raise kl.error("internal: histogram needs its shared-memory counters but the op has no "
                       "scratch (run the allocation pass)")
    res = op.results[0]
    _zero_counters(kl, bins)
    kl.ti.barrier(kl.b)
    _count_elements(kl, op, bins)
    kl.ti.barrier(kl.b)
    kl.set(res, smem_read(kl, kl.linear(res), res.type.scalar))


def _zero_counters(kl: KernelLowering, bins: int) -> None:
    """Thread ``t`` zeroes counters ``t*v .. t*v+v-1`` of each stripe of ``threads*v`` (``v``
    up to 4 per 16-byte store); with fewer bins than threads, threads ``t < bins`` one each."""
    b = kl.b
    threads = kl.num_warps * kl.warp_size
    per_thread = bins // threads
    if per_thread == 0:
        def zero_one():
            b.store(i32(0), kl.smem_ptr(b.mul(kl.tid, i32(4))), align=4)
            return []
        kl.if_then(b.icmp_unsigned("<", kl.tid, i32(bins)), zero_one, [])
        return
    vec = min(per_thread, _ZERO_VECTOR)
    vt = ir.VectorType(ir.IntType(32), vec)
    first = b.mul(kl.tid, i32(4 * vec))
    for k in range(per_thread // vec):
        offset = b.add(first, i32(4 * vec * threads * k)) if k else first
        b.store(ir.Constant(vt, None), kl.smem_ptr(offset), align=4 * vec)


def _count_elements(kl: KernelLowering, op, bins: int) -> None:
    b = kl.b
    x = op.operands[0]
    ll = kl.linear(x)
    values = kl.get(x)
    masks = kl.get(op.operands[1]) if len(op.operands) > 1 else None
    owner = kl.owner_pred(ll)
    sync = kl.ti.syncscope("cta")
    ordering = f'syncscope("{sync}") monotonic' if sync else "monotonic"
    signed = x.type.scalar.is_signed
    for r in kl.owner_registers(ll):
        index, inside = _bin_of(b, values[r], signed, bins)
        pred = inside
        if owner is not None:
            pred = b.and_(pred, owner)
        if masks is not None:
            pred = b.and_(pred, masks[r])

        def increment(index=index):
            counter = kl.smem_ptr(b.mul(index, i32(4)))
            b.atomic_rmw("add", counter, i32(1), ordering)
            return []
        kl.if_then(pred, increment, [])


def _bin_of(b: ir.IRBuilder, value, signed: bool, bins: int):
    """(i32 bin index, i1 ``0 <= value < bins``). Narrow values are widened to i32 by their
    signedness; then one unsigned compare rejects negatives (huge as unsigned) and values past
    the last bin."""
    width = value.type.width
    if width < 32:
        value = b.sext(value, ir.IntType(32)) if signed else b.zext(value, ir.IntType(32))
        width = 32
    inside = b.icmp_unsigned("<", value, ir.Constant(value.type, bins))
    if width > 32:
        value = b.trunc(value, ir.IntType(32))
    return value, inside
