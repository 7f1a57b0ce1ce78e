"""naiad's AMD backend as a pluggy plugin (entry point ``naiad_amd.plugin``, group ``naiad.backends``).

Per-target hooks answer only for ``target.backend == "amd"`` and return None otherwise. Nothing
here imports HIP: the launcher loads it on first use.
"""
from __future__ import annotations

from naiad.plugins import TargetSpec, hookimpl

from .archs import ARCHS, DEFAULT_ARCH

BACKEND = "amd"


def _ours(target) -> bool:
    return getattr(target, "backend", None) == BACKEND


def _detect_arch():
    from .runtime.driver import detect_arch

    return detect_arch()  # already a key of ARCHS (family fallback applied) or None


@hookimpl
def naiad_targets():
    return [TargetSpec(
        backend=BACKEND,
        archs=tuple(ARCHS),
        warp_sizes={name: a.wave_size for name, a in ARCHS.items()},
        default_arch=DEFAULT_ARCH,
        detect_arch=_detect_arch,
        description="AMD GPUs: AMDGCN via LLVM's AMDGPU target, hsaco via ld.lld, launches via hip-python",
    )]


@hookimpl
def naiad_options(target, options):
    if not _ours(target):
        return None
    from .options import make_options

    return make_options(target, options)


@hookimpl
def naiad_lowering_passes(target, options):
    """The core's GPU pipeline, opened by ``insert_schedule_hints`` when ``schedule_hint`` asks
    for a recipe (the pass is named in NAIAD_DUMP/timing like any other)."""
    if not _ours(target):
        return None
    import functools

    from naiad.gpu.passes import default_lowering_passes

    from .passes.schedule_hints import insert_schedule_hints

    if hasattr(options, "schedule_hint"):
        hint = options.schedule_hint
    else:
        hint = (options or {}).get("schedule_hint", "none")
    passes = default_lowering_passes(target, options)
    if hint in (None, "", "none"):
        return passes
    hints = functools.partial(insert_schedule_hints, hint=hint)
    hints.__name__ = "insert_schedule_hints"
    return [hints] + passes


@hookimpl
def naiad_llvm_attributes(target, options, kernel):
    if not _ours(target):
        return None
    from .options import llvm_attributes, make_options

    return llvm_attributes(target, make_options(target, options) if not hasattr(options, "num_warps") else options)


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
    from .options import make_options

    opts = options if hasattr(options, "kpack") else make_options(target, options)
    return instruction_table(target.arch, opts.matrix_instr_nonkdim, opts.kpack)


@hookimpl
def naiad_lowering_passes(target, options):
    """The core pipeline with the core's matrix passes: accelerate_matmul (MFMA/WMMA from
    this plugin's table), operand staging through swizzled LDS, stores from the accumulator's
    layout, and the LDS budget check against the arch's limit."""
    if not _ours(target):
        return None
    from naiad.gpu.matrix.pipeline import matrix_lowering_passes

    return matrix_lowering_passes(target, options)


@hookimpl
def naiad_codegen(target):
    if not _ours(target):
        return None
    from .codegen import AmdCodegen

    return AmdCodegen(target)


@hookimpl
def naiad_launcher(target):
    if not _ours(target):
        return None
    from .runtime.launcher import AmdLauncher

    return AmdLauncher(target)
