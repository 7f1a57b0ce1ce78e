"""GPU-IR pass ``stream_pipeline`` (AMD): the core's LDS ring pipeliner
(:mod:`naiad.gpu.matrix.stream_pipeline`) configured by this compile's ``num_stages``.

Why a pass of the AMD plugin: as in Triton's AMD backend, ``num_stages`` is the stream
pipeliner's depth -- ``num_stages - 1`` LDS buffers, the global loads of a K loop's operand tiles
issued ``num_stages - 1`` iterations ahead of their MFMAs; 1 leaves the loop as written.
It runs after the operands are staged (``stage_matrix_operands``) and before shared memory is
allocated, so the ring is sized and fenced by the core's allocator and barrier pass.
"""
from __future__ import annotations

import functools

from naiad.backend import pipeline_matrix_loops


def stream_pipeline_pass(num_stages: int, min_slots: int = 1):
    """The pass for one compile, named ``stream_pipeline`` in the pipeline and dumps
    (``min_slots`` 2 for block ping-pong)."""
    p = functools.partial(pipeline_matrix_loops, num_stages=int(num_stages),
                          min_slots=int(min_slots))
    p.__name__ = "stream_pipeline"
    return p
