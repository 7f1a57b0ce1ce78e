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
"""
from __future__ import annotations

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
            rings[0].attrs["ping_pong"] = True
            outer = loop.parent
            outer.insert_before(loop, Operation(COND_BARRIER_OP, attrs={"group": 1},
                                                loc=loop.loc))
            outer.insert(outer.ops.index(loop) + 1,
                         Operation(COND_BARRIER_OP, attrs={"group": 0}, loc=loop.loc))
            changed = True
    return changed


def wants_ping_pong(arch: str, num_warps: int, num_stages: int) -> bool:
    """Triton's condition for block ping-pong: gfx942/gfx950, 8 warps, pipelined loops."""
    return arch in ("gfx942", "gfx950") and num_warps == 8 and num_stages >= 2
