"""A ring of shared-memory slots holding the A/B operand tiles of a pipelined ``matrix_mma``.

The staged ``matrix_mma`` (:mod:`.staging`) writes its operands to shared memory and reads them
back inside one op, so the next tile's global loads cannot overlap this tile's matrix issues.
The stream pipeliner (:mod:`.stream_pipeline`) splits that into two ops around a ring of
``slots`` buffers, each holding one A tile and one B tile in the staging swizzle:

``matrix_ring_store(a, b, slot) {k_width, slots}``
    writes ``a`` and ``b`` into ring slot ``slot`` (an i32). Used before the loop (prologue).

``matrix_mma_ring(a_next, b_next, acc, slot) {instruction, k_width, slots}``
    ``acc + A[slot] @ B[slot]`` with the fragments read from slot ``slot``, and writes
    ``a_next`` / ``b_next`` (a later tile, whose global loads were issued before this op) into
    slot ``(slot + 1) % slots``: with one slot after the matrix issues and a barrier (no wave
    may still read the slot), with more before them (that slot was last read an iteration
    ago), which frees the tile's registers early. ``a_next`` and ``b_next`` also give the
    tiles' types (shape, element, register layout).

``ping_pong = true`` on ``matrix_mma_ring`` (set by a backend's ping-pong pass) splits the op
into *memory phases* (LDS reads and writes) and *matrix phases* (MFMAs from registers, bracketed
by the optional ``TargetInfo.matrix_phase(builder, begin)``; AMD: ``s_setprio``), each ended by
a barrier. With the barrier the core places before the op, an iteration is

* two or more slots: ``read tile i (slot i) + write tile i+1 (slot i+1) | MFMAs``;
* one slot: ``read tile i | MFMAs, first half | write tile i+1 | MFMAs, second half``;
* ``k_groups = g`` (a backend's choice when a whole tile's fragments would not fit the
  registers): the reads and MFMAs alternate per K range, ``read k0 | MFMAs k0 | read k1 | ...``,
  the write where it was (first memory phase with more slots; between the halves of the last
  range's MFMAs with one).

A backend may then run half of the warps one phase behind the other, so that on each SIMD one
wave does memory work while the other does MFMAs. Barriers pair by count, so after barrier n
the leading half has finished its phases before n and the lagging half those before n - 1:
every write of a slot still follows all reads of its previous tile (the reads are at least one
phase earlier in both halves) and every read follows all writes of its tile.

Both ops claim the whole ring as scratch, so the core's allocator sizes it and the barrier pass
puts a barrier between the store of a slot and the next op reading the ring. Slot ``s`` holds A
at ``s * slot_bytes`` and B right after it (16-byte aligned).
"""
from __future__ import annotations

from ...ir.ops import OpDef, register_op
from ...ir.types import TensorType
from ...ir.verifier import register_verifier
from ..layouts import linear_of
from ..lower.context import KernelLowering, lowers
from ..lower.dot import SharedOperand
from ..lower.shared import smem_write
from ..lower.types import i32
from ..movement import register_scratch, smem_itemsize
from .instructions import matrix_instruction
from .plan import issue_plan
from .staging import offset_view, operand_views, swizzle_for

RING_STORE = "matrix_ring_store"
MMA_RING = "matrix_mma_ring"

register_op(OpDef(RING_STORE, 3, 0, 0, ("k_width", "slots"), frozenset(),
                  "write operand tiles a, b into shared-memory ring slot `slot` (a, b, slot)"))
register_op(OpDef(MMA_RING, 4, 1, 0, ("instruction", "k_width", "slots"), frozenset(),
                  "acc + A[slot] @ B[slot] from the ring, then a_next, b_next into slot + 1 "
                  "(a_next, b_next, acc, slot)"))


def _aligned(n: int) -> int:
    return (n + 15) // 16 * 16


def tile_bytes(t: TensorType) -> int:
    return _aligned(t.numel * smem_itemsize(t.scalar))


