"""A test-only naiad backend, ``simt``, that runs kernels on the CPU SIMT device (simt.py).

It goes through the real pipeline (frontend, generic passes, the core GPU layer, LLVM) and the
real runtime (``kernel[grid](...)``, specialization, caches), so the conformance suite's execute
tier checks the vendor-neutral lowering's numerics on a machine without a GPU::

    PYTHONPATH=core:backends/reference:backends/nvidia:backends/amd:tests/gpu \\
        python -m pytest conformance --backend=simt -p simt_backend

Targets: ``simt:w8`` (warps of 8 lanes, the default), ``simt:w16``, ``simt:w64``, and
simulated AMD GPUs ``simt:gfx90a`` / ``simt:gfx942`` / ``simt:gfx950`` (wave64, MFMA) and ``simt:gfx1100``
(wave32, WMMA): these run the AMD plugin's GPU pipeline -- the core matrix passes with the AMD
instruction table and layouts, and its pointer canonicalisation and buffer ops -- and execute
each matrix instruction on the ISA model of :mod:`amd_matrix_isa` (options
``matrix_instr_nonkdim`` and ``kpack`` as on AMD) and each buffer access on a model of the
raw-buffer range check (out of range: loads give 0, stores are dropped). LDS is
checked against 64 KiB as on the real parts; XOR shuffles use the AMD backend's cross-lane
plans as on ``simt:amd64`` / ``simt:amd32``.
``simt:amd64`` / ``simt:amd32``: waves of 64 / 32 lanes whose XOR shuffles run the AMD backend's
cross-lane plans (GFX9 / GFX10+ DPP, ds_swizzle, permlanex16) move by move.
Device memory is host memory (numpy arrays).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from naiad.errors import OptionError
from naiad.plugins import BinaryResult, Codegen, Launcher, Options, TargetSpec, hookimpl

ARCHS = {"w8": 8, "w16": 16, "w64": 64, "amd64": 64, "amd32": 32, "gfx90a": 64, "gfx942": 64,
         "gfx950": 64, "gfx1100": 32}
#: simulated AMD archs: their matrix table and pipeline come from naiad_amd
AMD_ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100")
OPTIONS = ("num_warps", "num_stages", "unroll_threshold", "matrix_instr_nonkdim", "kpack")


def amd_xor_moves(warp_size: int, gfx10_plus: bool):
    """mask -> the lane permutations of naiad_amd's plan for that XOR shuffle."""
    from naiad_amd.lowering import cross_lane

    def moves(mask):
        lanes = list(range(warp_size))
        return [cross_lane.model([m], lanes) for m in cross_lane.xor_plan(mask, warp_size, gfx10_plus)]

    return moves


@dataclass(frozen=True)
class SimtOptions(Options):
    num_warps: int = 4
    num_stages: int = 3
    matrix_instr_nonkdim: int = 0
    kpack: int = 1


def _amd_op_lowering(target_info):
    """naiad_amd's own ops on the simulator: amd.cond_barrier with the plain warp index (the
    AMD lowering makes it uniform with readfirstlane, which the host has no use for); the
    buffer ops through ``target_info``'s range-check model."""
    buffer_ops = target_info.op_lowering

    def op_lowering(name):
        if name == "amd.cond_barrier":
            from naiad_amd.lowering.ping_pong import lower_cond_barrier

            return lambda kl, op: lower_cond_barrier(kl, op, warp_index=lambda kl: kl.warp)
        return buffer_ops(name)

    return op_lowering


class SimtCodegen(Codegen):
    def __init__(self, target):
        from simt import CpuTargetInfo

        self.target = target
        amd = target.arch.startswith("amd") or target.arch in AMD_ARCHS
        moves = amd_xor_moves(target.warp_size, target.warp_size == 32) if amd else None
        self.target_info = CpuTargetInfo(target.warp_size, xor_moves=moves)
        if target.arch in AMD_ARCHS:
            self.target_info.shared_memory_bytes = 65536
            self.target_info.op_lowering = _amd_op_lowering(self.target_info)

    def toolchain_hash(self) -> str:
        """llvmlite's version and simt.py's source: the host functions the IR calls live there."""
        import hashlib
        import pathlib

        import llvmlite

        import simt

        return f"simt-{llvmlite.__version__}-{hashlib.sha256(pathlib.Path(simt.__file__).read_bytes()).hexdigest()[:16]}"

    def compile_llvm(self, llvm_ir, kernel_name, options) -> BinaryResult:
        import llvmlite.binding as llvm

        llvm.parse_assembly(llvm_ir).verify()
        return BinaryResult({"simt": llvm_ir}, "simt",
                            {"registers": 0, "spill_bytes": 0, "triple": self.target_info.triple})


