"""The AMDHSA kernel descriptor (``<kernel>.kd``, 64 bytes) of a code object, decoded, and its
agreement with the code-object metadata note.

The loader reads the descriptor, not the note: LDS and scratch sizes, kernel argument size, the
wave size and the register granules that set occupancy. A disagreement between the two would
mean a kernel launched with the wrong resources, so :func:`check_descriptor` compares them for
every kernel naiad compiles (``AmdCodegen.compile_llvm``) -- field offsets per the LLVM AMDGPU
usage guide ("Kernel Descriptor").
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from naiad.errors import CodegenError

from .elf import ElfFile


@dataclass(frozen=True)
class KernelDescriptor:
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    compute_pgm_rsrc3: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    kernel_code_properties: int

    @property
    def wave32(self) -> bool:
        return bool(self.kernel_code_properties >> 10 & 1)

    @property
    def granulated_vgprs(self) -> int:
        return self.compute_pgm_rsrc1 & 0x3F


def kernel_descriptor(hsaco: bytes, kernel_name: str) -> KernelDescriptor:
    raw = ElfFile(hsaco).symbol_bytes(f"{kernel_name}.kd")
    if len(raw) != 64:
        raise CodegenError(f"amd: kernel descriptor of {kernel_name} has {len(raw)} bytes, not 64")
    gs, ps, ka = struct.unpack_from("<III", raw, 0)
    rsrc3, rsrc1, rsrc2, props = struct.unpack_from("<IIIH", raw, 44)
    return KernelDescriptor(gs, ps, ka, rsrc3, rsrc1, rsrc2, props)


def check_descriptor(hsaco: bytes, kernel_name: str) -> list[str]:
    """Fields of the descriptor that disagree with the metadata note (empty when all agree)."""
    from .metadata import kernel_metadata

    kd = kernel_descriptor(hsaco, kernel_name)
    md = kernel_metadata(hsaco, kernel_name)
    problems = []
    for field, key in (("group_segment_fixed_size", ".group_segment_fixed_size"),
                       ("private_segment_fixed_size", ".private_segment_fixed_size"),
                       ("kernarg_size", ".kernarg_segment_size")):
        if getattr(kd, field) != md.get(key):
            problems.append(f"{field} {getattr(kd, field)} != note {key} {md.get(key)}")
    wave = md.get(".wavefront_size")
    if kd.wave32 != (wave == 32):
        problems.append(f"descriptor wave32={kd.wave32} but note wavefront_size {wave}")
    vgprs = int(md.get(".vgpr_count", 0))
    granule = 8  # unified VGPR+AGPR on gfx90a/gfx942/gfx950 and wave32 on gfx11/gfx12
    if not (kd.granulated_vgprs + 1) * granule >= vgprs > kd.granulated_vgprs * granule - granule:
        problems.append(f"granulated VGPR count {kd.granulated_vgprs} does not cover note "
                        f".vgpr_count {vgprs}")
    return problems
