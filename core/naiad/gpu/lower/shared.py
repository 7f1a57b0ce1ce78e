"""Moving register values through the shared-memory scratch buffer.

Elements are stored row-major (index = the element's row-major position in the tensor) so a
writer and a reader with different layouts agree on where each element is. Consecutive
registers holding consecutive elements are stored and loaded as one vector (up to 16 bytes) when
the thread's own part of the index keeps the vector aligned.
"""
from __future__ import annotations

from llvmlite import ir

from ..linear_layout import LinearLayout, is_pow2, log2
from ..movement import slice_bits, slice_of, smem_itemsize, without_bits
from .context import KernelLowering
from .types import I1, I8, i32, pack_vector


def _byte_offset(base):
    """A buffer's byte offset as an LLVM i32: an int, or already an i32 value (a ring slot
    chosen at run time, :mod:`naiad.gpu.matrix.ring`)."""
    return i32(base) if isinstance(base, int) else base


def run_length(ll: LinearLayout, size: int) -> int:
    """Registers per vector: leading register bases must step the row-major index by 1, 2, 4
    ..., and no lane/warp basis may touch those low index bits."""
    regs = ll.flat_bases("register")
    k = 0
    while k < len(regs) and regs[k] == 1 << k:
        k += 1
    while k > 0:
        low = (1 << k) - 1
        if all(not (v & low) for d in ("lane", "warp") for v in ll.flat_bases(d)):
            break
        k -= 1
    n = 1 << k
    while n * size > 16:
        n //= 2
    return max(n, 1)


class _Addresses:
    """Shared-memory addresses of element indices ``thread ^ c`` (``c`` a per-register
    constant), as few live values as possible: ``c``'s bits that no lane/warp basis sets
    cannot meet the thread's bits, so XOR is addition there and they become a constant
    offset on a shared base pointer (one per distinct remaining part, usually one or a
    few) -- rather than one address register per store kept live across a loop. ``base`` is
    the buffer's byte offset: an int, or an i32 value (a ring slot chosen at run time,
    :mod:`naiad.gpu.matrix.ring`), then folded into the base pointers."""

    def __init__(self, kl: KernelLowering, ll: LinearLayout, size: int, base):
        self.kl, self.size, self.base = kl, size, base
        self.thread = kl.thread_flat(ll)
        mask = 0
        for d in ("lane", "warp"):
            for v in ll.flat_bases(d):
                mask |= v
        self.mask = mask
        self.bases: dict[int, object] = {}

    def __call__(self, c: int):
        b = self.kl.b
        hi, lo = c & self.mask, c & ~self.mask
        ptr = self.bases.get(hi)
        if ptr is None:
            idx = b.xor(self.thread, i32(hi)) if hi else self.thread
            offset = b.mul(idx, i32(self.size))
            if not isinstance(self.base, int):
                offset = b.add(offset, self.base)
            ptr = self.bases[hi] = self.kl.smem_ptr(offset)
        const = (self.base if isinstance(self.base, int) else 0) + lo * self.size
        return b.gep(ptr, [i32(const)], source_etype=I8)


def _to_memory(kl: KernelLowering, v):
    return kl.b.zext(v, I8) if v.type == I1 else v


def _from_memory(kl: KernelLowering, v, want):
    return kl.b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if want == I1 else v


def smem_write(kl: KernelLowering, vals: list, ll: LinearLayout, elem, base=0,
               xor: int = 0, pred=None, registers: list[int] | None = None) -> None:
    """Store each register's element at ``base + (index ^ xor) * size`` (owner registers only;
    under ``pred`` when given)."""
    b = kl.b
    size = smem_itemsize(elem)
    mt = kl.mtype(elem)
    owners = set(registers if registers is not None else kl.owner_registers(ll))
    run = _whole_runs(run_length(ll, size) if xor < 1 else 1, owners, len(vals))

    def emit():
        address = _Addresses(kl, ll, size, base)
        for r in range(0, len(vals), run):
            if r not in owners:
                continue
            addr = address(ll.flat_values("register")[r] ^ xor)
            if run == 1:
                b.store(_to_memory(kl, vals[r]), addr, align=size)
            else:
                vec = pack_vector(b, [_to_memory(kl, x) for x in vals[r:r + run]],
                                  ir.VectorType(mt, run))
                b.store(vec, addr, align=size * run)
        return []

    if pred is None:
        emit()
    else:
        kl.if_then(pred, emit, [])


def smem_read(kl: KernelLowering, ll: LinearLayout, elem, base=0, xor: int = 0,
              registers: list[int] | None = None) -> list:
    """Load every register of ``ll`` (only ``registers`` when given; the others stay None)
    from ``base + (index ^ xor) * size``."""
    b = kl.b
    size = smem_itemsize(elem)
    mt = kl.mtype(elem)
    lt = kl.ltype(elem)
    n = ll.in_size("register")
    wanted = set(range(n) if registers is None else registers)
    run = _whole_runs(run_length(ll, size) if xor < 1 else 1, wanted, n)
    address = _Addresses(kl, ll, size, base)
    out: list = [None] * n
    for r in range(0, n, run):
        if r not in wanted:
            continue
        addr = address(ll.flat_values("register")[r] ^ xor)
        if run == 1:
            out[r] = _from_memory(kl, b.load(addr, typ=mt, align=size), lt)
        else:
            vec = b.load(addr, typ=ir.VectorType(mt, run), align=size * run)
            for i in range(run):
                out[r + i] = _from_memory(kl, b.extract_element(vec, i32(i)), lt)
    return out