def slot_bytes(op) -> int:
    a, b = op.operands[0].type, op.operands[1].type
    return tile_bytes(a) + tile_bytes(b)


def ring_bytes(op) -> int:
    return int(op.attrs.get("slots", 1)) * slot_bytes(op)


register_scratch(RING_STORE, ring_bytes)
register_scratch(MMA_RING, ring_bytes)


def _verify_common(op):
    slots = op.attrs.get("slots")
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        return f"slots must be a positive integer, got {slots!r}"
    kw = op.attrs.get("k_width")
    if not isinstance(kw, int) or isinstance(kw, bool) or kw < 1:
        return f"k_width must be a positive integer, got {kw!r}"
    a, b = op.operands[0].type, op.operands[1].type
    if not (isinstance(a, TensorType) and isinstance(b, TensorType)
            and len(a.shape) == 2 and len(b.shape) == 2 and a.shape[1] == b.shape[0]):
        return "a and b must be 2-D tiles with a's K equal to b's"
    slot = op.operands[-1].type
    if isinstance(slot, TensorType) or getattr(slot, "name", None) != "i32":
        return f"slot must be an i32 scalar, got {slot}"
    return None


def _verify_mma(op):
    why = _verify_common(op)
    if why:
        return why
    instr = matrix_instruction(op.attrs.get("instruction"))
    a, b, acc = (v.type for v in op.operands[:3])
    if (a.element.name, b.element.name, acc.element.name) != \
            (instr.a_type, instr.b_type, instr.acc_type):
        return (f"{instr.name} computes {instr.acc_type} += {instr.a_type} x {instr.b_type}, "
                f"got {acc.element} += {a.element} x {b.element}")
    if op.results[0].type != acc:
        return "result must have the accumulator's type"
    return None


register_verifier(RING_STORE, _verify_common)
register_verifier(MMA_RING, _verify_mma)


def ring_swizzles(op) -> list:
    """The staging swizzle of each operand (the same function the staged ``matrix_mma`` uses,
    so a ring written by ``matrix_ring_store`` reads back as ``matrix_mma_ring`` expects)."""
    kw = op.attrs["k_width"]
    out = []
    for i in (0, 1):
        t = op.operands[i].type
        out.append(swizzle_for(i, t.shape, smem_itemsize(t.scalar), kw,
                               linear_of(t.layout, t.shape)))
    return out


def _slot_base(kl: KernelLowering, op, slot):
    """Byte offsets of A and B in ring slot ``slot`` (an LLVM i32)."""
    b = kl.b
    base = b.mul(slot, i32(slot_bytes(op)))
    return base, b.add(base, i32(tile_bytes(op.operands[0].type)))


def _write_tiles(kl: KernelLowering, op, slot) -> None:
    bases = _slot_base(kl, op, slot)
    for v, swizzle, base in zip(op.operands[:2], ring_swizzles(op), bases):
        src = linear_of(v.type.layout, v.type.shape)
        smem_write(kl, kl.get(v), offset_view(src, swizzle), v.type.scalar, base=base)


@lowers(RING_STORE)
def lower_ring_store(kl: KernelLowering, op) -> None:
    _write_tiles(kl, op, kl.get(op.operands[2])[0])


