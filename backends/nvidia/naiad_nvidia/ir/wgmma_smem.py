"""Where a Hopper ``wgmma`` finds its A and B tiles in shared memory, and the matrix
descriptors that tell it.

Why a layout of its own: ``wgmma.mma_async`` reads both operands straight from shared memory in
one of the "canonical" swizzled layouts of the PTX ISA (section "Shared Memory Matrix Layout"),
so the ``cp.async`` ring must store each tile exactly that way. For 16-bit elements:

* a tile (rows x cols, cols contiguous) is cut into *panels* of ``P = min(cols, 64)``
  columns (``128 / element bytes`` in general); panel ``p`` holds all rows, ``P`` elements
  (``2 P`` bytes: the swizzle width, 128, 64 or 32 bytes) per row, rows one after another;
* inside a panel the 16-byte chunk ``c`` of row ``r`` is stored at chunk
  ``c ^ ((r / perPhase) % maxPhase)`` -- the hardware's ``Swizzle<3|2|1, 4, 3>``: it XORs
  address bits 4.. with bits 7.., so a panel must start on a 1024-byte boundary (512/256 for
  the narrower swizzles; we always align to 1024).

A (M x K) is stored *K-major* (rows are M, panels along K); B (K x N) *N-major* (rows are K,
panels along N; ``imm-trans-b = 1``). Descriptor strides per the ISA's canonical layouts
(``T`` = 8 elements): K-major ``((8, m), (T, 2k)) : ((P, SBO), (1, T))`` -- SBO is the
distance of 8-row groups, LBO unused (1); MN-major ``((T, P/T, m), (8, k)) : ((1, T, LBO),
(P, SBO))`` -- LBO is the distance between panels, SBO between 8-row groups.

tf32 (4-byte elements, K steps of 8), s8 and the float8 kinds e4m3 / e5m2 (1-byte, K steps
of 32): wgmma transposes only 16-bit operands, so their B is stored transposed, K-major like A
(the staged path's stores can do that from any register layout; cp.async only when B is
K-contiguous in global memory, as with a transposed view).

Every map here is GF(2)-linear in the coordinate bits (all sizes are powers of two), so the
offsets are linear layouts like the rest of the GPU layer (:meth:`offsets`).
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.backend import LinearLayout

#: descriptor swizzle-mode field by swizzle width in bytes
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
#: shared-memory alignment the swizzle patterns need (the 128-byte mode's repeat)
ALIGN = 1024


@dataclass(frozen=True)
class OperandTile:
    """One operand tile as stored: ``rows x cols`` elements of ``elem_bytes`` bytes, ``cols``
    the contiguous dimension (K for a K-major operand, M or N for an MN-major one)."""

    rows: int
    cols: int
    major: str  # "K" or "MN"
    elem_bytes: int = 2

    @property
    def panel(self) -> int:
        """Elements per row of one panel (the swizzle width)."""
        return min(self.cols, 128 // self.elem_bytes)

    @property
    def swizzle_bytes(self) -> int:
        return self.panel * self.elem_bytes

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def offset_of(self, coord) -> int:
        """Element offset of ``(row, col)`` in the stored tile."""
        r, c = coord
        p, cc = divmod(c, self.panel)
        chunk_elems = 16 // self.elem_bytes
        chunks = self.panel // chunk_elems
        phase = (r // max(1, 8 // chunks)) % min(chunks, 8)
        inner = r * self.panel + (((cc // chunk_elems) ^ phase) * chunk_elems
                                  + cc % chunk_elems)
        return p * self.rows * self.panel + inner

    def offsets(self, ll: LinearLayout, transposed: bool = False) -> LinearLayout:
        """``ll`` (a register layout of this tile, or of its transpose when ``transposed``)
        with coordinates replaced by element offsets."""
        if transposed:
            return ll.map_coords(lambda v: (self.offset_of((v[1], v[0])),),
                                 (self.rows * self.cols,))
        return ll.map_coords(lambda v: (self.offset_of(v),), (self.rows * self.cols,))

    def start_byte(self, row: int, col: int) -> int:
        """Byte offset of the sub-matrix starting at ``(row, col)`` (row % 8 == 0, col a whole
        16-byte chunk): its unswizzled address, which is what a descriptor's start field holds."""
        p, cc = divmod(col, self.panel)
        return self.elem_bytes * (p * self.rows * self.panel + row * self.panel + cc)

    def descriptor_bits(self) -> int:
        """The descriptor's constant fields (LBO, SBO, swizzle mode); the start address is
        added per instruction (its field is bits 0-13, address >> 4)."""
        sbo = 8 * self.swizzle_bytes
        lbo = 16 if self.major == "K" else self.rows * self.swizzle_bytes
        return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_MODE[self.swizzle_bytes] << 62)


def align(n: int, to: int = ALIGN) -> int:
    return (n + to - 1) // to * to


#: bytes per element and K per instruction of each operand kind
KIND_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "s8": 1, "e4m3": 1, "e5m2": 1}
KIND_K = {"f16": 16, "bf16": 16, "tf32": 8, "s8": 32, "e4m3": 32, "e5m2": 32}
#: kinds whose B wgmma reads N-major (``imm-trans-b``; 16-bit types only)
MN_MAJOR_B = ("f16", "bf16")


@dataclass(frozen=True)
class WgmmaStage:
    """One ring stage (or staging buffer) of an (m x k) @ (k x n) product: A (K-major) at
    byte 0, B after it (aligned): N-major for 16-bit kinds, else stored transposed, K-major."""

    m: int
    n: int
    k: int
    kind: str = "f16"
    #: store a 16-bit B K-major too (``imm-trans-b = 0``): a B whose registers run along K
    #: (e.g. ``k.T`` of a row-major K tile) is then stored with 16-byte vectors, not per element;
    #: also what TMA writes for a descriptor block ``[N, K]`` used as ``b.T``
    b_k_major: bool = False

    @property
    def a(self) -> OperandTile:
        return OperandTile(self.m, self.k, "K", KIND_BYTES[self.kind])

    @property
    def b(self) -> OperandTile:
        if self.b_mn_major:
            return OperandTile(self.k, self.n, "MN", KIND_BYTES[self.kind])
        return OperandTile(self.n, self.k, "K", KIND_BYTES[self.kind])

    @property
    def b_mn_major(self) -> bool:
        return self.kind in MN_MAJOR_B and not self.b_k_major

    def b_start_byte(self, kk: int, n0: int) -> int:
        return self.b.start_byte(kk, n0) if self.b_mn_major else self.b.start_byte(n0, kk)

    @property
    def b_offset(self) -> int:
        return align(self.a.bytes)

    @property
    def bytes(self) -> int:
        return align(self.b_offset + self.b.bytes)
