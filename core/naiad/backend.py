"""``naiad.backend``: the SDK of a naiad backend -- everything a backend may use from the core.

A backend (in-tree or a vendor's own distribution) imports only this module, ``naiad.plugins``
(``hookimpl`` and the hook contract), ``naiad.errors`` and the public ``naiad`` / ``naiad.ir``
API. Everything else in ``naiad.*`` is internal and may change without notice; a test
(``tests/compiler/test_vendor_neutral_core.py``) keeps the in-tree backends to this rule.

The names load on first use (``naiad.backend.LinearLayout`` imports the layout module only then),
so a plugin module can import this SDK at its top without slowing down ``import naiad``.

**The contract** (objects that cross the core/backend boundary, see ``naiad.plugins.hookspecs``)
    ``hookimpl``, ``Target``, ``TargetSpec``, ``Options`` (base of every backend's options),
    ``TargetInfo``, ``Codegen``, ``Launcher``, ``BinaryResult``, ``ResourceReport``,
    ``LLVMAttributes``, ``KernelDescription``, ``ArgumentError`` (a launch argument a launcher
    cannot take), ``element_sig`` (an array argument's element type, spelled ``"fp16"``).

**Performance remarks**
    ``remarks`` (``remarks.remark(op, message)``: why an op is off its fast path, at the user's
    source line; ``NAIAD_REMARKS=1`` prints them, ``metadata["remarks"]`` lists them).

**Tile IR and op definitions** (beyond ``naiad.ir``)
    ``OpDef``, ``opdef``, ``register_op``, ``register_verifier``, the op traits ``PURE``,
    ``ELEMENTWISE``, ``COMMUTATIVE``, the op families ``BINARY_ARITH`` and ``MATH_UNARY``.

**Layouts** (every layout is a linear layout: register/lane/warp bits -> tensor coordinates)
    ``Layout`` (base of a backend's layout attribute), ``BlockedLayout``, ``SliceLayout``,
    ``DotOperandLayout``, ``SharedLayout``, ``linear_of``, ``LinearLayout``, ``fit_to_shape``,
    ``is_pow2``, ``log2``.

**The core matrix pipeline** (docs/writing-a-backend.md, "Matrix instructions")
    ``MatrixInstruction`` (one entry of a backend's instruction table), ``matrix_instruction``
    (look one up by name), ``register_matrix_instructions``, ``MatrixPolicy`` (a backend's
    choices about accelerate_matmul: fold ``acc + dot``, hoist invariant operands, remarks;
    the ``naiad_matrix_policy`` hook answers one), ``MatrixLayout`` (base of a
    backend's matrix layout), ``accelerate_matmul`` (the selection pass alone, for a backend
    that lowers its own matrix ops), ``matrix_lowering_passes`` (the core pipeline with the matrix
    passes: accelerate_matmul, operand staging, in-place epilogue, shared-memory budget check),
    ``pipeline_matrix_loops`` (the stream pipeliner: multi-buffers a K loop's staged operands in a shared-memory
    ring; a backend adds it with its ``num_stages``), ``operand_views`` (which operands of a
    ``matrix_mma`` are staged through shared memory, and with which swizzle).

**GPU-IR passes**
    ``GPUPassContext`` (what a pass receives), ``default_lowering_passes`` (the core pipeline a
    backend extends), ``insert_passes(passes, new, before=NAME | after=NAME)`` (extend it by
    pass name), ``pass_name``, ``allocate_shared_memory`` (the core pass that sizes shared
    memory), ``scratch_bytes`` (the scratch an op needs), ``register_scratch(op_name, size)``
    (how much a backend op needs, so the core allocator sizes it),
    ``register_resident_scratch(op_name, size)`` (a buffer of its own that outlives the other
    users, at the op's ``smem_offset``), ``resident_scratch_bytes`` (the size of an op's own
    buffer, 0 for none), ``expand_histogram`` (``histogram`` as a one-hot compare-and-sum, for a
    target without shared-memory atomics; selected by name, never by default).

**Lowering to LLVM** (inside ``TargetInfo.op_lowering`` callables, ``fn(kl, op)``)
    ``KernelLowering`` (``kl``), ``smem_write`` / ``smem_read`` (registers <-> shared memory by
    linear layout), ``run_length`` (contiguous elements per shared-memory access),
    ``vector_run`` (contiguous elements per register run), ``fma_dot_from_shared`` (the core's
    FMA dot on operands a backend already put in shared memory, row-major).

**LLVM helpers** (llvmlite.ir)
    types ``I1 I8 I16 I32 I64 F16 F32 F64``, ``i32(x)`` (an i32 constant), ``declare`` (declare a
    function once per module), ``call_intrinsic``, ``bf16_bits`` (a float's bfloat16 bits, round
    to nearest even), ``LLVM_LOCK`` (the process-wide lock around every llvmlite.binding use:
    llvmlite has one LLVM context per process), ``initialize_llvm()`` (all targets and asm
    printers, once; returns ``llvmlite.binding``), ``take_verified_module(text)`` (the module
    the core already parsed and verified from exactly this LLVM IR text, once, else None: a
    toolchain uses it instead of parsing again), ``set_string_attribute(fn, key, value)``,
    ``add_module_flag(module, name, value, behavior=1)``.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    # the contract
    "hookimpl": "naiad.plugins.hookspecs",
    "Target": "naiad.plugins.contract",
    "TargetSpec": "naiad.plugins.contract",
    "Options": "naiad.plugins.contract",
    "TargetInfo": "naiad.plugins.contract",
    "Codegen": "naiad.plugins.contract",
    "Launcher": "naiad.plugins.contract",
    "BinaryResult": "naiad.plugins.contract",
    "ResourceReport": "naiad.plugins.contract",
    "LLVMAttributes": "naiad.plugins.contract",
    "KernelDescription": "naiad.plugins.contract",
    "ArgumentError": "naiad.runtime.specialize",
    "element_sig": "naiad.runtime.specialize",
    # performance remarks (a module: ``remarks.remark(op, message)``)
    "remarks": "naiad.remarks",
    # tile IR and op definitions
    "OpDef": "naiad.ir.ops",
    "opdef": "naiad.ir.ops",
    "register_op": "naiad.ir.ops",
    "register_verifier": "naiad.ir.verifier",
    "PURE": "naiad.ir.ops",
    "ELEMENTWISE": "naiad.ir.ops",
    "COMMUTATIVE": "naiad.ir.ops",
    "BINARY_ARITH": "naiad.ir.ops",
    "MATH_UNARY": "naiad.ir.ops",
    # the core matrix pipeline (instruction tables, matrix layouts, its passes)
    "MatrixInstruction": "naiad.gpu.matrix",
    "matrix_instruction": "naiad.gpu.matrix",
    "register_matrix_instructions": "naiad.gpu.matrix",
    "MatrixPolicy": "naiad.gpu.matrix.policy",
    "MatrixLayout": "naiad.gpu.matrix.layout",
    "matrix_lowering_passes": "naiad.gpu.matrix.pipeline",
    "accelerate_matmul": "naiad.gpu.matrix.accelerate",
    "pipeline_matrix_loops": "naiad.gpu.matrix.stream_pipeline",
    "operand_views": "naiad.gpu.matrix.staging",
    # layouts
    "Layout": "naiad.gpu.layouts",
    "BlockedLayout": "naiad.gpu.layouts",
    "SliceLayout": "naiad.gpu.layouts",
    "DotOperandLayout": "naiad.gpu.layouts",
    "SharedLayout": "naiad.gpu.layouts",
    "linear_of": "naiad.gpu.layouts",
    "LinearLayout": "naiad.gpu.linear_layout",
    "fit_to_shape": "naiad.gpu.linear_layout",
    "is_pow2": "naiad.gpu.linear_layout",
    "log2": "naiad.gpu.linear_layout",
    # GPU-IR passes
    "GPUPassContext": "naiad.gpu.passes",
    "default_lowering_passes": "naiad.gpu.passes",
    "allocate_shared_memory": "naiad.gpu.passes.allocate_shared",
    "scratch_bytes": "naiad.gpu.movement",
    "resident_scratch_bytes": "naiad.gpu.movement",
    "register_scratch": "naiad.gpu.movement",
    "register_resident_scratch": "naiad.gpu.movement",
    "insert_passes": "naiad.gpu.passes",
    "expand_histogram": "naiad.gpu.passes.histogram_one_hot",
    "pass_name": "naiad.gpu.passes",
    # lowering to LLVM
    "KernelLowering": "naiad.gpu.lower.context",
    "smem_write": "naiad.gpu.lower.shared",
    "smem_read": "naiad.gpu.lower.shared",
    "fma_dot_from_shared": "naiad.gpu.lower.dot",
    "run_length": "naiad.gpu.lower.shared",
    "vector_run": "naiad.gpu.lower.memory",
    "axis_info": "naiad.passes.axis_info",
    "loop_pipelining": "naiad.gpu.passes.loop_pipelining",
    # LLVM helpers
    "I1": "naiad.gpu.lower.types",
    "I8": "naiad.gpu.lower.types",
    "I16": "naiad.gpu.lower.types",
    "I32": "naiad.gpu.lower.types",
    "I64": "naiad.gpu.lower.types",
    "F16": "naiad.gpu.lower.types",
    "F32": "naiad.gpu.lower.types",
    "F64": "naiad.gpu.lower.types",
    "i32": "naiad.gpu.lower.types",
    "declare": "naiad.gpu.lower.types",
    "call_intrinsic": "naiad.gpu.lower.types",
    "bf16_bits": "naiad.gpu.lower.types",
    "LLVM_LOCK": "naiad.gpu.llvm",
    "initialize_llvm": "naiad.gpu.llvm",
    "take_verified_module": "naiad.gpu.llvm",
    "set_string_attribute": "naiad.gpu.llvm",
    "add_module_flag": "naiad.gpu.llvm",
    "struct_type": "naiad.gpu.llvm",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"naiad.backend has no {name!r}: a backend may use only the SDK's "
                             f"names ({', '.join(__all__)})")
    if module.rsplit(".", 1)[-1] == name:   # a whole module (``remarks``)
        value = importlib.import_module(module)
    else:
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return __all__
