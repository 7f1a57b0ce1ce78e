"""Where a tensor-core matmul keeps its A/B tiles in shared memory, and the ``ldmatrix`` loads
that read them back as ``mma.m16n8k16`` fragments (f16/bf16 only).

Why: moving operands into fragments with the core's generic ``convert_layout`` costs a 16-bit
load per B element plus packing, four barriers per K step and 4-way bank conflicts. Here each
tile is stored once in a *swizzled* row-major form and every warp reads its fragments with
``ldmatrix.sync.aligned.m8n8.x4`` (A) and ``...x4.trans`` (B: stored K-major rows, read
transposed): one instruction gives a lane four 32-bit registers, i.e. a whole A fragment or the
B fragments of two n-tiles.

Swizzle (the core's ``#shared<vec = 8, perPhase, maxPhase, order = [1, 0]>``): a row is cut
into 16-byte chunks (8 elements); chunk ``c`` of row ``r`` is stored at chunk
``c ^ ((r / perPhase) % maxPhase)``. With ``perPhase = max(1, 8 / chunks)`` and
``maxPhase = min(chunks, 8)`` the eight rows one ``ldmatrix`` phase reads (same chunk, eight
consecutive rows) fall into eight different 16-byte bank groups: conflict-free.

Everything here is GF(2)-linear (swizzle, lane/warp address parts), so addresses are linear
layouts: a lane's address is the XOR of its lane/warp bases' offsets and a per-instruction
constant -- the same form the lowering emits and the tests emulate.

ldmatrix per the PTX ISA: in ``.x4`` lanes ``8j..8j+7`` give the row addresses of matrix ``j``;
register ``j`` of lane ``l`` receives row ``l / 4``, columns ``2 (l % 4)`` and ``+1`` of matrix
``j`` (``.trans``: column ``l / 4``, rows ``2 (l % 4)`` and ``+1``).
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.backend import LinearLayout, SharedLayout, log2

#: elements of one 16-byte ldmatrix row (16-bit types)
ROW = 8
#: K of one m16n8k16 instruction
K_STEP = 16


def swizzle_for(cols: int) -> SharedLayout:
    """The conflict-free swizzle of a row-major 16-bit tile with ``cols`` columns (>= 8)."""
    chunks = cols // ROW
    per_phase = max(1, 8 // chunks)
    return SharedLayout(ROW, per_phase, min(chunks, 8), (1, 0))


def to_offsets(ll: LinearLayout, swizzle: SharedLayout) -> LinearLayout:
    """``ll`` with every coordinate replaced by its element offset in the swizzled tile."""
    shape = ll.out_shape
    numel = 1
    for s in shape:
        numel *= s
    return ll.map_coords(lambda c: (swizzle.offset_of(c, shape),), (numel,))


def _warp_bases(warps, which: str) -> list[tuple[int, int]]:
    """The #nvidia_mma warp bases of operand ``which`` (A: rows by 16, B: columns by 8)."""
    wm, wn = warps
    rows = [(16 << i, 0) if which == "A" else (0, 0) for i in range(log2(wm))]
    cols = [(0, 8 << j) if which == "B" else (0, 0) for j in range(log2(wn))]
    return rows + cols


@dataclass(frozen=True)
class Load:
    """One ldmatrix: ``const`` is XORed into the lane's address part; registers are
    (operand tile origin, which 32-bit word of its fragment) in the instruction's order."""

    which: str            # "A" or "B"
    x4: bool              # .x4 (else .x2)
    const: int            # element offset within the operand's tile
    registers: tuple      # ((row0, col0), word) per result register


@dataclass(frozen=True)
class Mma:
    a: tuple              # A tile origin (row, k)
    b: tuple              # B tile origin (k, col)
    c: tuple              # C tile origin (row, col)


@dataclass(frozen=True)
class FragmentPlan:
    """What one warp does: per K step, its loads then its mmas (see :func:`plan`)."""

    a_swizzle: SharedLayout
    b_swizzle: SharedLayout
    a_lanes: LinearLayout     # lane/warp -> element offset of the lane's A row address
    b_lanes: LinearLayout
    b_offset: int             # byte offset of the B tile in the scratch buffer
    scratch: int              # bytes of both tiles
    steps: tuple              # ((Load, ...), (Mma, ...)) per K step


def plan(m: int, n: int, k: int, warps) -> FragmentPlan:
    """The loads and mmas of an (m x k) @ (k x n) product on warps ``(wm, wn)``; shapes as
    the accelerate-matmul pass admits them (m % 16 wm == 0, n % 8 wn == 0, k % 16 == 0)."""
    wm, wn = warps
    a_sw, b_sw = swizzle_for(k), swizzle_for(n)
    n_tiles = n // (8 * wn)        # n-tiles per warp
    b_x4 = n_tiles % 2 == 0        # two n-tiles per ldmatrix.x4.trans, else .x2
    # lane l addresses row (l % 8) of matrix l / 8: A's matrices are rows +8 then K +8; B's
    # (stored K-major) are K +8 then the warp's next n-tile (8 * wn columns on)
    a_lanes = LinearLayout({"lane": [(1, 0), (2, 0), (4, 0), (8, 0), (0, ROW)],
                            "warp": _warp_bases(warps, "A")}, (m, k))
    b_lanes = LinearLayout({"lane": [(1, 0), (2, 0), (4, 0), (8, 0),
                                     (0, 8 * wn) if b_x4 else (0, 0)],
                            "warp": _warp_bases(warps, "B")}, (k, n))
    a_bytes = m * k * 2
    b_offset = (a_bytes + 127) // 128 * 128
    steps = []
    for kk in range(0, k, K_STEP):
        loads = []
        for tm in range(0, m, 16 * wm):
            loads.append(Load("A", True, a_sw.offset_of((tm, kk), (m, k)),
                              tuple(((tm, kk), w) for w in range(4))))
        for tn in range(0, n, 8 * wn * (2 if b_x4 else 1)):
            regs = [((kk, tn), 0), ((kk, tn), 1)]
            if b_x4:
                regs += [((kk, tn + 8 * wn), 0), ((kk, tn + 8 * wn), 1)]
            loads.append(Load("B", b_x4, b_sw.offset_of((kk, tn), (k, n)), tuple(regs)))
        mmas = tuple(Mma((tm, kk), (kk, tn), (tm, tn))
                     for tm in range(0, m, 16 * wm) for tn in range(0, n, 8 * wn))
        steps.append((tuple(loads), mmas))
    return FragmentPlan(a_sw, b_sw, to_offsets(a_lanes, a_sw), to_offsets(b_lanes, b_sw),
                        b_offset, b_offset + k * n * 2, tuple(steps))
