"""The AMD GPU architectures naiad targets and the facts that differ between them.

One table so that the wave size, the LLVM subtarget features and the occupancy limits are decided
in one place; every other module (TargetInfo, options, toolchain, plugin) reads it.
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.errors import TargetError


@dataclass(frozen=True)
class Arch:
    """One ``gfx`` architecture.

    ``features`` are the LLVM subtarget features passed to the TargetMachine; the wave size is
    stated explicitly rather than left to LLVM's per-CPU default. ``max_waves_per_eu`` is the
    hardware limit of waves resident on one SIMD (what ``amdgpu-waves-per-eu`` may ask for):
    8 on CDNA2/CDNA3/CDNA4 (gfx90a, gfx942, gfx950), 16 on RDNA3/RDNA4 (gfx1100, gfx1200).
    ``lds_bytes`` is the LDS one workgroup may allocate: 64 KiB, 160 KiB on gfx950.
    ``max_wave_scratch`` is the most scratch (private) memory one wave may use, set by the
    ``WAVESIZE`` field of ``COMPUTE_TMPRING_SIZE``: 13 bits of 1 KiB on GFX9, 15 bits of 256 B
    on GFX11, 18 bits of 256 B on GFX12 (what ROCr allows at dispatch).
    """

    name: str
    family: str
    wave_size: int
    features: str
    max_waves_per_eu: int
    lds_bytes: int = 65536
    max_wave_scratch: int = ((1 << 13) - 1) * 1024


ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch("gfx90a", "CDNA2", 64, "+wavefrontsize64", 8),
        Arch("gfx942", "CDNA3", 64, "+wavefrontsize64", 8),
        Arch("gfx950", "CDNA4", 64, "+wavefrontsize64", 8, lds_bytes=163840),
        Arch("gfx1100", "RDNA3", 32, "+wavefrontsize32", 16,
             max_wave_scratch=((1 << 15) - 1) * 256),
        Arch("gfx1200", "RDNA4", 32, "+wavefrontsize32", 16,
             max_wave_scratch=((1 << 18) - 1) * 256),
    )
}

DEFAULT_ARCH = "gfx942"
TRIPLE = "amdgcn-amd-amdhsa"


def get_arch(name: str) -> Arch:
    """The :class:`Arch` called ``name``; a :class:`TargetError` listing the known ones otherwise."""
    try:
        return ARCHS[name]
    except KeyError:
        known = ", ".join(ARCHS)
        raise TargetError(f"unknown AMD architecture {name!r}; naiad's amd backend knows {known}") from None
