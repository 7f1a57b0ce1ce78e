"""An executable model of AMD's matrix instructions, written from the ISA documents' fragment
tables -- independent of naiad's lane maps (``naiad_amd.ir.matrix_layouts``), so running GPU IR
through it checks those maps instead of repeating them.

Each instruction is identified by its ISA mnemonic; shape and element kind are read from the
mnemonic itself (``v_mfma_f32_32x32x8_f16``: D is f32, M = N = 32, K = 8, inputs f16). Per
lane ``l`` and element ``i`` of the lane's registers, following the CDNA3 ISA guide's
"dependent arithmetic / matrix layout" tables and AMD's matrix instruction calculator:

* MFMA, single block, wave64, ``n x n x k``: a lane group is ``l // n`` (``64 / n`` groups);
  A[l % n][group * (k * n / 64) + i], B[group * (k * n / 64) + i][l % n];
  D for n = 32: D[8 * (i // 4) + 4 * group + i % 4][l % 32]; for n = 16: D[4 * group + i][l % 16].
* WMMA gfx11 (RDNA3 ISA, wave32): A[l % 16][i] (i < 16; lanes 16-31 must hold a copy of lanes
  0-15), B[i][l % 16], D[2 * i + l // 16][l % 16] (i < 8).
* WMMA gfx12 (RDNA4 ISA, wave32): A[l % 16][8 * (l // 16) + i] (i < 8), B likewise transposed,
  D[8 * (l // 16) + i][l % 16].

:func:`execute` builds the full A, B, C matrices from every lane's registers (any element no
lane supplies is an error, as is a gfx11 copy that differs), computes ``D = A @ B + C`` in
float64 (integer instructions: exact, wrapped to int32), rounds to the accumulator type, and
hands each lane its D registers. xf32 rounds A and B to 10 mantissa bits first.
"""
from __future__ import annotations

import re

import numpy as np

_NAME = re.compile(r"v_(mfma|wmma)_(f32|i32)_(\d+)x(\d+)x(\d+)_(\w+?)(_gfx12)?$")


class Model:
    def __init__(self, name: str):
        m = _NAME.match(name)
        if m is None:
            raise ValueError(f"no ISA model for {name!r}")
        family, acc, mm, nn, kk, kind, gfx12 = m.groups()
        self.name, self.family, self.acc, self.kind = name, family, acc, kind
        self.m, self.n, self.k = int(mm), int(nn), int(kk)
        if family == "mfma":
            self.wave = 64
            self.groups = 64 // self.n
            self.kb = self.k * self.n // 64
            self.d_count = self.m * self.n // 64
            self.variant = "mfma"
        else:
            self.wave = 32
            self.variant = "gfx12" if gfx12 else "gfx11"
            self.kb = 8 if gfx12 else 16
            self.d_count = 8
        self._index: dict = {}

    # -- fragment tables (lane, element) -> matrix coordinate -------------------------------
    def a_coord(self, lane: int, i: int):
        if self.variant == "mfma":
            return lane % self.n, (lane // self.n) * self.kb + i
        if self.variant == "gfx11":
            return lane % 16, i
        return lane % 16, 8 * (lane // 16) + i

    def b_coord(self, lane: int, i: int):
        row, col = self.a_coord(lane, i)
        return col, row

    def d_coord(self, lane: int, i: int):
        if self.variant == "mfma":
            g = lane // self.n
            if self.n == 32:
                return 8 * (i // 4) + 4 * g + i % 4, lane % 32
            return 4 * g + i, lane % 16
        if self.variant == "gfx11":
            return 2 * i + lane // 16, lane % 16
        return 8 * (lane // 16) + i, lane % 16

    # -- execution ------------------------------------------------------------------------------
    def _gather(self, lanes, shape, coord, what):
        vals = np.asarray(lanes, dtype=np.float64)
        key = (what, vals.shape)
        if key not in self._index:
            pairs = [[coord(lane, i) for i in range(vals.shape[1])] for lane in range(vals.shape[0])]
            idx = np.array(pairs)
            self._index[key] = (idx[..., 0], idx[..., 1])
        rows, cols = self._index[key]
        mat = np.full(shape, np.nan)
        mat[rows, cols] = vals
        if not np.array_equal(mat[rows, cols], vals, equal_nan=True):
            raise AssertionError(f"{self.name}: lanes disagree on elements of {what} they must "
                                 f"both hold")
        if np.isnan(mat).any():
            raise AssertionError(f"{self.name}: {what} has elements no lane supplies (or NaN)")
        return mat

    def execute(self, a_lanes, b_lanes, c_lanes):
        """Per-lane register lists in, per-lane D register lists out."""
        assert len(a_lanes) == self.wave, (self.name, len(a_lanes))
        a = self._gather(a_lanes, (self.m, self.k), self.a_coord, "A")
        b = self._gather(b_lanes, (self.k, self.n), self.b_coord, "B")
        c = self._gather(c_lanes, (self.m, self.n), self.d_coord, "C")
        if self.kind == "xf32":
            a, b = _tf32(a), _tf32(b)
        if self.acc == "i32":
            d = (a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64))
            d = ((d + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.float64)
        else:
            d = (a @ b + c).astype(np.float32).astype(np.float64)
        rows, cols = self._index[("C", (self.wave, self.d_count))]
        return d[rows, cols]


def _tf32(x):
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


_MODELS: dict[str, Model] = {}


def model(name: str) -> Model:
    if name not in _MODELS:
        _MODELS[name] = Model(name)
    return _MODELS[name]
