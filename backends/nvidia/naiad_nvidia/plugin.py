"""naiad's NVIDIA backend, registered under the entry-point group ``naiad.backends``.

Why this module is small and imports lazily: naiad loads every registered plugin at start-up,
so this file must import quickly and must not touch LLVM, nvJitLink or the CUDA driver until a
hook for an ``nvidia`` target actually needs them.
"""
from __future__ import annotations

import functools
import importlib.util

from naiad.plugins import LLVMAttributes, TargetSpec, hookimpl

from .archs import ARCHS, DEFAULT_ARCH, detect_arch

BACKEND = "nvidia"


def missing_toolchain() -> str | None:
    """Why this machine cannot link cubins, or None. Cheap (finds, never imports, cuda-bindings):
    naiad asks whenever it lists its targets."""
    try:
        found = importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else ("cuda-bindings (nvJitLink) is not installed: "
                               "pip install 'naiad[nvidia]'")


@hookimpl
def naiad_targets():
    return [TargetSpec(backend=BACKEND, archs=ARCHS, warp_sizes={a: 32 for a in ARCHS},
                       default_arch=DEFAULT_ARCH, detect_arch=detect_arch,
                       description="NVIDIA GPUs: PTX via LLVM NVPTX, cubin via nvJitLink, "
                                   "launch via the CUDA driver (cuda-python)",
                       unavailable=missing_toolchain())]


@hookimpl
def naiad_options(target, options):
    if target.backend != BACKEND:
        return None
    from .options import validate

    return validate(options)


@functools.lru_cache(maxsize=None)
def _codegen(target):
    from .codegen import NvidiaCodegen

    return NvidiaCodegen(target)


@functools.lru_cache(maxsize=None)
def _launcher(target):
    from .runtime.launcher import NvidiaLauncher

    return NvidiaLauncher(target)


@hookimpl
def naiad_codegen(target):
    if target.backend != BACKEND:
        return None
    return _codegen(target)


@hookimpl
def naiad_launcher(target):
    # Returned even without a driver: every device operation then raises DeviceError
    # ("no NVIDIA driver/device found for target nvidia:sm_90: ...").
    if target.backend != BACKEND:
        return None
    return _launcher(target)


@hookimpl
def naiad_layouts(target):
    if target.backend != BACKEND:
        return None
    from .ir.mma_layout import NvidiaMmaLayout

    return [NvidiaMmaLayout]


@hookimpl
def naiad_matrix_instructions(target, options):
    """wgmma (sm_90, option ``wgmma``) and mma.sync entries for the core's accelerate_matmul;
    none with ``tensor_cores`` off (:mod:`naiad_nvidia.ir.matrix_table`)."""
    if target.backend != BACKEND:
        return None
    from .ir.matrix_table import instruction_table

    return instruction_table(target, options)


@hookimpl
def naiad_matrix_policy(target, options):
    """Fold ``acc + dot``, convert operands next to their mma (this plugin stages them), and
    remark every dot left off the fastest tensor-core path
    (:func:`naiad_nvidia.passes.accelerate_matmul.matrix_policy`)."""
    if target.backend != BACKEND:
        return None
    from .passes.accelerate_matmul import matrix_policy

    return matrix_policy(target, options)


@hookimpl
def naiad_lowering_passes(target, options):
    """The core's GPU pipeline with tensor-core matmuls first: the core's ``accelerate_matmul``
    places ``nvidia.mma`` ops (this plugin's table and policy: ``naiad_matrix_instructions``,
    ``naiad_matrix_policy``) with fixed layouts that the core's layout assignment then keeps.
    Before the core's shared-memory allocation, ``stage_mma_operands`` lets f16/bf16 mmas read
    their fragments with ldmatrix, ``pipeline_async_copies`` fills a ring of ``num_stages``
    shared-memory buffers with cp.async (on sm_90 read by ``wgmma`` straight from the ring),
    ``prefetch_staged_loads`` loads the next K tile into registers where the ring does not
    apply, ``pipeline_fma_dots`` gives a dot left on FMAs a cp.async ring of its own
    (``passes/fma_ring.py``), and ``place_staged_wgmma`` turns dots marked for wgmma that the ring did not
    pipeline into ``nvidia.wgmma_staged``; where both operands are tensor-descriptor loads
    with a tensor map the ring is filled by TMA, and ``lower_descriptor_accesses`` then stores
    descriptor blocks by TMA and removes the annotations of loads no ring used (with a remark);
    ``carry_tma_rings_across_tiles`` keeps a TMA ring running across the tiles of a persistent
    loop (its buffer resident; ``place_resident_rings`` hands its ops the allocated offset);
    descriptors made in the kernel get their maps built on the device (``check_device_maps``
    before the rings, ``build_device_maps`` after: ``passes/device_tensor_maps.py``);
    ``stream_loop_loads`` streams the loads of other loops that ask for stages
    (``tl.range(..., num_stages=)``) through a thread-private cp.async ring;
    ``order_large_accumulators`` issues the wgmmas of an accumulator too large for the
    registers one block at a time (``passes/wgmma_order.py``). The allocator sizes
    these ops' buffers through their registered scratch sizes."""
    if target.backend != BACKEND:
        return None
    from naiad.backend import default_lowering_passes, insert_passes

    from naiad.backend import accelerate_matmul

    from .passes.async_copy_pipeline import pipeline_async_copies, place_staged_wgmma
    from .passes.fma_ring import pipeline_fma_dots
    from .passes.mma_staged import stage_mma_operands
    from .passes.prefetch_loads import prefetch_staged_loads
    from .passes.stream_loads import stream_loop_loads
    from .passes.tma_ring import lower_descriptor_accesses
    from .passes.device_tensor_maps import build_device_maps, check_device_maps
    from .passes.tma_persistent import carry_tma_rings_across_tiles, place_resident_rings
    from .passes.wgmma_order import order_large_accumulators

    ring = functools.partial(pipeline_async_copies, num_stages=options.num_stages)
    ring.__name__ = "pipeline_async_copies"
    fma_ring = functools.partial(pipeline_fma_dots, num_stages=options.num_stages)
    fma_ring.__name__ = "pipeline_fma_dots"
    passes = insert_passes(default_lowering_passes(target, options), [accelerate_matmul],
                           before="assign_layouts")
    passes = insert_passes(passes, [check_device_maps, stage_mma_operands, ring,
                                    prefetch_staged_loads, fma_ring, place_staged_wgmma,
                                    lower_descriptor_accesses, build_device_maps,
                                    carry_tma_rings_across_tiles, stream_loop_loads,
                                    order_large_accumulators],
                           before="allocate_shared_memory")
    return insert_passes(passes, [place_resident_rings], after="allocate_shared_memory")


@hookimpl
def naiad_llvm_attributes(target, options, kernel):
    """LLVM 22 reads ``"nvvm.maxntid"="N"`` as a function attribute (emitted as ``.maxntid N``);
    kernels use the ``ptx_kernel`` calling convention (no ``!nvvm.annotations`` needed)."""
    if target.backend != BACKEND:
        return None
    return LLVMAttributes(function={"nvvm.maxntid": str(options.num_warps * 32)},
                          calling_convention="ptx_kernel")
