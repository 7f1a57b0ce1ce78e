"""Operands of ``matrix_mma`` staged through swizzled shared memory.

An operand not already in its fragment layout is written once to shared memory and each
fragment is read just before its issue. The buffer is swizzled (``#shared<vec, perPhase,
maxPhase, order>`` with the K dimension fastest): lanes reading ``kWidth`` consecutive K
elements of consecutive rows hit different banks, and each read is one vector load.

Every layout here is linear over GF(2), so a swizzled buffer is just another linear layout: a
distributed layout composed with the swizzle maps (register, lane, warp) straight to the
element's offset in the buffer (:func:`offset_view`), and the core's shared-memory helpers
write and read through it as they would a row-major buffer.
"""
from __future__ import annotations

from ..layouts import DotOperandLayout, SharedLayout, linear_of
from ..linear_layout import LinearLayout
from ..movement import relabel_map, smem_itemsize

#: bytes of one round of shared-memory banks (32 banks x 4 bytes on NVIDIA and AMD)
BANK_BYTES = 128


def swizzle_for(op_idx: int, shape, elem_bytes: int, k_width: int,
                src: LinearLayout | None = None) -> SharedLayout:
    """K fastest; a phase changes every ``perPhase`` rows so one bank round holds rows of
    different phases; ``vec = kWidth`` keeps each fragment read contiguous.

    Single-element fragments (``kWidth = 1``) of an operand whose registers already run along
    its non-K dimension (B loaded row-major) are kept in that order, unswizzled: a fragment
    read then has consecutive lanes on consecutive words (no bank conflict) and each issue's
    K offset adds to the thread's address (an immediate offset) instead of XOR-ing into it."""
    kdim = 1 - op_idx
    if k_width == 1 and src is not None and _runs_along(src, 1 - kdim):
        return SharedLayout(1, 1, 1, (1 - kdim, kdim))
    inner = shape[kdim]
    vec = min(k_width, inner)
    row_bytes = inner * elem_bytes
    per_phase = max(1, BANK_BYTES // row_bytes)
    max_phase = max(1, min(inner // vec, BANK_BYTES // (vec * elem_bytes)))
    return SharedLayout(vec, per_phase, max_phase, (kdim, 1 - kdim))


def _runs_along(ll: LinearLayout, dim: int) -> bool:
    regs = ll.bases.get("register", ())
    return bool(regs) and regs[0][dim] == 1 and not regs[0][1 - dim]


def offset_view(ll: LinearLayout, shared: SharedLayout) -> LinearLayout:
    """(register, lane, warp) -> offset of the element in the swizzled buffer."""
    shape = ll.out_shape

    def off(v):
        return (shared.offset_of(v, shape),)

    return LinearLayout({d: [off(v) for v in vs] for d, vs in ll.bases.items()},
                        (ll.numel,))


def operand_views(op):
    """Per operand: (its layout, the fragment layout the issues read, swizzle or None)."""
    acc = op.results[0].type
    kw = op.attrs["k_width"]
    out = []
    for i in (0, 1):
        t = op.operands[i].type
        want = DotOperandLayout(i, acc.layout, kw).to_linear(t.shape)
        src = linear_of(t.layout, t.shape)
        staged = None if relabel_map(src, want) is not None else \
            swizzle_for(i, t.shape, smem_itemsize(t.scalar), kw, src)
        out.append((src, want, staged))
    return out


def staging_scratch(op) -> tuple[list[int | None], int]:
    """Byte offset of each staged operand (None: read from registers) and the total.

    ``one_buffer = true`` on the op (a backend's choice; AMD at ``num_stages = 1``, as Triton's
    allocator does there) stages A and B one after the other through the same buffer: both at
    offset 0, the total the larger of the two (:mod:`.lowering` reads all of A's fragments
    before B overwrites it)."""
    offsets: list[int | None] = []
    total = 0
    one = bool(op.attrs.get("one_buffer"))
    for i, (_, _, staged) in enumerate(operand_views(op)):
        if staged is None:
            offsets.append(None)
            continue
        t = op.operands[i].type
        size = (t.numel * smem_itemsize(t.scalar) + 15) // 16 * 16
        offsets.append(0 if one else total)
        total = max(total, size) if one else total + size
    return offsets, total
