"""The NVIDIA backend's last compile steps: LLVM IR -> PTX -> cubin, with a resource report."""
from __future__ import annotations

from naiad.errors import CodegenError
from naiad.plugins import BinaryResult, Codegen, ResourceReport, Target

from . import toolchain
from .options import validate
from .target_info import NvidiaTargetInfo


#: ELF e_machine of CUDA cubins
EM_CUDA = 190


class NvidiaCodegen(Codegen):
    """Codegen for one ``nvidia:<arch>`` target."""

    stages = ("ptx", "cubin")

    def __init__(self, target: Target):
        self.target = target
        self.target_info = NvidiaTargetInfo(target.arch)

    def toolchain_hash(self) -> str:
        return toolchain.toolchain_hash()

    def compile_llvm(self, llvm_ir: str, kernel_name: str, options) -> BinaryResult:
        """O3, emit PTX for the target arch, link to cubin with nvJitLink.

        A kernel using Hopper's ``wgmma`` is built for ``sm_90a`` (its cubin runs on sm_90
        devices only). ``resources`` is the resource report (spills in bytes); ``metadata`` holds
        its details (``registers``, ``spill_bytes``, ``spill_loads``, ``shared``, ...; see
        :func:`naiad_nvidia.toolchain.parse_resource_report`), ``num_warps``, the timings
        ``llvm_to_ptx_s`` / ``ptx_to_cubin_s`` and nvJitLink's log ``jit_log``.
        """
        opts = validate(options)
        arch = self.target.arch
        if arch == "sm_90" and ("wgmma." in llvm_ir or "tensormap.replace" in llvm_ir):
            arch = "sm_90a"  # wgmma and tensormap.replace exist only in .target sm_90a
        ptxas = [f"-maxrregcount={opts.maxnreg}"] if opts.maxnreg else []
        ptx, cubin, meta = toolchain.compile_llvm_to_cubin(
            llvm_ir, arch, kernel_name, opt_level=opts.opt_level,
            fp_fusion=opts.enable_fp_fusion, ptxas_options=ptxas)
        meta["num_warps"] = opts.num_warps
        meta["target"] = str(self.target)
        report = ResourceReport(registers=meta["registers"], shared_bytes=meta["shared"],
                                spill_bytes=meta["spill_bytes"], scratch_bytes=meta["local"])
        return BinaryResult(stages={"ptx": ptx, "cubin": cubin}, binary_stage="cubin",
                            metadata=meta, resources=report)

    def derived_stage(self, stage: str, stages: dict):
        """``sass``: the cubin disassembled (:mod:`naiad_nvidia.disassembler`)."""
        if stage == "sass" and "cubin" in stages:
            from .disassembler import sass

            return sass(stages["cubin"])
        return None

    def validate_binary(self, result: BinaryResult) -> None:
        """A cubin is an ELF file for EM_CUDA whose PTX defines the kernel entry."""
        super().validate_binary(result)
        cubin = bytes(result.stages["cubin"])
        if cubin[:4] != b"\x7fELF" or int.from_bytes(cubin[18:20], "little") != EM_CUDA:
            raise CodegenError(f"{self.target}: the cubin is not a CUDA ELF file")
        name = result.metadata.get("kernel_name")
        if name and f".entry {name}" not in result.stages["ptx"]:
            raise CodegenError(f"{self.target}: the PTX has no .entry {name}")
