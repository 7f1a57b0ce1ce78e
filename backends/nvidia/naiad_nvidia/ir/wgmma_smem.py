"""Where a Hopper ``wgmma`` finds its A and B tiles in shared memory, and the matrix
descriptors that tell it.

Why a layout of its own: ``wgmma.mma_async`` reads both operands straight from shared memory in
one of the "canonical" swizzled layouts of the PTX ISA (section "Shared Memory Matrix Layout"),
so the ``cp.async`` ring must store each tile exactly that way. For 16-bit elements:

* a tile (rows x cols, cols contiguous in global memory) is cut into *panels* of
  ``P = min(cols, 64)`` columns; panel ``p`` holds all rows, ``P`` elements (``2 P`` bytes:
  the swizzle width, 128, 64 or 32 bytes) per row, rows one after another;
* inside a panel the 16-byte chunk ``c`` of row ``r`` is stored at chunk
  ``c ^ ((r / perPhase) % maxPhase)`` -- the hardware's ``Swizzle<3|2|1, 4, 3>``: it XORs
  address bits 4.. with bits 7.., so a panel must start on a 1024-byte boundary (512/256 for
  the narrower swizzles; we always align to 1024).

A (M x K) is stored *K-major* (rows are M, panels along K); B (K x N) *N-major* (rows are K,
panels along N; ``imm-trans-b = 1``). Descriptor strides per the ISA's canonical layouts
(``T`` = 8 elements): K-major ``((8, m), (T, 2k)) : ((P, SBO), (1, T))`` -- SBO is the
distance of 8-row groups, LBO unused (1); MN-major ``((T, P/T, m), (8, k)) : ((1, T, LBO),
(P, SBO))`` -- LBO is the distance between panels, SBO between 8-row groups.

Every map here is GF(2)-linear in the coordinate bits (all sizes are powers of two), so the
offsets are linear layouts like the rest of the GPU layer (:meth:`offsets`).
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.gpu.linear_layout import LinearLayout

from ..ldmatrix_plan import swizzle_for

#: descriptor swizzle-mode field by swizzle width in bytes
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
#: shared-memory alignment the swizzle patterns need (the 128-byte mode's repeat)
ALIGN = 1024
#: elements of one wgmma K step for 16-bit types
K_STEP = 16


@dataclass(frozen=True)
class OperandTile:
    """One operand tile as the ring stores it: ``rows x cols`` 16-bit elements, ``cols`` the
    contiguous dimension (K for A, N for B)."""

    rows: int
    cols: int
    major: str  # "K" (A) or "MN" (B)

    @property
    def panel(self) -> int:
        return min(self.cols, 64)

    @property
    def swizzle_bytes(self) -> int:
        return self.panel * 2

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * 2

    def offset_of(self, coord) -> int:
        """Element offset of ``(row, col)`` in the stored tile."""
        r, c = coord
        p, cc = divmod(c, self.panel)
        inner = swizzle_for(self.panel).offset_of((r, cc), (self.rows, self.panel))
        return p * self.rows * self.panel + inner

    def offsets(self, ll: LinearLayout) -> LinearLayout:
        """``ll`` (a register layout of this tile) with coordinates replaced by offsets."""
        return ll.map_coords(lambda v: (self.offset_of(v),), (self.rows * self.cols,))

    def start_byte(self, row: int, col: int) -> int:
        """Byte offset of the sub-matrix starting at ``(row, col)`` (row % 8 == 0, col % 8 ==
        0): its unswizzled address, which is what a descriptor's start field holds."""
        p, cc = divmod(col, self.panel)
        return 2 * (p * self.rows * self.panel + row * self.panel + cc)

    def descriptor_bits(self) -> int:
        """The descriptor's constant fields (LBO, SBO, swizzle mode); the start address is
        added per instruction (its field is bits 0-13, address >> 4)."""
        sbo = 8 * self.swizzle_bytes
        lbo = 16 if self.major == "K" else self.rows * self.swizzle_bytes
        return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_MODE[self.swizzle_bytes] << 62)


def align(n: int, to: int = ALIGN) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class WgmmaStage:
    """One ring stage of an (m x k) @ (k x n) product: A at byte 0, B after it (aligned)."""

    m: int
    n: int
    k: int

    @property
    def a(self) -> OperandTile:
        return OperandTile(self.m, self.k, "K")

    @property
    def b(self) -> OperandTile:
        return OperandTile(self.k, self.n, "MN")

    @property
    def b_offset(self) -> int:
        return align(self.a.bytes)

    @property
    def bytes(self) -> int:
        return align(self.b_offset + self.b.bytes)
