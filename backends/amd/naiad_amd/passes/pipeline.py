"""The AMD plugin's GPU-IR pipeline, in order (also run by the test simulator's ``simt:gfx942``
targets, so what the simulator executes is what the plugin compiles):

``insert_schedule_hints`` (only when ``schedule_hint`` asks) -> the core matrix pipeline
(``accelerate_matmul`` -> layout assignment -> conversion cleanup) -> ``optimize_epilogue`` ->
``stage_matrix_operands`` ->
``stream_pipeline`` (``num_stages``) -> shared-memory allocation and its budget check ->
barriers.
"""
from __future__ import annotations

import functools

from naiad.backend import insert_passes, matrix_lowering_passes

from .optimize_epilogue import optimize_epilogue
from .schedule_hints import insert_schedule_hints
from .stream_pipeline import stream_pipeline_pass


def amd_lowering_passes(target, options) -> list:
    passes = matrix_lowering_passes(target, options)
    passes = insert_passes(passes, [optimize_epilogue], after="remove_redundant_conversions")
    passes = insert_passes(passes, [stream_pipeline_pass(getattr(options, "num_stages", 1))],
                           after="stage_matrix_operands")
    hint = getattr(options, "schedule_hint", None)
    if hint in (None, "", "none"):
        return passes
    hints = functools.partial(insert_schedule_hints, hint=hint)
    hints.__name__ = "insert_schedule_hints"
    return [hints] + list(passes)
