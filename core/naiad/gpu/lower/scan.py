"""Inclusive scans along an axis, by doubling over the bits of the axis coordinate.

Each bit of the axis coordinate comes from one register, lane or warp bit of the layout
(:func:`naiad.gpu.movement.scan_sources`). Step ``j`` turns prefixes within blocks of ``2**j``
elements into prefixes within blocks of ``2**(j+1)``: an element in the upper half of its block
combines the total of the lower half -- the prefix held by the lower half's last element --
with its own. Where that element lives follows from the same bit sources: another register of
this thread (no data moves), another lane (one shuffle per source register), or another warp
(a round through shared memory). A ``reverse`` scan is the forward scan of the flipped axis:
the block's upper half feeds the lower half. The combine function is always applied as
``combine(earlier elements, this element)``.
"""
from __future__ import annotations

from ..movement import scan_scratch_layout, scan_sources
from .context import KernelLowering, lowers
from .shared import smem_write
from .shuffle import shuffle_idx
from .types import i32


@lowers("scan")
def lower_scan(kl: KernelLowering, op) -> None:
    axis = op.attrs["axis"]
    reverse = bool(op.attrs.get("reverse", False))
    region = op.regions[0].block
    ll = kl.linear(op.operands[0])
    inputs = [kl.get(v) for v in op.operands]
    elems = [v.type.scalar for v in op.operands]
    sources = scan_sources(ll, axis)
    b = kl.b
    n = ll.in_size("register")

    def combine(acc, new):
        return tuple(kl.inline_region(region, list(acc) + list(new)))

    flat_of = [ll.apply_flat(register=r) for r in range(n)]
    canon: dict[int, int] = {}
    for r in range(n):
        canon.setdefault(flat_of[r], r)
    cur = {r: tuple(inp[r] for inp in inputs) for r in canon.values()}
    shift = sum(s.bit_length() - 1 for s in ll.out_shape[axis + 1:])
    offsets, _ = scan_scratch_layout(op)
    smem_rounds = 0

    def my_bit(r, j):
        """(static bool or i1 value): bit j of the axis coordinate of register r here."""
        dim, i = sources[j]
        if dim == "register":
            return bool(flat_of[r] >> (shift + j) & 1)
        idx = kl.lane if dim == "lane" else kl.warp
        return b.icmp_unsigned("!=", b.and_(idx, i32(1 << i)), i32(0))

    for j in range(len(sources)):
        involved = sources[:j + 1]
        # desired value of bits 0..j in the position whose prefix we fetch
        want_low, want_j = (0, 1) if reverse else (1, 0)
        fetched: dict[int, tuple] = {}
        if any(dim == "warp" for dim, _ in involved):
            if smem_rounds:
                kl.ti.barrier(b)  # the previous round's reads are done before rewriting
            smem_rounds += 1
            for k, elem in enumerate(elems):
                vals = [cur[canon[flat_of[r]]][k] for r in range(n)]
                smem_write(kl, vals, ll, elem, base=offsets[k])
            kl.ti.barrier(b)
            thread = kl.thread_flat(ll)
            low = ((1 << j) - 1) << shift
            bit = (1 << j) << shift
            for r in cur:
                idx = b.xor(thread, i32(flat_of[r]))
                if want_low:
                    idx = b.or_(idx, i32(low))
                else:
                    idx = b.and_(idx, i32(~low & 0xFFFFFFFF))
                idx = b.or_(idx, i32(bit)) if want_j else b.and_(idx, i32(~bit & 0xFFFFFFFF))
                fetched[r] = tuple(_read_at(kl, idx, elem, offsets[k])
                                   for k, elem in enumerate(elems))
        else:
            lane_set, lane_clear = 0, 0
            for t, (dim, i) in enumerate(involved):
                if dim != "lane":
                    continue
                want = want_j if t == j else want_low
                if want:
                    lane_set |= 1 << i
                else:
                    lane_clear |= 1 << i
            src_lane = None
            if lane_set or lane_clear:
                src_lane = b.and_(b.or_(kl.lane, i32(lane_set)), i32(~lane_clear & 0xFFFFFFFF))
            moved: dict[int, tuple] = {}
            for r in cur:
                src_flat = flat_of[r]
                for t, (dim, i) in enumerate(involved):
                    if dim != "register":
                        continue
                    want = want_j if t == j else want_low
                    mask = 1 << (shift + t)
                    src_flat = (src_flat | mask) if want else (src_flat & ~mask)
                src = canon[src_flat]
                if src_lane is None:
                    fetched[r] = cur[src]
                else:
                    if src not in moved:
                        moved[src] = tuple(shuffle_idx(kl, x, src_lane) for x in cur[src])
                    fetched[r] = moved[src]
        new_cur = {}
        for r, mine in cur.items():
            take = my_bit(r, j)
            if not reverse:
                active = take
            else:
                active = (not take) if isinstance(take, bool) else b.not_(take)
            if active is False:
                new_cur[r] = mine
                continue
            merged = combine(fetched[r], mine)
            if active is True:
                new_cur[r] = merged
            else:
                new_cur[r] = tuple(b.select(active, m, x) for m, x in zip(merged, mine))
        cur = new_cur

    for k, res in enumerate(op.results):
        kl.set(res, [cur[canon[flat_of[r]]][k] for r in range(n)])


def _read_at(kl: KernelLowering, idx, elem, base):
    from llvmlite import ir

    from ..movement import smem_itemsize
    from .types import I1, I8

    b = kl.b
    size = smem_itemsize(elem)
    addr = kl.smem_ptr(b.add(b.mul(idx, i32(size)), i32(base)))
    v = b.load(addr, typ=kl.mtype(elem), align=size)
    if kl.ltype(elem) == I1:
        return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    return v
