"""GPU-IR pass ``block_ping_pong`` (gfx942/gfx950, 8 warps, ``num_stages >= 2``): the two
halves of the workgroup alternate a K loop's memory and MFMA phases.

Why: with every wave in the same phase, all four SIMDs issue LDS reads/writes together and
then MFMAs together, so neither unit is busy all the time. Running half of the waves one phase
behind the other puts a memory-phase wave and an MFMA-phase wave on each SIMD at once; the
MFMA phase runs at raised priority (``s_setprio 1``), so the matrix core is fed while the
other wave's memory traffic fills the gaps (Triton's AMD "block ping-pong" does the same).

What it does, for each loop the stream pipeliner turned into an LDS ring:

* marks its ``matrix_mma_ring`` ``ping_pong``: the op becomes memory phases (LDS reads of every
  fragment, LDS writes of the next tile) and matrix phases bracketed by ``s_setprio 1`` /
  ``s_setprio 0``, separated by barriers (core: :mod:`naiad.gpu.matrix.ring`);
* puts ``amd.cond_barrier {group = 1}`` before the loop (the upper half waits at one extra
  barrier, so it runs one phase behind) and ``amd.cond_barrier {group = 0}`` after it (the lower
  half catches up, so both have passed the same number of barriers again).

Correctness with the halves a phase apart is argued in :mod:`naiad.gpu.matrix.ring`. The
stream pipeliner gives the ring two slots when ping-pong is on (``min_slots = 2``: two phases,
two barriers per iteration) unless that would overflow LDS; a one-slot ring (a 256x256x64 fp16
tile fills gfx942's 64 KiB with one) takes four phases: read, MFMAs, write, MFMAs.

A memory phase reads the fragments its matrix phase uses before the MFMAs. Where every
fragment of a tile, the accumulators and the next tile would not fit a wave's share of the
SIMD's registers (:func:`registers_held` over :func:`register_budget`), the ring gets
``k_groups = g`` (the fewest of 2, 4 that fit): the memory and matrix phases alternate per K
range, so only a ``1/g`` share of the fragments is live (the 256x256x64 fp16 tile: 4 ranges).
A loop that fits with none is left without ping-pong, with a performance remark: spilling would
cost more than the overlap gains.
"""
from __future__ import annotations

from naiad.backend import DotOperandLayout, linear_of, matrix_instruction, remarks
from naiad.ir import Module, Operation

from ..ir.ping_pong_ops import COND_BARRIER_OP

MMA_RING = "matrix_mma_ring"


def block_ping_pong(module: Module, ctx=None) -> bool:
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for loop in [op for op in fn.walk() if op.name == "for"]:
            rings = [op for op in loop.regions[0].block.ops if op.name == MMA_RING]
            if len(rings) != 1 or rings[0].attrs.get("ping_pong"):
                continue
            budget = register_budget(getattr(ctx, "num_warps", 8))
            groups = fitting_k_groups(rings[0], budget)
            if groups is None:
                need = registers_held(rings[0], max_k_groups(rings[0]))
                remarks.remark(module, rings[0].loc, "the dot's K loop",
                               f"runs without block ping-pong: its memory phase would hold "
                               f"about {need} VGPRs per lane (accumulators, a K range's "
                               f"fragments, the next tile), over {budget}")
                continue
            if groups > 1:
                rings[0].attrs["k_groups"] = groups
            rings[0].attrs["ping_pong"] = True
            outer = loop.parent
            outer.insert_before(loop, Operation(COND_BARRIER_OP, attrs={"group": 1},
                                                loc=loop.loc))
            outer.insert(outer.ops.index(loop) + 1,
                         Operation(COND_BARRIER_OP, attrs={"group": 0}, loc=loop.loc))
            changed = True
    return changed


#: VGPRs (plus AGPRs) of one SIMD, shared by the waves resident on it (gfx90a/gfx942/gfx950)
SIMD_REGISTERS = 512
#: registers left for addresses, masks and loop state beside the estimate
HEADROOM = 64
#: more K ranges than this add barriers faster than they free registers
MAX_K_GROUPS = 4


def register_budget(num_warps: int) -> int:
    """32-bit registers a lane may hold without spilling, less the headroom: the SIMD's
    registers over its waves (``num_warps`` waves spread over 4 SIMDs)."""
    return SIMD_REGISTERS // max(1, num_warps // 4) - HEADROOM


def registers_held(ring: Operation, k_groups: int = 1) -> int:
    """32-bit registers per lane a ping-pong memory phase keeps live: the accumulators, the
    A/B fragments of one of ``k_groups`` K ranges (read before that range's MFMAs) and the next
    tiles' registers. An estimate (measured on gfx942: the compiler needs up to ~60 more for
    addresses and masks, hence :data:`HEADROOM`)."""
    total = tile_registers(ring.operands[2].type)
    for i in (0, 1):
        v = ring.operands[i]
        total += -(-fragment_registers(ring, i) // k_groups)
        # a carried tile (num_stages >= 3) is live beside the one being loaded
        total += (2 if v.is_block_arg else 1) * tile_registers(v.type)
    return total


def tile_registers(t) -> int:
    """32-bit registers per lane of tensor type ``t`` in its own layout."""
    return -(-linear_of(t.layout, t.shape).in_size("register") * t.element.bitwidth // 32)


def fragment_registers(op: Operation, i: int) -> int:
    """32-bit registers per lane of every fragment of operand ``i`` of a matrix op (A 0, B 1)
    in the instruction's operand layout."""
    acc, t = op.operands[2].type, op.operands[i].type
    ll = DotOperandLayout(i, acc.layout, op.attrs["k_width"]).to_linear(t.shape)
    return -(-ll.in_size("register") * t.element.bitwidth // 32)


def max_k_groups(ring: Operation) -> int:
    """K ranges a memory phase may be cut into: one per matrix instruction K step, at most
    :data:`MAX_K_GROUPS` (each range costs two barriers per iteration)."""
    k = ring.operands[0].type.shape[1]
    step = matrix_instruction(ring.attrs["instruction"]).shape[2]
    return max(1, min(MAX_K_GROUPS, k // step))


def fitting_k_groups(ring: Operation, budget: int) -> int | None:
    """The fewest K ranges (1, 2, 4, ...) whose memory phase fits ``budget``; None if none."""
    groups = 1
    while groups <= max_k_groups(ring):
        if registers_held(ring, groups) <= budget:
            return groups
        groups *= 2
    return None


def wants_ping_pong(arch: str, num_warps: int, num_stages: int) -> bool:
    """Triton's condition for block ping-pong: gfx942/gfx950, 8 warps, pipelined loops."""
    return arch in ("gfx942", "gfx950") and num_warps == 8 and num_stages >= 2
