"""Lowering of the ping-pong pieces: ``amd.cond_barrier`` and the matrix phase's priority.

``amd.cond_barrier {group}``: the wave's warp index (made uniform with ``readfirstlane`` so the
branch is scalar) selects the half; that half executes ``s_barrier`` (with the workgroup fences
of every naiad barrier).

``matrix_phase(builder, begin)`` (``TargetInfo.matrix_phase``, called by the core around the
MFMAs of a ping-pong ``matrix_mma_ring``): ``s_setprio 1`` at the start, ``s_setprio 0`` at the
end, each fenced by ``sched.barrier 0`` so the machine scheduler moves no instruction across
it. The raised priority lets the wave in its matrix phase issue ahead of the other half's
memory phase on the same SIMD, which is what makes the two halves alternate.
"""
from __future__ import annotations

from llvmlite import ir

from .irutil import I32, call_intrinsic

I16 = ir.IntType(16)


def _sched_barrier(builder) -> None:
    call_intrinsic(builder, "llvm.amdgcn.sched.barrier", ir.VoidType(), [ir.Constant(I32, 0)])


def matrix_phase(builder, begin: bool) -> None:
    _sched_barrier(builder)
    call_intrinsic(builder, "llvm.amdgcn.s.setprio", ir.VoidType(),
                   [ir.Constant(I16, 1 if begin else 0)])
    _sched_barrier(builder)


def uniform_warp(kl):
    """The wave's warp index as a wave-uniform (scalar) value."""
    return call_intrinsic(kl.b, "llvm.amdgcn.readfirstlane.i32", I32, [kl.warp])


def lower_cond_barrier(kl, op, warp_index=uniform_warp) -> None:
    b = kl.b
    warp = warp_index(kl)
    half = ir.Constant(I32, kl.num_warps // 2)
    pred = b.icmp_unsigned(">=" if op.attrs["group"] == 1 else "<", warp, half)

    def emit():
        kl.ti.barrier(b)
        return []

    kl.if_then(pred, emit, [])


LOWERINGS = {"amd.cond_barrier": lower_cond_barrier}
