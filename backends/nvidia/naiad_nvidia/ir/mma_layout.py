"""``#nvidia_mma``: the register layout of ``mma.sync`` (version 2: m16n8k16 / m16n8k8 tiles).

Why a layout of its own: a tensor-core instruction reads and writes *fragments* -- a fixed,
interleaved assignment of a 16x8 result tile (and of its A/B operand tiles) to the 32 lanes of
a warp. Expressed as a linear layout the core lowers every other op on these tensors (stores,
elementwise, reductions, conversions through shared memory) without knowing about tensor cores.

Fragments per the PTX ISA ("Matrix Fragments for mma.m16n8k16" / "mma.m16n8k8"), with
``g = lane // 4`` (groupID) and ``t = lane % 4`` (threadID_in_group):

* C/D (16x8, f32 or f16): c_i at row ``g + 8 * (i // 2)``, column ``2 * t + i % 2``.
* A, 16-bit types (16x16): a_i at row ``g + 8 * ((i // 2) % 2)``, column
  ``2 * t + i % 2 + 8 * (i // 4)``; a pair (a_2j, a_2j+1) fills one 32-bit register.
* B, 16-bit types (16x8): b_i at row ``2 * t + i % 2 + 8 * (i // 2)``, column ``g``.
* A, tf32 (16x8): a_i at row ``g + 8 * (i % 2)``, column ``t + 4 * (i // 2)``.
* B, tf32 (8x8): b_i at row ``t + 4 * i``, column ``g``.
* A, 8-bit integers (16x32, m16n8k32): a_i at row ``g + 8 * ((i // 4) % 2)``, column
  ``4 * t + i % 4 + 16 * (i // 8)``; four consecutive elements fill one 32-bit register.
* B, 8-bit integers (32x8): b_i at row ``4 * t + i % 4 + 16 * (i // 4)``, column ``g``.

Register bit ``j`` of a fragment is bit ``j`` of the element index ``i``, so the register order
of one tile is the PTX element order. Warps tile the result: the low ``log2(wm)`` warp bits step
rows by 16, the next ``log2(wn)`` step columns by 8. Tensors larger than the CTA tile repeat in
registers (``fit_to_shape``). Operand A is shared by the warps of one row of warps (its warp
bases along the columns are zero), B by those of one column.

``kWidth`` of ``#dot_operand<opIdx, parent = #nvidia_mma, kWidth>`` is the number of consecutive
K elements one 32-bit register holds: 2 for f16/bf16 (k16 tiles), 1 for tf32 (k8 tiles), 4 for
int8 (k32 tiles). The
core's FMA dot asks for kWidth 0, which this layout refuses, so an FMA dot never reads mma
fragments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from naiad.errors import IRError
from naiad.backend import Layout, fit_to_shape, is_pow2, log2

#: lanes of one warp: (row, col) basis of lane bits 0..4 for the result / A / B fragments
C_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
#: register bases of one fragment, per operand and kWidth
FRAGMENT_REGISTERS = {
    ("C", None): ((0, 1), (8, 0)),
    ("A", 2): ((0, 1), (8, 0), (0, 8)),
    ("B", 2): ((1, 0), (8, 0)),
    ("A", 1): ((8, 0), (0, 4)),
    ("B", 1): ((4, 0),),
    ("A", 4): ((0, 1), (0, 2), (8, 0), (0, 16)),
    ("B", 4): ((1, 0), (2, 0), (16, 0)),
}
FRAGMENT_LANES = {
    ("A", 2): ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)),
    ("B", 2): ((2, 0), (4, 0), (0, 1), (0, 2), (0, 4)),
    ("A", 1): ((0, 1), (0, 2), (1, 0), (2, 0), (4, 0)),
    ("B", 1): ((1, 0), (2, 0), (0, 1), (0, 2), (0, 4)),
    ("A", 4): ((0, 4), (0, 8), (1, 0), (2, 0), (4, 0)),
    ("B", 4): ((4, 0), (8, 0), (0, 1), (0, 2), (0, 4)),
}
#: K extent of one instruction per kWidth
K_PER_INSTRUCTION = {2: 16, 1: 8, 4: 32}


@dataclass(frozen=True, eq=True)
class NvidiaMmaLayout(Layout):
    mnemonic: ClassVar[str] = "nvidia_mma"
    version: int = 2
    warps_per_cta: tuple = field(default=(4, 1), metadata={"name": "warpsPerCTA"})
    instr_shape: tuple = field(default=(16, 8), metadata={"name": "instrShape"})

    def __post_init__(self):
        if self.version != 2:
            raise IRError(f"#nvidia_mma supports version 2 (mma.sync) only, got {self.version!r}")
        w = self.warps_per_cta
        if not (isinstance(w, (tuple, list)) and len(w) == 2 and all(is_pow2(x) for x in w)):
            raise IRError(f"#nvidia_mma warpsPerCTA must be two powers of two, got {w!r}")
        object.__setattr__(self, "warps_per_cta", tuple(int(x) for x in w))
        if tuple(self.instr_shape) != (16, 8):
            raise IRError(f"#nvidia_mma instrShape must be [16, 8], got {self.instr_shape!r}")
        object.__setattr__(self, "instr_shape", (16, 8))

    @property
    def tile(self) -> tuple[int, int]:
        """Rows and columns of the result one CTA computes per repetition."""
        wm, wn = self.warps_per_cta
        return 16 * wm, 8 * wn

    def _warp_bases(self, which: str) -> list[tuple[int, int]]:
        wm, wn = self.warps_per_cta
        rows = [(16 << i, 0) if which in ("C", "A") else (0, 0) for i in range(log2(wm))]
        cols = [(0, 8 << j) if which in ("C", "B") else (0, 0) for j in range(log2(wn))]
        return rows + cols

    def to_linear(self, shape):
        shape = _rank2(shape, self)
        bases = {"register": list(FRAGMENT_REGISTERS[("C", None)]), "lane": list(C_LANES),
                 "warp": self._warp_bases("C")}
        return fit_to_shape(bases, shape, order=(1, 0))

    def dot_operand_linear(self, op_idx, shape, k_width):
        shape = _rank2(shape, self)
        if k_width not in K_PER_INSTRUCTION:
            raise IRError(f"operands of {self} need kWidth 2 (16-bit types), 1 (tf32) or 4 (int8), "
                          f"got {k_width}")
        if op_idx not in (0, 1):
            raise IRError(f"dot operand index must be 0 or 1, got {op_idx}")
        which = "AB"[op_idx]
        bases = {"register": list(FRAGMENT_REGISTERS[(which, k_width)]),
                 "lane": list(FRAGMENT_LANES[(which, k_width)]),
                 "warp": self._warp_bases(which)}
        # K repeats first (the lowering walks K outermost), then M (A) or N (B)
        return fit_to_shape(bases, shape, order=(1, 0) if op_idx == 0 else (0, 1))


def _rank2(shape, layout) -> tuple[int, int]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or not all(is_pow2(s) for s in shape):
        raise IRError(f"{layout} holds rank-2 tensors with power-of-two sides, got {list(shape)}")
    return shape
