""":class:`MatrixLayout`: the base of a backend's matrix-unit layouts (``#amd_mfma``, ...).

A subclass is a frozen dataclass with a ``mnemonic``, a ``warps_per_cta`` field and
:meth:`instruction_maps` (the one-issue lane maps of its instruction, as in the table). From
those the base builds every linear form the core needs:

* the result (accumulator): the instruction's C map, warps tiling rows (low warp bits) then
  columns, larger tensors repeating in registers;
* operand ``dot_operand(opIdx, parent, kWidth)``: the instruction's A (or B) map with its K
  coordinates spread so each lane holds ``kWidth`` consecutive K elements -- ``kWidth / kBase``
  (``kpack``) issues read consecutive slices of them. Hardware K bit ``b`` becomes tensor K bit
  ``b`` below ``log2(kBase)`` and ``b + log2(kpack)`` above; A and B spread K the same way, so
  every issue still multiplies matching K elements (a dot sums over K in any order).

Why in core: the planner (:mod:`.plan`) reads issues back out of these layouts, so every
backend's layouts must be built the same way.
"""
from __future__ import annotations

from typing import ClassVar

from ...errors import IRError
from ..layouts import Layout
from ..linear_layout import LinearLayout, fit_to_shape, is_pow2, log2


class MatrixLayout(Layout):
    """Base of layouts whose registers are a matrix instruction's fragments."""

    #: stores take this layout as it is (the epilogue writes the accumulator in place)
    stores_in_place: ClassVar[bool] = True

    def instruction_maps(self) -> tuple[LinearLayout, LinearLayout, LinearLayout]:
        """(A, B, C) lane maps of one issue of the hardware instruction: (register, lane) ->
        tile coordinates."""
        raise NotImplementedError

    @property
    def transposed(self) -> bool:
        """The instruction computes ``C^T = B^T A^T``: the hardware's A operand is fed B's
        fragment and its B operand A's, so the accumulator holds the transposed result. Its
        registers then run along N -- the contiguous dimension of a row-major result, and the
        K dimension of a chained dot's A operand."""
        return bool(getattr(self, "is_transposed", False))

    def fragment_maps(self) -> tuple[LinearLayout, LinearLayout, LinearLayout]:
        """(A, B, C) maps as this layout's tensors see them (hardware maps, swapped when
        :attr:`transposed`)."""
        a, b, c = self.instruction_maps()
        if not self.transposed:
            return a, b, c
        return b.permute((1, 0)), a.permute((1, 0)), c.permute((1, 0))

    @property
    def instr_tile(self) -> tuple[int, int]:
        return self.fragment_maps()[2].out_shape

    def _warp_bases(self, which: str) -> list[tuple[int, int]]:
        wm, wn = self.warps_per_cta
        m, n = self.instr_tile
        rows = [(m << i, 0) if which in "CA" else (0, 0) for i in range(log2(wm))]
        cols = [(0, n << j) if which in "CB" else (0, 0) for j in range(log2(wn))]
        return rows + cols

    def to_linear(self, shape):
        shape = _rank2(shape, self)
        c = self.fragment_maps()[2]
        bases = {"register": list(c.bases.get("register", ())),
                 "lane": list(c.bases["lane"]), "warp": self._warp_bases("C")}
        return fit_to_shape(bases, shape, order=(1, 0))

    def dot_operand_linear(self, op_idx, shape, k_width):
        shape = _rank2(shape, self)
        if op_idx not in (0, 1):
            raise IRError(f"dot operand index must be 0 or 1, got {op_idx}")
        hw = self.fragment_maps()[op_idx]
        k_base = hw.in_size("register")
        if not is_pow2(k_width) or k_width % k_base:
            raise IRError(f"operands of {self} need kWidth a power-of-two multiple of "
                          f"{k_base}, got {k_width}")
        kdim = 1 - op_idx  # A is (m, k), B is (k, n)
        spread = log2(k_width // k_base)

        def relabel(v):
            v = list(v)
            k = v[kdim]
            if k >= k_base:
                v[kdim] = k << spread
            return tuple(v)

        regs = [relabel(v) for v in hw.bases.get("register", ())]
        regs += [tuple(k_base << i if d == kdim else 0 for d in range(2)) for i in range(spread)]
        bases = {"register": regs, "lane": [relabel(v) for v in hw.bases["lane"]],
                 "warp": self._warp_bases("AB"[op_idx])}
        # K repeats first (one fragment per K step), then M (A) or N (B)
        return fit_to_shape(bases, shape, order=(kdim, 1 - kdim))


def _rank2(shape, layout) -> tuple[int, int]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or not all(is_pow2(s) for s in shape):
        raise IRError(f"{layout} holds rank-2 tensors with power-of-two sides, got {list(shape)}")
    return shape