def _whole_runs(run: int, registers: set, n: int) -> int:
    """The longest vector, at most ``run`` registers, that never straddles the edge of the
    chosen ``registers`` (each vector is all in or all out)."""
    while run > 1 and any((r in registers) != (r + i in registers)
                          for r in range(0, n, run) for i in range(1, run)):
        run //= 2
    return run


def through_shared(kl: KernelLowering, vals: list, src: LinearLayout, view: LinearLayout,
                   elem, xor: int = 0, slices: int = 0) -> list:
    """Gather through shared memory: write the source, wait, read the view's elements. Both
    sides address the buffer through the same :func:`bank_swizzle`, so neither meets bank
    conflicts that the row-major order alone would cause (e.g. an MMA accumulator, whose lanes
    step down rows, written row by row). With ``slices`` (the allocation's
    ``scratch_slices``) the tile moves in ``2 ** slices`` passes through a buffer that many
    times smaller (:func:`naiad.gpu.movement.slice_bits`): write a slice, wait, read it, wait."""
    if slices and not xor:
        return _in_passes(kl, vals, src, view, elem, slices)
    if not xor:
        swizzle = bank_swizzle(src, view, smem_itemsize(elem))
        if swizzle:
            src, view = swizzled(src, swizzle), swizzled(view, swizzle)
    smem_write(kl, vals, src, elem)
    kl.ti.barrier(kl.b)
    return smem_read(kl, view, elem, xor=xor)


def _in_passes(kl: KernelLowering, vals: list, src: LinearLayout, view: LinearLayout, elem,
               slices: int) -> list:
    size = smem_itemsize(elem)
    bits = slice_bits(src, view, size)[:slices]
    if len(bits) != slices:
        raise kl.error(f"internal: the allocation chose {slices} slice bits, the layouts "
                       f"allow {len(bits)}")
    owners = kl.owner_registers(src)
    inner_src, inner_view = without_bits(src, bits), without_bits(view, bits)
    swizzle = bank_swizzle(inner_src, inner_view, size)
    if swizzle:
        inner_src, inner_view = swizzled(inner_src, swizzle), swizzled(inner_view, swizzle)
    src_regs, view_regs = src.flat_values("register"), view.flat_values("register")
    out: list = [None] * len(view_regs)
    for k in range(1 << slices):
        part = tuple(k >> i & 1 for i in range(slices))
        if k:
            kl.ti.barrier(kl.b)      # every thread has read the previous slice
        smem_write(kl, vals, inner_src, elem,
                   registers=[r for r in owners if slice_of(src_regs[r], bits) == part])
        kl.ti.barrier(kl.b)
        got = smem_read(kl, inner_view, elem, registers=[
            r for r in range(len(view_regs)) if slice_of(view_regs[r], bits) == part])
        out = [g if g is not None else o for g, o in zip(got, out)]
    return out


#: bytes one pass over all shared-memory banks covers (32 banks of 4 bytes)
BANK_LINE = 128


def _phase_lanes(ll: LinearLayout, size: int) -> list[int]:
    """Flat element index of each lane basis that one shared-memory access serves at once:
    all 32 lanes up to 4-byte accesses, 16 for 8-byte, 8 for 16-byte ones."""
    width = run_length(ll, size) * size
    lanes = 32 // max(1, width // 4)
    return list(ll.flat_bases("lane")[:log2(lanes)])


def bank_swizzle(src: LinearLayout, view: LinearLayout, size: int) -> list[tuple[int, int]]:
    """(source bit, target bit) pairs of an XOR swizzle of the row-major element index: target
    bit ^= source bit. A lane basis of one access that lands a whole bank line (128 bytes) or
    more away from lane 0 meets it in the same banks; its index bit becomes a source, XORed
    into a bit that picks the 16-byte-or-vector chunk inside the line which that side's lanes
    do not already vary. Bits that a vector of either side spans are never targets, so both
    keep their vectors; sources lie above every target, so the map is its own inverse and a
    permutation of the buffer. Empty when nothing conflicts."""
    n = src.numel
    if not is_pow2(n) or size > BANK_LINE:
        return []
    low = log2(max(run_length(src, size), run_length(view, size)))
    line = log2(BANK_LINE // size)
    pairs: list[tuple[int, int]] = []
    for ll in (src, view):
        lanes = _phase_lanes(ll, size)
        used = {log2(v) for v in lanes if v and is_pow2(v)}
        free = [t for t in range(low, line)
                if t not in used and all(t != tt for _, tt in pairs)]
        for v in lanes:
            if not (v and is_pow2(v)) or v < 1 << line or not free:
                continue
            s = log2(v)
            if s < log2(n) and all(s != ss for ss, _ in pairs):
                pairs.append((s, free.pop(0)))
    return pairs


def swizzle_index(flat: int, pairs: list[tuple[int, int]]) -> int:
    for s, t in pairs:
        flat ^= ((flat >> s) & 1) << t
    return flat


def swizzled(ll: LinearLayout, pairs: list[tuple[int, int]]) -> LinearLayout:
    """``ll`` as a map to swizzled buffer positions (a one-dimensional layout over them); a
    GF(2)-linear swizzle keeps it linear."""
    return LinearLayout({d: [(swizzle_index(v, pairs),) for v in ll.flat_bases(d)]
                         for d in ll.bases}, (ll.numel,))
