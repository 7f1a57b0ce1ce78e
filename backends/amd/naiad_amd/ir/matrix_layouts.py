"""``#amd_mfma`` and ``#amd_wmma``: register layouts of AMD's matrix instructions.

Both are :class:`naiad.gpu.matrix.layout.MatrixLayout` subclasses: each gives the lane maps of
its instruction (one wave, one issue) and the core builds result and operand layouts from them.
The maps, as (register, lane) -> coordinate rules, following AMD's CDNA3/CDNA4 and RDNA3/RDNA4
ISA guides (matrix fragment tables) for the single-block instructions naiad emits:

MFMA (wave64), ``instrShape = [n, n, k]`` with ``n`` 32 or 16 (the non-K dim), ``g = 64 / n``
lane groups and ``kb = k / g`` K elements per lane:

* A (n x k): lane ``l``, element ``i`` -> row ``l % n``, column ``kb * (l // n) + i``;
* B (k x n): the transpose: row ``kb * (l // n) + i``, column ``l % n``;
* C/D (n x n), ``n = 32``: 16 elements, row ``8 * (i // 4) + 4 * (l // 32) + i % 4``, column
  ``l % 32``; ``n = 16``: 4 elements, row ``4 * (l // 16) + i``, column ``l % 16``.

WMMA (wave32, 16 x 16 x 16):

* version 1 (gfx11): A: row ``l % 16``, column ``i`` (16 elements; lanes 16-31 repeat lanes
  0-15); B the transpose; C/D: 8 elements, row ``2 * i + l // 16``, column ``l % 16``;
* version 2 (gfx12): A: row ``l % 16``, column ``8 * (l // 16) + i`` (8 elements); B the
  transpose; C/D: row ``8 * (l // 16) + i``, column ``l % 16``.

``version`` of ``#amd_mfma`` is the MFMA generation (2: gfx90a, 3: gfx942, 4: gfx950); it does
not change the maps, only which instructions exist. ``warpsPerCTA`` splits the result among the
waves (rows first). ``isTransposed`` (default true, as Triton chooses for its MFMA dots)
computes ``C^T = B^T A^T``: each lane's accumulator registers then run along N, so a row-major
result stores several elements at once, row reductions (softmax) stay mostly within a lane,
and a chained dot's A operand (attention's ``p``) is already in registers with K consecutive
on MFMA. Measured on flash-attention for gfx1100: 132 instead of 211 spilled registers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from naiad.errors import IRError
from naiad.backend import LinearLayout, is_pow2, log2
from naiad.backend import MatrixLayout


def _bits(n: int, unit) -> list:
    return [unit(1 << i) for i in range(log2(n))]


@lru_cache(maxsize=None)
def mfma_maps(n: int, k: int) -> tuple[LinearLayout, LinearLayout, LinearLayout]:
    """(A, B, C) lane maps of a single-block MFMA ``n x n x k`` on wave64."""
    groups = 64 // n
    kb = k // groups
    a = LinearLayout({"register": _bits(kb, lambda v: (0, v)),
                      "lane": _bits(n, lambda v: (v, 0)) + _bits(groups, lambda v: (0, kb * v))},
                     (n, k))
    b = LinearLayout({"register": _bits(kb, lambda v: (v, 0)),
                      "lane": _bits(n, lambda v: (0, v)) + _bits(groups, lambda v: (kb * v, 0))},
                     (k, n))
    if n == 32:
        regs = [(1, 0), (2, 0), (8, 0), (16, 0)]
        lanes = _bits(32, lambda v: (0, v)) + [(4, 0)]
    else:
        regs = [(1, 0), (2, 0)]
        lanes = _bits(16, lambda v: (0, v)) + [(4, 0), (8, 0)]
    c = LinearLayout({"register": regs, "lane": lanes}, (n, n))
    return a, b, c


@lru_cache(maxsize=None)
def wmma_maps(version: int) -> tuple[LinearLayout, LinearLayout, LinearLayout]:
    """(A, B, C) lane maps of WMMA 16x16x16 on wave32 (version 1: gfx11, 2: gfx12)."""
    if version == 1:
        kb, k_lane, c_regs, c_lane = 16, (0,), [(2, 0), (4, 0), (8, 0)], (1, 0)
    else:
        kb, k_lane, c_regs, c_lane = 8, (8,), [(1, 0), (2, 0), (4, 0)], (8, 0)
    a = LinearLayout({"register": _bits(kb, lambda v: (0, v)),
                      "lane": _bits(16, lambda v: (v, 0)) + [(0, k_lane[0])]}, (16, 16))
    b = LinearLayout({"register": _bits(kb, lambda v: (v, 0)),
                      "lane": _bits(16, lambda v: (0, v)) + [(k_lane[0], 0)]}, (16, 16))
    c = LinearLayout({"register": c_regs, "lane": _bits(16, lambda v: (0, v)) + [c_lane]},
                     (16, 16))
    return a, b, c


def _warps(value, who) -> tuple[int, int]:
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(is_pow2(int(x)) for x in value)):
        raise IRError(f"{who} warpsPerCTA must be two powers of two, got {value!r}")
    return tuple(int(x) for x in value)


@dataclass(frozen=True, eq=True)
class AmdMfmaLayout(MatrixLayout):
    mnemonic: ClassVar[str] = "amd_mfma"
    version: int = 3
    warps_per_cta: tuple = field(default=(2, 2), metadata={"name": "warpsPerCTA"})
    instr_shape: tuple = field(default=(32, 32, 8), metadata={"name": "instrShape"})
    is_transposed: bool = field(default=True, metadata={"name": "isTransposed"})

    def __post_init__(self):
        if self.version not in (2, 3, 4):
            raise IRError(f"#amd_mfma version must be 2 (gfx90a), 3 (gfx942) or 4 (gfx950), "
                          f"got {self.version!r}")
        object.__setattr__(self, "warps_per_cta", _warps(self.warps_per_cta, "#amd_mfma"))
        shape = tuple(int(x) for x in self.instr_shape)
        if len(shape) != 3 or shape[0] != shape[1] or shape[0] not in (16, 32) or \
                not is_pow2(shape[2]) or shape[2] * shape[0] < 64:
            raise IRError(f"#amd_mfma instrShape must be [32, 32, k] or [16, 16, k] with k a "
                          f"power of two filling the wave, got {list(self.instr_shape)}")
        object.__setattr__(self, "instr_shape", shape)

    def instruction_maps(self):
        n, _, k = self.instr_shape
        return mfma_maps(n, k)


@dataclass(frozen=True, eq=True)
class AmdWmmaLayout(MatrixLayout):
    mnemonic: ClassVar[str] = "amd_wmma"
    version: int = 1
    warps_per_cta: tuple = field(default=(2, 2), metadata={"name": "warpsPerCTA"})
    is_transposed: bool = field(default=True, metadata={"name": "isTransposed"})

    def __post_init__(self):
        if self.version not in (1, 2):
            raise IRError(f"#amd_wmma version must be 1 (gfx11) or 2 (gfx12), got {self.version!r}")
        object.__setattr__(self, "warps_per_cta", _warps(self.warps_per_cta, "#amd_wmma"))

    def instruction_maps(self):
        return wmma_maps(self.version)


LAYOUTS = [AmdMfmaLayout, AmdWmmaLayout]
