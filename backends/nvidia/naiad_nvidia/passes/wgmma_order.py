"""The order in which one warpgroup issues the wgmmas of a dot whose accumulator does not fit
in registers beside everything else the loop keeps live.

Why: a 4-warp 128x256 fp32 accumulator is 256 registers a thread -- more than the 255 a
thread may have -- so ptxas keeps part of it in local memory whatever we do. The warpgroup
computes it as several accumulator blocks (two m64n256 row blocks here). Issued K step
outermost (block 0 k0, block 1 k0, block 0 k1, ...), consecutive wgmmas need different blocks
in registers, so ptxas swaps half the accumulator out and in around *every* wgmma (4.6 KB
spilled, ~450 spill stores in the K loop of tutorial 03's 128x256x64 at 4 warps). Issued block
outermost (every K step of block 0, then of block 1), one block stays in registers for its
whole chain and the other is swapped once per block: the spill traffic of the loop drops to
one swap per block per iteration, as Triton's (which issues its wgmmas M, then N, then K).

Dots within the budget keep the K-step-outermost order (no spill to avoid; their code is
unchanged). The choice is an op attribute read by :func:`naiad_nvidia.lowering.wgmma.plan`,
and a performance remark at the dot's line says what was chosen and why.
"""
from __future__ import annotations

from naiad.backend import remarks

#: wgmma ops whose issue order this pass chooses
WGMMA_OPS = ("nvidia.wgmma_ring", "nvidia.wgmma_staged")
#: the op attribute: issue every K step of one accumulator block before the next block
BLOCK_OUTER_ATTR = "block_outer"
#: 32-bit registers a thread may address
MAX_REGISTERS = 255
#: accumulator registers a thread above which the rest of the loop (two 64-bit descriptors,
#: copy addresses, loop counters and predicates: 60-90 registers in tutorial 03's loops) no
#: longer fits beside it and ptxas spills part of the accumulator
ACCUMULATOR_BUDGET = 192
#: widest N of one wgmma, and the rows one warpgroup covers per instruction
MAX_N, ROWS = 256, 64


def accumulator_registers(acc_type) -> int:
    """32-bit registers per thread of an accumulator tile (f32 or i32 elements)."""
    m, n = acc_type.shape
    return m * n // (32 * _warps(acc_type))


def _warps(acc_type) -> int:
    count = 1
    for w in acc_type.layout.warps_per_cta:
        count *= w
    return count


def accumulator_blocks(acc_type) -> int:
    """Accumulator blocks (one per m64nN wgmma chain) each warpgroup holds."""
    m, n = acc_type.shape
    warps_m = acc_type.layout.warps_per_cta[0]
    return max(1, m // (16 * warps_m)) * max(1, -(-n // MAX_N))


def order_large_accumulators(module, ctx=None) -> None:
    """Mark each wgmma op whose accumulator exceeds :data:`ACCUMULATOR_BUDGET` registers a
    thread (and spans several blocks) to issue its wgmmas block outermost, with a remark."""
    for fn in module.functions.values():
        for op in fn.walk():
            if op.name not in WGMMA_OPS:
                continue
            acc = op.operands[0] if op.name == "nvidia.wgmma_ring" else op.operands[2]
            regs, blocks = accumulator_registers(acc.type), accumulator_blocks(acc.type)
            if regs <= ACCUMULATOR_BUDGET or blocks < 2:
                continue
            op.attrs[BLOCK_OUTER_ATTR] = True
            m, n = acc.type.shape
            remarks.remark(module, op.loc, "dot", (
                f"has a {m}x{n} accumulator of {regs} registers a thread at "
                f"{_warps(acc.type)} warps (over {ACCUMULATOR_BUDGET} of the "
                f"{MAX_REGISTERS}): ptxas keeps part of it in local memory; its wgmmas are "
                f"issued one accumulator block at a time ({blocks} blocks, every K step of a "
                f"block before the next), so a block is swapped out once per iteration "
                f"rather than around every wgmma; num_warps={2 * _warps(acc.type)} would "
                f"spread it over twice the registers"))
