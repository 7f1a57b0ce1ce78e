"""The AMD backend's Codegen: its TargetInfo plus LLVM IR -> (amdgcn, hsaco) with a resource report."""
from __future__ import annotations

from naiad.errors import CodegenError
from naiad.plugins import BinaryResult, Codegen, Target

from . import metadata as md
from .archs import Arch, get_arch
from .descriptor import check_descriptor
from .lowering.kernarg_preload import mark_kernel_args_inreg
from .target_info import AmdTargetInfo
from .toolchain import get_toolchain, toolchain_hash


class AmdCodegen(Codegen):
    def __init__(self, target: Target):
        self.target = target
        self.target_info = AmdTargetInfo(target.arch)

    def toolchain_hash(self) -> str:
        return toolchain_hash()

    def compile_llvm(self, llvm_ir: str, kernel_name: str, options=None) -> BinaryResult:
        """O3 (stage ``llir-opt``), AMDGCN assembly, object, hsaco; metadata from the code
        object's metadata note. ``options`` (AmdOptions or a mapping) gives ``enable_fp_fusion``.

        ``metadata`` keys: ``vgpr``, ``sgpr``, ``agpr``, ``spills`` (VGPR + SGPR spills), ``lds``
        (static LDS bytes), ``scratch`` (private bytes per work-item), ``wavefront_size``,
        ``instructions``, ``max_flat_workgroup_size``, ``kernarg_size``, ``occupancy`` (LLVM's
        waves-per-SIMD estimate), the generic ``registers`` / ``shared`` aliases, ``args`` (offset,
        size and kind of each explicit kernel argument, for the launcher) and ``compile_times``.
        """
        fusion = _option(options, "enable_fp_fusion", True)
        if self.target_info.arch.kernarg_preload:
            llvm_ir = mark_kernel_args_inreg(llvm_ir)
        art = get_toolchain(self.target.arch).compile(llvm_ir, fp_fusion=bool(fusion))
        rep = md.resource_report(md.kernel_metadata(art.hsaco, kernel_name))
        rep["instructions"] = md.count_instructions(art.asm, kernel_name)
        rep["occupancy"] = md.asm_occupancy(art.asm)
        rep["registers"] = rep["vgpr"]
        rep["shared"] = rep["lds"]
        rep["kernel_name"] = kernel_name
        rep["arch"] = self.target.arch
        rep["compile_times"] = art.times
        check_scratch(kernel_name, get_arch(self.target.arch), rep["scratch"])
        problems = check_descriptor(art.hsaco, kernel_name)
        if problems:  # the loader reads the descriptor: a disagreement is a toolchain bug
            raise CodegenError(f"internal error: kernel descriptor of {kernel_name} disagrees "
                               f"with its metadata note: {'; '.join(problems)}")
        return BinaryResult(stages={"llir-opt": art.optimized_ir, "amdgcn": art.asm, "hsaco": art.hsaco},
                            binary_stage="hsaco", metadata=rep)


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


def _option(options, name: str, default):
    if options is None:
        return default
    if hasattr(options, "get"):
        return options.get(name, default)
    return getattr(options, name, default)
