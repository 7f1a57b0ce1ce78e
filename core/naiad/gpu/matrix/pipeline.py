"""The GPU-IR pipeline of a backend that uses the core's matrix passes.

``matrix_lowering_passes(target, options)`` is the core default with ``accelerate_matmul``
first, ``stage_matrix_operands`` after the core's conversion cleanup, and
``check_shared_memory`` right after the shared-memory allocation. A backend returns it (with
its own passes added) from ``naiad_lowering_passes`` and its table from
``naiad_matrix_instructions``.
"""
from __future__ import annotations

from ..passes import default_lowering_passes
from ..passes.allocate_shared import allocate_shared_memory
from ..passes.dot_operands import fuse_dot_operand_conversions
from .accelerate import accelerate_matmul, stage_matrix_operands
from .budget import check_shared_memory


def matrix_lowering_passes(target=None, options=None) -> list:
    passes = default_lowering_passes(target, options)
    at = passes.index(fuse_dot_operand_conversions) + 1
    passes = passes[:at] + [stage_matrix_operands] + passes[at:]
    at = passes.index(allocate_shared_memory) + 1
    return [accelerate_matmul] + passes[:at] + [check_shared_memory] + passes[at:]
