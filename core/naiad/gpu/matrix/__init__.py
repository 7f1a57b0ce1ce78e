"""The vendor-neutral matrix pipeline: dots on matrix units (tensor cores, MFMA, WMMA).

A backend describes its matrix instructions in a table (:class:`MatrixInstruction`: shape,
dtypes, the operand and accumulator lane maps as linear layouts) and answers the
``naiad_matrix_instructions(target, options)`` hook with the entries usable for a compile, in
order of preference. The core does the rest:

* :mod:`.layout` -- :class:`MatrixLayout`, the base of a backend's matrix layouts (``#amd_mfma``,
  ``#amd_wmma``): result and operand layouts built from the instruction's lane maps;
* :mod:`.accelerate` -- pass ``accelerate_matmul``: each eligible ``dot`` becomes ``matrix_mma``
  (or the backend op an entry names: NVIDIA's ``nvidia.mma``) on the first table entry that
  fits, with warps chosen to tile the result;
* :mod:`.policy` -- :class:`MatrixPolicy`, the backend's choices about that pass
  (``naiad_matrix_policy``): fold ``acc + dot``, hoist invariant operands, remarks;
* :mod:`.op` / :mod:`.plan` / :mod:`.lowering` -- the ``matrix_mma`` op, which instruction issue
  reads which registers (derived from the layouts and checked against the table's lane maps),
  and its LLVM lowering through ``TargetInfo.matrix_multiply``;
* :mod:`.staging` -- operands reach their fragments through swizzled shared memory;
* :mod:`.epilogue` -- an accumulator is stored from its own layout (no shared-memory round trip);
* :mod:`.stream_pipeline` / :mod:`.ring` -- ``pipeline_matrix_loops`` (``num_stages``): a K
  loop's staged operands multi-buffered in a shared-memory ring, the next tiles' loads issued
  before this tile's matrix issues (optionally in ping-pong phases);
* :mod:`.budget` -- pass ``check_shared_memory``: a kernel needing more shared memory than the
  target has is a compile error naming the kernel, its need and the limit.
"""
from __future__ import annotations

from .instructions import MatrixInstruction, matrix_instruction, register_matrix_instructions

__all__ = ["MatrixInstruction", "matrix_instruction", "register_matrix_instructions"]
