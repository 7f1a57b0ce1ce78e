"""The AMD GPU architectures naiad targets and the facts that differ between them.

One table so that the wave size, the LLVM subtarget features and the occupancy limits are decided
in one place; every other module (TargetInfo, options, toolchain, plugin) reads it.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from naiad.errors import TargetError


@dataclass(frozen=True)
class Arch:
    """One ``gfx`` architecture.

    ``features`` are the LLVM subtarget features passed to the TargetMachine; the wave size is
    stated explicitly rather than left to LLVM's per-CPU default. ``max_waves_per_eu`` is the
    hardware limit of waves resident on one SIMD (what ``amdgpu-waves-per-eu`` may ask for):
    10 on CDNA1, 8 on CDNA2/3/4, 16 on RDNA3/3.5/4 (LLVM's ``getMaxWavesPerEU``). ``lds_bytes``
    is the LDS one workgroup may allocate: 64 KiB everywhere but gfx950 (160 KiB).
    ``max_wave_scratch`` is the most scratch (private) memory one wave may use, set by the
    ``WAVESIZE`` field of ``COMPUTE_TMPRING_SIZE``: 13 bits of 1 KiB on GFX9, 15 bits of 256 B
    on GFX11, 18 bits of 256 B on GFX12 (what ROCr allows at dispatch).
    ``kernarg_preload``: the firmware can preload kernel arguments into SGPRs (gfx90a, gfx94x,
    gfx950), which LLVM uses for arguments marked ``inreg``.
    ``buffer_flags``: word 3 of a raw buffer resource descriptor (``make.buffer.rsrc``'s flags):
    on GFX9 a valid DATA_FORMAT (32) so the range check applies; on GFX11 FORMAT 32, OOB_SELECT
    "raw" (out of range at ``offset >= num_records``) and RESOURCE_LEVEL 1 -- the values AMD's
    own libraries use. None: naiad emits no buffer instructions for the arch (GFX12's descriptor
    is not verified yet).
    """

    name: str
    family: str
    wave_size: int
    features: str
    max_waves_per_eu: int
    lds_bytes: int = 65536
    max_wave_scratch: int = ((1 << 13) - 1) * 1024
    kernarg_preload: bool = False
    buffer_flags: int | None = None


_W64, _W32 = "+wavefrontsize64", "+wavefrontsize32"
_GFX11_SCRATCH = ((1 << 15) - 1) * 256
_GFX12_SCRATCH = ((1 << 18) - 1) * 256
_GFX9_BUF, _GFX11_BUF = 0x00020000, 0x31004000

#: Every CDNA/RDNA3+ part LLVM 22 (llvmlite's) compiles; gfx940/gfx941 are gone from LLVM 22
#: (early MI300 steppings, served by gfx942 code -- see :func:`resolve_arch`).
ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch("gfx908", "CDNA1", 64, _W64, 10, buffer_flags=_GFX9_BUF),
        Arch("gfx90a", "CDNA2", 64, _W64, 8, kernarg_preload=True, buffer_flags=_GFX9_BUF),
        Arch("gfx942", "CDNA3", 64, _W64, 8, kernarg_preload=True, buffer_flags=_GFX9_BUF),
        Arch("gfx950", "CDNA4", 64, _W64, 8, lds_bytes=160 * 1024, kernarg_preload=True, buffer_flags=_GFX9_BUF),
        Arch("gfx1100", "RDNA3", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1101", "RDNA3", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1102", "RDNA3", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1103", "RDNA3", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1150", "RDNA3.5", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1151", "RDNA3.5", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1152", "RDNA3.5", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1153", "RDNA3.5", 32, _W32, 16, max_wave_scratch=_GFX11_SCRATCH, buffer_flags=_GFX11_BUF),
        Arch("gfx1200", "RDNA4", 32, _W32, 16, max_wave_scratch=_GFX12_SCRATCH),
        Arch("gfx1201", "RDNA4", 32, _W32, 16, max_wave_scratch=_GFX12_SCRATCH),
    )
}

#: A detected part naiad has no entry for runs the code of its family's representative:
#: the ``gfx`` name's prefix (all digits but the last) -> the arch whose code it runs.
FAMILY_FALLBACK = {"gfx94": "gfx942", "gfx95": "gfx950", "gfx110": "gfx1100", "gfx115": "gfx1150",
                   "gfx120": "gfx1200"}

DEFAULT_ARCH = "gfx942"
TRIPLE = "amdgcn-amd-amdhsa"


def get_arch(name: str) -> Arch:
    """The :class:`Arch` called ``name``; a :class:`TargetError` listing the known ones otherwise."""
    try:
        return ARCHS[name]
    except KeyError:
        known = ", ".join(ARCHS)
        raise TargetError(f"unknown AMD architecture {name!r}; naiad's amd backend knows {known}") from None


def resolve_arch(name: str | None, warn: bool = True) -> str | None:
    """The arch naiad compiles for a detected device called ``name`` (``gfx942:sramecc+`` works).

    A known arch is itself; an unknown member of a known family falls back to the family's
    representative (``gfx940`` -> ``gfx942``) with a warning, since its code runs there; anything
    else is None (the device is not usable by naiad).
    """
    if not name:
        return None
    base = name.split(":")[0].strip("\0 ").lower()
    if base in ARCHS:
        return base
    m = re.fullmatch(r"(gfx[0-9a-f]+)[0-9a-f]", base)
    fallback = FAMILY_FALLBACK.get(m.group(1)) if m else None
    if fallback and warn:
        warnings.warn(f"naiad: amd: the AMD GPU here is {base}, which naiad has no entry for; "
                      f"compiling for {fallback}, its family's representative", RuntimeWarning,
                      stacklevel=2)
    return fallback
