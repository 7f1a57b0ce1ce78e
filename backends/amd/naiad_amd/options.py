"""Compile options of the AMD backend and their validation.

``num_warps`` counts wavefronts per workgroup (64 lanes on CDNA, 32 on RDNA3), so a workgroup has
``num_warps * wave_size`` work-items; at most 16 waves keeps it within the 1024 work-items a
workgroup may have. ``waves_per_eu`` asks LLVM (``amdgpu-waves-per-eu``) to limit registers so at
least that many waves fit on one SIMD; the hardware maximum is 8 on gfx90a/gfx942 and 16 on gfx1100.
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.errors import OptionError
from naiad.plugins import LLVMAttributes, Options

from .archs import get_arch


@dataclass(frozen=True)
class AmdOptions(Options):
    """``num_warps``/``num_stages``/``unroll_threshold`` as in :class:`naiad.plugins.Options`;
    ``waves_per_eu``: see the module docstring. The arch-dependent checks are in
    :func:`make_options` (an options object does not know its target)."""

    BACKEND = "amd"
    num_warps: int = 4
    num_stages: int = 2
    waves_per_eu: int | None = None

    def check(self) -> None:
        """Checked by :func:`make_options` with the arch's limits and amd's wording."""


VALID = AmdOptions.names()


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def make_options(target, options=None) -> AmdOptions:
    """Validate the user's ``options`` (a mapping, an AmdOptions or None) for ``target``."""
    if options is None:
        options = {}
    elif isinstance(options, AmdOptions):
        options = {f: getattr(options, f) for f in VALID}
    elif not hasattr(options, "items"):
        raise OptionError(f"amd: options must be a mapping of option names to values, not {type(options).__name__}")
    unknown = sorted(k for k in options if k not in VALID)
    if unknown:
        raise OptionError(
            f"amd: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"for target {target}; valid options: {', '.join(VALID)}")
    opts = AmdOptions(**options)
    arch = get_arch(target.arch)

    nw = opts.num_warps
    if not _is_int(nw) or not 1 <= nw <= 16 or nw & (nw - 1):
        raise OptionError(f"amd: num_warps must be a power of two from 1 to 16, got {nw!r}")
    ns = opts.num_stages
    if not _is_int(ns) or ns < 1:
        raise OptionError(f"amd: num_stages must be an integer >= 1, got {ns!r}")
    wpe = opts.waves_per_eu
    if wpe is not None and (not _is_int(wpe) or not 1 <= wpe <= arch.max_waves_per_eu):
        raise OptionError(
            f"amd: waves_per_eu must be None or an integer from 1 to {arch.max_waves_per_eu} "
            f"on {arch.name}, got {wpe!r}")
    Options.check(opts)     # the rules every backend shares (unroll_threshold)
    return opts


def llvm_attributes(target, options: AmdOptions) -> LLVMAttributes:
    """The function attributes, calling convention and module flags of a kernel (see plugin)."""
    from .toolchain import CODE_OBJECT_VERSION

    wave = get_arch(target.arch).wave_size
    fn = {
        "amdgpu-flat-work-group-size": f"1,{options.num_warps * wave}",
        # f32 denormals flushed (inputs and outputs, sign kept): lets LLVM pick the short
        # sequences for f32 division, sqrt, exp and log (no denormal scaling) and v_mad/v_mac;
        # the same choice CUDA's -ftz and Triton's AMD backend make. f16/f64 stay IEEE.
        "denormal-fp-math-f32": "preserve-sign,preserve-sign",
        # The launcher dispatches whole workgroups only, so num_programs may divide exactly.
        "uniform-work-group-size": "true",
    }
    if options.waves_per_eu is not None:
        fn["amdgpu-waves-per-eu"] = str(options.waves_per_eu)
    return LLVMAttributes(calling_convention="amdgpu_kernel", function=fn,
                          module_flags={"amdhsa_code_object_version": CODE_OBJECT_VERSION})
