"""naiad's AMD backend as a pluggy plugin (entry point ``naiad_amd.plugin``, group ``naiad.backends``).

Per-target hooks answer only for ``target.backend == "amd"`` and return None otherwise. Nothing
here imports HIP: the launcher loads it on first use.
"""
from __future__ import annotations

import functools
import importlib.util

from naiad.plugins import TargetSpec, hookimpl

from .archs import ARCHS, DEFAULT_ARCH

BACKEND = "amd"


def _ours(target) -> bool:
    return getattr(target, "backend", None) == BACKEND


def _detect_arch():
    from .runtime.driver import detect_arch

    return detect_arch()  # already a key of ARCHS (family fallback applied) or None


def missing_toolchain() -> str | None:
    """Why this machine cannot link hsacos, or None (ld.lld comes from the ziglang wheel).
    Cheap: naiad asks whenever it lists its targets."""
    if importlib.util.find_spec("ziglang") is None:
        return "ziglang (ld.lld) is not installed: pip install 'naiad[amd]'"
    return None


@hookimpl
def naiad_targets():
    return [TargetSpec(
        backend=BACKEND,
        archs=tuple(ARCHS),
        warp_sizes={name: a.wave_size for name, a in ARCHS.items()},
        default_arch=DEFAULT_ARCH,
        detect_arch=_detect_arch,
        description="AMD GPUs: AMDGCN via LLVM's AMDGPU target, hsaco via ld.lld, launches via hip-python",
        unavailable=missing_toolchain(),
    )]


@hookimpl
def naiad_options(target, options):
    if not _ours(target):
        return None
    from .options import make_options

    return make_options(target, options)


@hookimpl
def naiad_layouts(target):
    if not _ours(target):
        return None
    from .ir.matrix_layouts import LAYOUTS
    from .ir.matrix_table import register_all

    register_all()  # matrix_mma ops name their instruction: known before any IR is read
    return LAYOUTS


@hookimpl
def naiad_matrix_instructions(target, options):
    """MFMA (gfx90a/gfx942/gfx950) or WMMA (gfx1100/gfx1200) entries for the core's
    accelerate_matmul, shaped by ``matrix_instr_nonkdim`` and ``kpack``."""
    if not _ours(target):
        return None
    from .ir.matrix_table import instruction_table

    return instruction_table(target.arch, options.matrix_instr_nonkdim, options.kpack)


@hookimpl
def naiad_lowering_passes(target, options):
    """The core pipeline with the core's matrix passes -- accelerate_matmul (MFMA/WMMA from this
    plugin's table), operand staging through swizzled LDS, stores from the accumulator's layout,
    the LDS budget check against the arch's limit -- with ``stream_pipeline`` (``num_stages``)
    after the staging, pointer canonicalisation and buffer ops before the allocation, and
    ``insert_schedule_hints`` first when ``schedule_hint`` asks for a recipe (each named in
    NAIAD_DUMP/timing like any other pass; see passes/pipeline.py)."""
    if not _ours(target):
        return None
    from .passes.pipeline import amd_lowering_passes

    return amd_lowering_passes(target, options)


@hookimpl
def naiad_llvm_attributes(target, options, kernel):
    if not _ours(target):
        return None
    from .options import llvm_attributes

    return llvm_attributes(target, options)


@functools.lru_cache(maxsize=None)
def _codegen(target):
    from .codegen import AmdCodegen

    return AmdCodegen(target)


@functools.lru_cache(maxsize=None)
def _launcher(target):
    from .runtime.launcher import AmdLauncher

    return AmdLauncher(target)


@hookimpl
def naiad_codegen(target):
    """One Codegen per target (as on NVIDIA): it is asked on every compile."""
    return _codegen(target) if _ours(target) else None


@hookimpl
def naiad_launcher(target):
    return _launcher(target) if _ours(target) else None