@lowers(MMA_RING)
def lower_mma_ring(kl: KernelLowering, op) -> None:
    acc, slot_v = op.operands[2], op.operands[3]
    instr = matrix_instruction(op.attrs["instruction"])
    multiply = getattr(kl.ti, "matrix_multiply", None)
    if multiply is None:
        raise kl.error(f"the target has no matrix_multiply for {instr.name}")
    b = kl.b
    slot = kl.get(slot_v)[0]
    views = operand_views(op)
    swapped = acc.type.layout.transposed
    plan = issue_plan(instr.transposed() if swapped else instr, views[0][1], views[1][1],
                      kl.linear(acc))
    operands = [SharedOperand(kl, offset_view(want, swizzle), v.type.scalar, base)
                for v, (_, want, _), swizzle, base in
                zip(op.operands[:2], views, ring_swizzles(op), _slot_base(kl, op, slot))]
    slots = int(op.attrs["slots"])
    c_vals = list(kl.get(acc))

    def issue(part) -> None:
        for a_regs, b_regs, c_regs in part:
            a_frag = [operands[0][r] for r in a_regs]
            b_frag = [operands[1][r] for r in b_regs]
            if swapped:  # the hardware computes C^T = B^T A^T
                a_frag, b_frag = b_frag, a_frag
            d = multiply(b, instr, a_frag, b_frag, [c_vals[r] for r in c_regs])
            for r, value in zip(c_regs, d):
                c_vals[r] = value

    if op.attrs.get("ping_pong"):
        _ping_pong(kl, op, plan, operands, issue, slot, slots)
    elif slots == 1:
        issue(plan)
        # the next tile overwrites the slot just read: every wave must be done reading it
        kl.ti.barrier(b)
        _write_tiles(kl, op, i32(0))
    else:
        # slot + 1 was last read an iteration ago, before the barrier that opened this op:
        # write the next tile first, so its registers are free before the matrix issues
        _write_tiles(kl, op, _next_slot(b, slot, slots))
        issue(plan)
    kl.set(op.results[0], c_vals)


def _ping_pong(kl: KernelLowering, op, plan, operands, issue, slot, slots: int) -> None:
    """The op as memory and matrix phases separated by barriers (see the module doc): with
    two or more slots ``read + write | MFMAs``; with one, ``read | MFMAs (first half) | write |
    MFMAs (second half)``. With ``k_groups = g > 1`` each read covers one of ``g`` K ranges and
    is followed by that range's MFMAs (``read k0 + write | MFMAs k0 | read k1 | MFMAs k1 ...``;
    one slot: the write between the two halves of the last range's MFMAs), so only a ``1/g``
    share of the tile's fragments is live at a time."""
    b = kl.b
    phase = getattr(kl.ti, "matrix_phase", None) or (lambda builder, begin: None)

    def read(part) -> None:  # the fragments of these issues into registers
        for a_regs, b_regs, _ in part:
            for r in a_regs:
                operands[0][r]
            for r in b_regs:
                operands[1][r]

    def matrix(part) -> None:
        kl.ti.barrier(b)
        phase(b, True)
        issue(part)
        phase(b, False)

    groups = k_groups(plan, int(op.attrs.get("k_groups", 1)))
    for g, part in enumerate(groups):
        if g:
            kl.ti.barrier(b)
        read(part)
        if slots > 1:
            if g == 0:
                _write_tiles(kl, op, _next_slot(b, slot, slots))
            matrix(part)
        elif g < len(groups) - 1:
            matrix(part)
        else:
            half = (len(part) + 1) // 2
            matrix(part[:half])
            kl.ti.barrier(b)
            _write_tiles(kl, op, i32(0))
            matrix(part[half:])


def k_groups(plan, groups: int) -> list:
    """``plan`` (K outermost) cut into ``groups`` runs of whole K steps (fewer when the K steps
    do not divide evenly)."""
    steps = _k_steps(plan) if plan else 1
    while groups > 1 and steps % groups:
        groups -= 1
    per = len(plan) // max(1, groups)
    return [plan[i:i + per] for i in range(0, len(plan), per)] if groups > 1 else [plan]


def _k_steps(plan) -> int:
    """Issues sharing an accumulator fragment are one per K step."""
    first = plan[0][2]
    return sum(1 for _, _, c in plan if c == first)


def _next_slot(b, slot, slots: int):
    if slots == 1:
        return i32(0)
    nxt = b.add(slot, i32(1))
    return b.select(b.icmp_signed("==", nxt, i32(slots)), i32(0), nxt)
