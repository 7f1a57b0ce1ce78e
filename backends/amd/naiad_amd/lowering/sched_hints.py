"""LLVM lowering of ``amd.sched_hint``: the AMDGPU scheduling intrinsics of each recipe.

``llvm.amdgcn.sched.group.barrier(mask, size, sync_id)`` asks the machine scheduler to place a
group of ``size`` instructions of the classes in ``mask`` at that point of the block, groups in
program order; ``llvm.amdgcn.iglp.opt(strategy)`` picks one of LLVM's built-in interleavings.
Both are hints: they never change what the code computes, only the order LLVM emits it in.

========================  =========================================================================
variant                   recipe
========================  =========================================================================
attention                 ``iglp.opt(2)``: LLVM's MFMA/exp interleave for attention's softmax
                          (does nothing in blocks without matrix instructions)
memory-bound-attention    every global load of the iteration first (one VMEM-read group), then
                          local loads each followed by the arithmetic that uses them
local-prefetch            the local (LDS) loads first, so the next values are on their way while
                          this iteration computes
========================  =========================================================================
"""
from __future__ import annotations

from llvmlite import ir

from .irutil import I32, call_intrinsic

# sched.group.barrier instruction classes (LLVM AMDGPUUsage)
ALU, VALU, MFMA, VMEM_READ, DS_READ = 0x1, 0x2, 0x8, 0x20, 0x100

#: the most instructions one group may take (the recipe's groups are "all of them")
_ALL = 256
_PAIRS = 8

MFMA_EXP_INTERLEAVE = 2


def _group(builder, mask: int, size: int) -> None:
    call_intrinsic(builder, "llvm.amdgcn.sched.group.barrier", ir.VoidType(),
                   [ir.Constant(I32, mask), ir.Constant(I32, size), ir.Constant(I32, 0)])


def lower_sched_hint(kl, op) -> None:
    b = kl.b
    variant = op.attrs["variant"]
    if variant == "attention":
        call_intrinsic(b, "llvm.amdgcn.iglp.opt", ir.VoidType(), [ir.Constant(I32, MFMA_EXP_INTERLEAVE)])
    elif variant == "memory-bound-attention":
        _group(b, VMEM_READ, _ALL)
        for _ in range(_PAIRS):
            _group(b, DS_READ, 1)
            _group(b, VALU | MFMA, 4)
    elif variant == "local-prefetch":
        _group(b, DS_READ, _ALL)
        _group(b, ALU, _ALL)
    else:
        raise kl.error(f"internal: unknown amd.sched_hint variant {variant!r}")


LOWERINGS = {"amd.sched_hint": lower_sched_hint}
