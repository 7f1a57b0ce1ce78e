"""Lowering of GPU IR to LLVM IR (llvmlite), vendor-neutral: every vendor fact comes from the
backend's TargetInfo.

``lower_to_llvm`` runs the GPU-IR passes (the backend's, or the core default), then emits the
kernel: one LLVM function with the backend's calling convention, pointer arguments in the
global address space (``i1`` scalars passed as a byte), and each op lowered by its family's
module (elementwise, memory, atomics, shape, reduce, scan, dot, control flow).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...errors import CodegenError, IRError
from ...ir.core import Module
from ...ir.printer import print_module
from ...ir.types import ScalarType, TensorType
from . import (atomics, control_flow, debugging, dot, elementwise, histogram,  # noqa: F401
               memory, reduce, scan, shape)
from .attributes import KernelDescription, apply_attributes, merge_attributes
from .context import KernelLowering
from .prune import drop_unused
from .types import I1, I8
from ..matrix import lowering as _matrix_lowering  # noqa: F401,E402  (registers matrix_mma)
from ..matrix import ring as _matrix_ring  # noqa: F401,E402  (registers the ring ops)


@dataclass
class Lowered:
    """The GPU IR text, the LLVM IR text, and the dynamic shared memory the kernel needs."""

    gpu_text: str
    llvm_ir: str
    shared_bytes: int


def _num_warps(options) -> int:
    """``options.num_warps`` (validated by the backend's Options); 4 without options."""
    return 4 if options is None else int(options.num_warps)


def run_gpu_passes(module: Module, target, options, target_info, pm=None) -> Module:
    """Tile IR -> GPU IR in place, with the backend's passes or the core default."""
    from ...passes.manager import PassManager
    from ..passes import GPUPassContext, default_lowering_passes

    passes = None
    if pm is not None:
        passes = pm.hook.naiad_lowering_passes(target=target, options=options)
    if passes is None:
        passes = default_lowering_passes(target, options)
    ctx = GPUPassContext(options=options, pipeline="gpu", target=target,
                         target_info=target_info, num_warps=_num_warps(options),
                         warp_size=int(target_info.warp_size), plugins=pm)
    PassManager("gpu", passes).run(module, ctx=ctx)
    return module


def register_backend_layouts(pm, target) -> None:
    if pm is None:
        return
    from ..layouts import register_layout

    for answer in pm.hook.naiad_layouts(target=target) or ():
        for cls in answer or ():
            register_layout(cls)


def lower_to_llvm(module: Module, kernel_name: str, target, options, target_info,
                  pm=None) -> Lowered:
    """Tile IR module -> :class:`Lowered` for ``kernel_name`` (the module is rewritten into
    GPU IR in place)."""
    register_backend_layouts(pm, target)
    run_gpu_passes(module, target, options, target_info, pm)
    gpu_text = print_module(module)
    fn = module.functions.get(kernel_name)
    if fn is None:
        raise IRError(f"module has no kernel @{kernel_name}")
    num_warps = _num_warps(options)
    shared = int(fn.attrs.get("shared", 0))
    kernel = KernelDescription(kernel_name, fn, num_warps, int(target_info.warp_size), shared)
    answers = pm.hook.naiad_llvm_attributes(target=target, options=options, kernel=kernel) \
        if pm is not None else []
    module_ir = emit_module(fn, target_info, num_warps, shared)
    apply_attributes(module_ir, kernel_name, merge_attributes(answers),
                     target_info.kernel_calling_convention)
    text = str(module_ir)
    check_llvm(text, kernel_name)
    return Lowered(gpu_text, text, shared)


def emit_llvm(fn, target_info, num_warps: int, shared_bytes: int) -> str:
    """The kernel's LLVM IR text (before backend attributes)."""
    return str(emit_module(fn, target_info, num_warps, shared_bytes))


def emit_module(fn, target_info, num_warps: int, shared_bytes: int) -> ir.Module:
    """The kernel's llvmlite module (before backend attributes)."""
    # its own context: the named types of this kernel (``struct_type``) are printed with it,
    # not those of every kernel lowered before in the process (llvmlite's global context)
    module = ir.Module(name=fn.name, context=ir.Context())
    module.triple = target_info.triple or ""
    module.data_layout = target_info.data_layout or ""
    kl = KernelLowering(fn, module, target_info, num_warps, shared_bytes)
    arg_types = []
    for a in fn.args:
        if isinstance(a.type, TensorType):
            raise IRError(f"@{fn.name}: kernel argument {a.name_hint} is a tensor")
        lt = kl.ltype(a.type)
        arg_types.append(I8 if lt == I1 else lt)
    llfn = ir.Function(module, ir.FunctionType(ir.VoidType(), arg_types), fn.name)
    kl.llfn = llfn
    entry = llfn.append_basic_block("entry")
    body = llfn.append_basic_block("body")
    kl.entry = ir.IRBuilder(entry)
    kl.b = ir.IRBuilder(body)
    for a, la in zip(fn.args, llfn.args):
        la.name = a.name_hint or f"arg{a.index}"
        if isinstance(a.type, ScalarType) and a.type.name == "i1":
            kl.values[a] = [kl.entry.icmp_unsigned("!=", la, ir.Constant(I8, 0))]
        else:
            kl.values[a] = [la]
    kl.lower_block(fn.body.block)
    kl.b.ret_void()
    kl.entry.branch(body)
    drop_unused(llfn)
    return module


def check_llvm(text: str, kernel_name: str) -> None:
    """Parse and verify the module with LLVM; a failure is a naiad bug, reported with the IR.
    The parsed module is kept for the backend's toolchain (``take_verified_module``)."""
    from ..llvm import parse_verified

    try:
        parse_verified(text)
    except RuntimeError as e:
        raise CodegenError(f"internal error: invalid LLVM IR for @{kernel_name}: {e}\n{text}") \
            from None


__all__ = ["Lowered", "lower_to_llvm", "run_gpu_passes", "emit_llvm", "KernelDescription"]
