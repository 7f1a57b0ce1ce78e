"""GPU-IR passes ``stream_pipeline`` and ``one_buffer_staging`` (AMD): the core's LDS ring pipeliner
(:mod:`naiad.gpu.matrix.stream_pipeline`) configured by this compile's ``num_stages``.

Why a pass of the AMD plugin: as in Triton's AMD backend, ``num_stages`` is the stream
pipeliner's depth -- ``num_stages - 1`` LDS buffers, the global loads of a K loop's operand tiles
issued ``num_stages - 1`` iterations ahead of their MFMAs; 1 leaves the loop as written.
It runs after the operands are staged (``stage_matrix_operands``) and before shared memory is
allocated, so the ring is sized and fenced by the core's allocator and barrier pass.

``one_buffer_staging``: a staged ``matrix_mma`` left in a loop of ``num_stages = 1`` (or outside
loops when the option is 1) stages A and B one after the other through one buffer
(``one_buffer``, :mod:`naiad.gpu.matrix.staging`): half the LDS (a 128x128x32 fp16 tile: 8 KiB,
not 16) for two more barriers per issue round -- what Triton's allocator gives its
``local_alloc``/``local_load`` pairs at one stage, so LDS grows 8/16/32 KiB with 1/2/3 stages.
"""
from __future__ import annotations

import functools

from naiad.backend import pipeline_matrix_loops
from naiad.ir import Module


def stream_pipeline_pass(num_stages: int, min_slots: int = 1):
    """The pass for one compile, named ``stream_pipeline`` in the pipeline and dumps
    (``min_slots`` 2 for block ping-pong)."""
    p = functools.partial(pipeline_matrix_loops, num_stages=int(num_stages),
                          min_slots=int(min_slots))
    p.__name__ = "stream_pipeline"
    return p


def one_buffer_staging_pass(num_stages: int):
    """The pass for one compile, named ``one_buffer_staging`` in the pipeline and dumps."""
    def one_buffer_staging(module: Module, ctx=None) -> bool:
        from naiad.backend import operand_views

        changed = False
        for fn in module.functions.values():
            for op in fn.walk():
                if op.name != "matrix_mma" or _stages_at(op, num_stages) != 1:
                    continue
                if all(staged is not None for _, _, staged in operand_views(op)) and \
                        _a_fragments_fit(op, ctx):
                    op.attrs["one_buffer"] = True
                    changed = True
        return changed

    return one_buffer_staging


def _a_fragments_fit(op, ctx) -> bool:
    """A's fragments, read before B is staged, stay live beside the accumulator and B's tile:
    only where that fits the target's register budget (gfx1100's WMMA 128x128x32 fp16 tile
    does not: 25 spilled registers measured)."""
    from .block_ping_pong import fragment_registers, tile_registers

    ti = getattr(ctx, "target_info", None)
    if not hasattr(ti, "register_budget"):
        return True
    need = tile_registers(op.operands[2].type) + fragment_registers(op, 0) + \
        tile_registers(op.operands[1].type)
    return need <= ti.register_budget(getattr(ctx, "num_warps", 4))


def _stages_at(op, default: int) -> int:
    """The ``num_stages`` of the innermost loop around ``op`` (its own attribute or the option)."""
    parent = op.parent_op
    while parent is not None and parent.name != "for":
        parent = parent.parent_op
    if parent is not None and "num_stages" in parent.attrs:
        return int(parent.attrs["num_stages"])
    return int(default)