class SimtLauncher(Launcher):
    def __init__(self, target):
        self.target = target

    def load(self, result, kernel_name):
        stages = result.stages if isinstance(result, BinaryResult) else result
        return {"ir": stages["simt"], "name": kernel_name, "jit": {}}

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        from simt import CpuTargetInfo, JitKernel

        key = (num_warps, shared_bytes)
        jit = handle["jit"].get(key)
        if jit is None:
            triple = CpuTargetInfo(self.target.warp_size).triple
            jit = JitKernel(handle["ir"], handle["name"], self.target.warp_size, num_warps,
                            shared_bytes, triple)
            handle["jit"][key] = jit
        jit.launch(tuple(grid), list(args), list(arg_types))

    def to_device(self, array):
        return np.ascontiguousarray(np.array(array, copy=True))

    def empty(self, shape, dtype):
        from naiad.ir.types import numpy_dtype_of

        if isinstance(dtype, str):
            name = dtype.lstrip("*")
            name = {"fp16": "f16", "fp32": "f32", "fp64": "f64"}.get(name, name)
            dtype = numpy_dtype_of(name)
        return np.empty(shape, dtype=dtype)

    def data_pointer(self, obj):
        if isinstance(obj, np.ndarray):
            return obj.ctypes.data
        return None


class SimtPlugin:
    @hookimpl
    def naiad_targets(self):
        return [TargetSpec("simt", tuple(ARCHS), ARCHS, "w8", lambda: "w8", True,
                           "the core GPU lowering run on CPU threads (tests only)")]

    @hookimpl
    def naiad_options(self, target, options):
        if target.backend != "simt":
            return None
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise OptionError(f"unknown option(s) {sorted(unknown)} for simt")
        nw = options.get("num_warps", 4)
        if not isinstance(nw, int) or nw < 1 or nw & (nw - 1):
            raise OptionError(f"num_warps must be a power of two, got {nw!r}")
        return SimtOptions(num_warps=nw, num_stages=options.get("num_stages", 3),
                           matrix_instr_nonkdim=options.get("matrix_instr_nonkdim", 0),
                           kpack=options.get("kpack", 1))

    @hookimpl
    def naiad_layouts(self, target):
        if target.backend != "simt" or target.arch not in AMD_ARCHS:
            return None
        from naiad_amd.ir.matrix_layouts import LAYOUTS

        return LAYOUTS

    @hookimpl
    def naiad_matrix_instructions(self, target, options):
        if target.backend != "simt" or target.arch not in AMD_ARCHS:
            return None
        from naiad_amd.ir.matrix_table import instruction_table

        return instruction_table(target.arch, getattr(options, "matrix_instr_nonkdim", 0),
                                 getattr(options, "kpack", 1))

    @hookimpl
    def naiad_lowering_passes(self, target, options):
        if target.backend != "simt" or target.arch not in AMD_ARCHS:
            return None
        from naiad_amd.passes.pipeline import amd_lowering_passes

        return amd_lowering_passes(target, options)  # the plugin's passes: stream_pipeline, buffer ops

    @hookimpl
    def naiad_codegen(self, target):
        return SimtCodegen(target) if target.backend == "simt" else None

    @hookimpl
    def naiad_launcher(self, target):
        return SimtLauncher(target) if target.backend == "simt" else None


PLUGIN = SimtPlugin()


def pytest_configure(config):
    """Loaded with ``-p simt_backend``: register the backend before the suite collects."""
    from naiad.plugins.manager import register

    register(PLUGIN, name="simt")


def ensure_registered() -> None:
    """Register the simt plugin in this process once (several test modules need it)."""
    from naiad.plugins.manager import get_plugin_manager, register

    if get_plugin_manager().get_plugin("simt") is None:
        register(PLUGIN, name="simt")

