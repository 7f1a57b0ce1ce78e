"""LLVM lowering of ``nvidia.fma_ring(acc, slot)`` (:mod:`naiad_nvidia.passes.fma_ring`): the
core's FMA dot on A and B that ``nvidia.cp_async`` already put row-major in ring slot ``slot``
(made visible by the wait and barrier before it)."""
from __future__ import annotations

from naiad.backend import fma_dot_from_shared, i32
from naiad.ir import ScalarType


def lower_fma_ring(kl, op) -> None:
    acc, slot = op.operands
    b = kl.b
    base = b.mul(kl.get(slot)[0], i32(int(op.attrs["stage_bytes"])))
    b_base = b.add(base, i32(int(op.attrs["b_offset"])))
    kl.set(op.results[0], fma_dot_from_shared(kl, acc, ScalarType(op.attrs["elem"]),
                                              int(op.attrs["k"]), base, b_base))


LOWERINGS = {"nvidia.fma_ring": lower_fma_ring}
