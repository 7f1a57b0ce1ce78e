"""The AMD backend's Codegen: its TargetInfo plus LLVM IR -> (llir-opt, amdgcn, hsaco) with a
resource report."""
from __future__ import annotations

from naiad.errors import CodegenError
from naiad.plugins import BinaryResult, Codegen, ResourceReport, Target

from . import metadata as md
from .archs import Arch, get_arch
from .descriptor import check_descriptor
from .elf import EM_AMDGPU, ElfFile
from .target_info import AmdTargetInfo
from .toolchain import get_toolchain, toolchain_hash


class AmdCodegen(Codegen):
    """Codegen for one ``amd:<arch>`` target."""

    stages = ("llir-opt", "amdgcn", "hsaco")

    def __init__(self, target: Target):
        self.target = target
        self.target_info = AmdTargetInfo(target.arch)

    def toolchain_hash(self) -> str:
        return toolchain_hash()

    def compile_llvm(self, llvm_ir: str, kernel_name: str, options=None) -> BinaryResult:
        """O3 (stage ``llir-opt``), AMDGCN assembly, object, hsaco; metadata from the code
        object's metadata note. ``options`` (AmdOptions) gives ``enable_fp_fusion``.

        ``metadata`` keys: ``vgpr``, ``sgpr``, ``agpr``, ``spill_registers`` (VGPR + SGPR spills,
        a count), ``lds`` (static LDS bytes), ``scratch`` (private bytes per work-item),
        ``wavefront_size``, ``instructions``, ``max_flat_workgroup_size``, ``kernarg_size``,
        ``occupancy`` (LLVM's waves-per-SIMD estimate), the generic ``registers`` / ``shared``
        aliases, ``args`` (offset, size and kind of each explicit kernel argument, for the
        launcher) and ``compile_times``.
        """
        fusion = getattr(options, "enable_fp_fusion", True)
        art = get_toolchain(self.target.arch).compile(llvm_ir, fp_fusion=bool(fusion))
        rep = md.resource_report(md.kernel_metadata(art.hsaco, kernel_name))
        rep["instructions"] = md.count_instructions(art.asm, kernel_name)
        rep["occupancy"] = md.asm_occupancy(art.asm)
        report = ResourceReport(registers=rep["vgpr"], shared_bytes=rep["lds"],
                                spill_registers=rep["spill_registers"],
                                scratch_bytes=rep["scratch"])
        rep.update(report.as_metadata())
        rep["kernel_name"] = kernel_name
        rep["arch"] = self.target.arch
        rep["compile_times"] = art.times
        check_scratch(kernel_name, get_arch(self.target.arch), rep["scratch"])
        problems = check_descriptor(art.hsaco, kernel_name)
        if problems:  # the loader reads the descriptor: a disagreement is a toolchain bug
            raise CodegenError(f"internal error: kernel descriptor of {kernel_name} disagrees "
                               f"with its metadata note: {'; '.join(problems)}")
        return BinaryResult(stages={"llir-opt": art.optimized_ir, "amdgcn": art.asm,
                                    "hsaco": art.hsaco},
                            binary_stage="hsaco", metadata=rep, resources=report)

    def validate_binary(self, result: BinaryResult) -> None:
        """An hsaco is an AMDGPU ELF file whose metadata note describes the kernel."""
        super().validate_binary(result)
        hsaco = bytes(result.stages["hsaco"])
        if ElfFile(hsaco).machine != EM_AMDGPU:
            raise CodegenError(f"{self.target}: the hsaco is not an AMDGPU ELF file")
        name = result.metadata.get("kernel_name")
        if name:
            md.kernel_metadata(hsaco, name)     # raises CodegenError naming what it has


def check_scratch(kernel_name: str, arch: Arch, per_item: int) -> None:
    """A kernel whose scratch (private memory, register spills included) exceeds what one wave
    may have is rejected at compile time instead of failing at dispatch."""
    need = int(per_item) * arch.wave_size
    if need > arch.max_wave_scratch:
        raise CodegenError(
            f"kernel {kernel_name} needs {per_item} bytes of scratch per work-item ({need} per "
            f"wave of {arch.wave_size}) but {arch.name} allows {arch.max_wave_scratch} bytes per "
            f"wave: use smaller blocks or more warps (large private arrays and register spills "
            f"live in scratch)")
