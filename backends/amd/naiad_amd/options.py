"""Compile options of the AMD backend and their validation.

``num_warps`` counts wavefronts per workgroup (64 lanes on CDNA, 32 on RDNA3), so a workgroup has
``num_warps * wave_size`` work-items; at most 16 waves keeps it within the 1024 work-items a
workgroup may have. ``waves_per_eu`` asks LLVM (``amdgpu-waves-per-eu``) to limit registers so at
least that many waves fit on one SIMD; the hardware maximum is 8 on gfx90a/gfx942 and 16 on gfx1100.

The rest follow Triton's AMD backend (same names, defaults and meaning): ``kpack`` and
``matrix_instr_nonkdim`` pick the MFMA/WMMA shape (consumed by accelerate-matmul),
``enable_fp_fusion`` lets separate ``a * b + c`` become one FMA, ``allow_flush_denorm`` flushes
f32 denormals (default IEEE denormals, as Triton), and ``schedule_hint`` selects an
instruction-scheduling recipe for the kernel's loops.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

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
    #: K elements per lane load as multiples of one instruction's (1 or 2), as in Triton
    kpack: int = 1
    #: size of the MFMA/WMMA non-K dims: 0 picks (32x32 first, then 16x16), 16 or 32 forces it
    matrix_instr_nonkdim: int = 0
    enable_fp_fusion: bool = True
    allow_flush_denorm: bool = False
    schedule_hint: str = "none"

    def check(self) -> None:
        """Checked by :func:`make_options` with the arch's limits and amd's wording."""


VALID = AmdOptions.names()

#: ``schedule_hint`` values (Triton's spelling); "" is Triton's default and means "none".
SCHEDULE_HINTS = ("none", "attention", "memory-bound-attention", "local-prefetch")
#: ``matrix_instr_nonkdim``: 0 lets accelerate-matmul choose; CDNA has 4/16/32-wide MFMA, RDNA 16-wide WMMA.
#: matrix_instr_nonkdim values per wave size: Triton's 4 (4x4 MFMA) is not in naiad's table, so
#: it is refused rather than silently ignored
_NONKDIM = {64: (0, 16, 32), 32: (0, 16)}


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
    return _check_triton_options(opts, arch)


def _check_triton_options(opts: AmdOptions, arch) -> AmdOptions:
    """The options that mirror Triton's HIPOptions (see the module docstring)."""
    if opts.kpack not in (1, 2) or not _is_int(opts.kpack):
        raise OptionError(f"amd: kpack must be 1 or 2, got {opts.kpack!r}")
    if opts.kpack != 1 and arch.name == "gfx950":
        warnings.warn("amd: kpack is deprecated from gfx950 on; using kpack=1", DeprecationWarning, stacklevel=3)
        opts = replace(opts, kpack=1)
    nonk = _NONKDIM[arch.wave_size]
    if not _is_int(opts.matrix_instr_nonkdim) or opts.matrix_instr_nonkdim not in nonk:
        raise OptionError(f"amd: matrix_instr_nonkdim must be one of {', '.join(map(str, nonk))} on "
                          f"{arch.name}, got {opts.matrix_instr_nonkdim!r}")
    for flag in ("enable_fp_fusion", "allow_flush_denorm"):
        if not isinstance(getattr(opts, flag), bool):
            raise OptionError(f"amd: {flag} must be True or False, got {getattr(opts, flag)!r}")
    hint = opts.schedule_hint
    if hint == "":
        opts = replace(opts, schedule_hint="none")
    elif hint not in SCHEDULE_HINTS:
        raise OptionError(f"amd: schedule_hint must be one of {', '.join(map(repr, SCHEDULE_HINTS))}, got {hint!r}")
    return opts


def llvm_attributes(target, options: AmdOptions) -> LLVMAttributes:
    """The function attributes, calling convention and module flags of a kernel (see plugin)."""
    from .toolchain import CODE_OBJECT_VERSION

    arch = get_arch(target.arch)
    wave = arch.wave_size
    fn = {
        "amdgpu-flat-work-group-size": f"1,{options.num_warps * wave}",
        # f32 denormals are IEEE by default, as in Triton's AMD backend; allow_flush_denorm
        # flushes them (inputs and outputs, sign kept), which lets LLVM pick the short sequences
        # for f32 division, sqrt, exp and log (no denormal scaling). f16/f64 stay IEEE.
        "denormal-fp-math-f32": ("preserve-sign,preserve-sign" if options.allow_flush_denorm else "ieee,ieee"),
        # The launcher dispatches whole workgroups only, so num_programs may divide exactly.
        "uniform-work-group-size": "true",
    }
    if options.waves_per_eu is not None:
        # "N,N": LLVM aims at exactly one register budget (Triton emits the same)
        fn["amdgpu-waves-per-eu"] = f"{options.waves_per_eu},{options.waves_per_eu}"
    # kernel-argument preload: every parameter ``inreg`` (as Triton's AMD backend) asks the
    # firmware to place the first arguments in user SGPRs before the first instruction
    # (``.amdhsa_user_sgpr_kernarg_preload_length``); the rest are s_load-ed as before and the
    # launcher fills the kernarg segment unchanged (LLVM emits the prologue older firmware needs)
    preload = ("inreg",) if arch.kernarg_preload else ()
    return LLVMAttributes(calling_convention="amdgpu_kernel", function=fn,
                          module_flags={"amdhsa_code_object_version": CODE_OBJECT_VERSION},
                          parameter_attributes=preload)
