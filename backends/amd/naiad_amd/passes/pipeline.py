"""The AMD plugin's GPU-IR pipeline, in order (also run by the test simulator's ``simt:gfx942``
targets, so what the simulator executes is what the plugin compiles):

``insert_schedule_hints`` (only when ``schedule_hint`` asks) -> ``fold_fp8_upcasts`` (archs with
fp8 MFMAs) -> the core matrix pipeline
(``accelerate_matmul`` -> layout assignment -> conversion cleanup) -> ``optimize_epilogue`` ->
``stage_matrix_operands`` ->
``stream_pipeline`` (``num_stages``) -> ``one_buffer_staging`` (dots left unpipelined at
``num_stages = 1``) -> ``block_ping_pong`` (gfx942/gfx950, 8 warps,
``num_stages >= 2``) -> ``canonicalize_pointers`` -> ``convert_to_buffer_ops`` (archs with a
known buffer descriptor) -> shared-memory allocation and its budget check -> barriers.
"""
from __future__ import annotations

import functools

from naiad.backend import insert_passes, matrix_lowering_passes

from ..ir.matrix_table import FP8_FNUZ, FP8_OCP, instruction_table
from .block_ping_pong import block_ping_pong, wants_ping_pong
from .fold_fp8_upcasts import fold_fp8_upcasts
from .optimize_epilogue import optimize_epilogue
from .schedule_hints import insert_schedule_hints
from .stream_pipeline import one_buffer_staging_pass, stream_pipeline_pass


def amd_lowering_passes(target, options) -> list:
    passes = matrix_lowering_passes(target, options)
    passes = insert_passes(passes, [optimize_epilogue], after="remove_redundant_conversions")
    stages = getattr(options, "num_stages", 1)
    ping_pong = wants_ping_pong(getattr(target, "arch", ""), getattr(options, "num_warps", 4),
                                stages)
    pipelining = [stream_pipeline_pass(stages, min_slots=2 if ping_pong else 1),
                  one_buffer_staging_pass(stages)]
    if ping_pong:
        pipelining.append(block_ping_pong)
    passes = insert_passes(passes, pipelining, after="stage_matrix_operands")
    arch = getattr(target, "arch", "")
    passes = buffer_op_passes(passes, arch)
    table = [e for e in instruction_table(arch, getattr(options, "matrix_instr_nonkdim", 0),
                                          getattr(options, "kpack", 1))
             if e.a_type in FP8_FNUZ + FP8_OCP]
    if table:
        fold = functools.partial(fold_fp8_upcasts, table=table)
        fold.__name__ = "fold_fp8_upcasts"
        passes = insert_passes(passes, [fold], before="accelerate_matmul")
    hint = getattr(options, "schedule_hint", None)
    if hint in (None, "", "none"):
        return passes
    hints = functools.partial(insert_schedule_hints, hint=hint)
    hints.__name__ = "insert_schedule_hints"
    return [hints] + list(passes)


def buffer_op_passes(passes: list, arch: str) -> list:
    """``passes`` with ``canonicalize_pointers`` and ``convert_to_buffer_ops`` before the
    shared-memory allocation (layouts and vector widths are final there), on archs whose buffer
    descriptor naiad knows."""
    from ..archs import get_arch
    from ..ir import buffer_ops  # noqa: F401 - registers the ops
    from .buffer_ops import convert_to_buffer_ops
    from .canonicalize_pointers import canonicalize_pointers

    if get_arch(arch).buffer_flags is None:
        return list(passes)
    return insert_passes(list(passes), [canonicalize_pointers, convert_to_buffer_ops],
                         before="allocate_shared_memory")
