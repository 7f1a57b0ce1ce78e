"""LLVM IR text -> optimised IR, AMDGCN assembly, ELF object and linked hsaco.

Steps: parse and verify the module (llvmlite), optimise it with LLVM's O3 pipeline built for the
AMDGPU TargetMachine (so the target's own IR passes run; the result is kept as stage
``llir-opt``), run the AMDGPU code generator **once** to emit assembly (stage ``amdgcn``), then
assemble that text into a relocatable object with LLVM's MC assembler and link it into a loadable
code object with ``ld.lld -shared``. Assembler and linker are the clang and ``ld.lld`` that ship
inside the ``ziglang`` wheel (its ``zig`` executable, called directly; LLVM 22 like llvmlite's),
so no ROCm install is needed to compile. Running the code generator twice (text, then object)
doubled the compile time of large kernels; assembling the text costs tens of milliseconds.

With ``fp_fusion`` (the ``enable_fp_fusion`` option, on by default as in Triton) every ``fmul``,
``fadd`` and ``fsub`` carries the ``contract`` flag, so LLVM may fuse ``a * b + c`` into one FMA
(the AMDGPU TargetMachine of llvmlite has no global fp-contract switch). Explicit ``llvm.fma``
calls are unaffected either way.

LLVM aborts the whole process (not an exception) when instruction selection meets an operation
that only a libm call could implement, and a GPU code object has no libm. Before codegen the
optimised module is therefore checked for such calls, and for calls to any function without a
body, which become a :class:`naiad.errors.CodegenError` instead.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from naiad.backend import LLVM_LOCK, initialize_llvm, take_verified_module
from naiad.errors import CodegenError

from .archs import TRIPLE, get_arch

CODE_OBJECT_VERSION = 500  # the `amdhsa_code_object_version` module flag: code object v5

# llvmlite shares one LLVM context per process: naiad's process-wide lock serialises its use.
_LLVM_LOCK = LLVM_LOCK

# Intrinsics LLVM 22's AMDGPU backend can only turn into libm calls (checked per type).
_LIBCALL_ONLY = re.compile(
    r"^llvm\.(?:"
    r"(?:exp|exp2|exp10|log|log2|log10|sin|cos|pow|powi)\.f64"
    r"|(?:tan|asin|acos|atan|atan2|sinh|cosh|tanh|sincos|sincospi|modf)\.[a-z0-9.]+"
    r")$"
)


_init_llvm = initialize_llvm


@dataclass
class Artifacts:
    """What one compile produced, with the seconds each step took."""

    asm: str
    obj: bytes
    hsaco: bytes
    optimized_ir: str  # the module after O3, what the code generator received
    times: dict[str, float] = field(default_factory=dict)


@functools.lru_cache(maxsize=None)
def lld_command() -> list[str]:
    """How to run ``ld.lld``: the ``zig`` executable inside the ziglang wheel, called directly
    (what ``python -m ziglang`` execs, minus a Python start-up per link), else via Python."""
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.origin:
        exe = Path(spec.origin).parent / ("zig.exe" if os.name == "nt" else "zig")
        if exe.is_file() and os.access(exe, os.X_OK):
            return [str(exe), "ld.lld"]
    return [sys.executable, "-m", "ziglang", "ld.lld"]


def assembler_command(arch) -> list[str]:
    """clang's integrated assembler (``zig clang -cc1as``) for one arch: AMDGCN text -> object."""
    return [lld_command()[0], "clang", "-cc1as", "-triple", TRIPLE, "-target-cpu", arch.name,
            "-target-feature", arch.features, "-filetype", "obj"]


_FP_ARITH = re.compile(r"(=\s*)(fmul|fadd|fsub)(?!\s+contract)\b")


def allow_fp_contraction(llvm_ir: str) -> str:
    """``contract`` on every fmul/fadd/fsub, so that LLVM may fuse them into FMAs."""
    return _FP_ARITH.sub(r"\1\2 contract", llvm_ir)


@functools.lru_cache(maxsize=None)
def lld_version() -> str:
    """``ld.lld --version`` of the linker we use ('' when it cannot run)."""
    try:
        out = subprocess.run(lld_command() + ["--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


@functools.lru_cache(maxsize=None)
def _own_source_hash() -> str:
    """Hash of naiad_amd's own sources: the math expansions and attributes shape the binary too."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def toolchain_hash() -> str:
    """Stable hash of LLVM (version, llvmlite), ld.lld and naiad_amd's codegen sources."""
    key = "|".join([
        "llvm=" + ".".join(map(str, llvm.llvm_version_info)),
        "llvmlite=" + llvmlite.__version__,
        "lld=" + lld_version(),
        "naiad_amd=" + _own_source_hash(),
        f"cov={CODE_OBJECT_VERSION}",
    ])
    return hashlib.sha256(key.encode()).hexdigest()


def ensure_code_object_version(llvm_ir: str, version: int = CODE_OBJECT_VERSION) -> str:
    """Append the ``amdhsa_code_object_version`` module flag when the module lacks it.

    LLVM 22 defaults to code object v6, which ROCm releases before 6.2 cannot load; v5 loads on
    ROCm 5.x and 6.x. A flag the module already carries is kept. Named metadata may be given more
    than once in LLVM text (the operands are merged), so the flag is added with a fresh id.
    """
    if "amdhsa_code_object_version" in llvm_ir:
        return llvm_ir
    ids = [int(m) for m in re.findall(r"^!(\d+)\s*=", llvm_ir, flags=re.M)]
    n = max(ids, default=-1) + 1
    return (f"{llvm_ir.rstrip()}\n\n!llvm.module.flags = !{{!{n}}}\n"
            f'!{n} = !{{i32 1, !"amdhsa_code_object_version", i32 {version}}}\n')


class Toolchain:
    """The AMDGPU TargetMachine of one architecture and the steps around it."""

    def __init__(self, arch: str):
        self.arch = get_arch(arch)
        with _LLVM_LOCK:
            _init_llvm()
            target = llvm.Target.from_triple(TRIPLE)
            self.tm = target.create_target_machine(cpu=self.arch.name, features=self.arch.features,
                                                   opt=3, reloc="pic", codemodel="default")
            # Verbose assembly carries LLVM's per-kernel comments (register counts, occupancy).
            self.tm.set_asm_verbosity(True)
        self.data_layout = str(self.tm.target_data)

    # -- LLVM -----------------------------------------------------------------------------
    def parse(self, llvm_ir: str):
        mod = take_verified_module(llvm_ir)     # the core's check parsed this very text
        verified = mod is not None
        try:
            if mod is None:
                mod = llvm.parse_assembly(llvm_ir)
        except RuntimeError as e:
            raise CodegenError(f"amd: LLVM could not parse the module:\n{e}") from None
        if not mod.triple:
            mod.triple = TRIPLE
        if not mod.data_layout:
            mod.data_layout = self.data_layout
        if not mod.triple.startswith("amdgcn"):
            raise CodegenError(f"amd: module triple is {mod.triple!r}, expected {TRIPLE!r}")
        try:
            if not verified:
                mod.verify()
        except RuntimeError as e:
            raise CodegenError(f"amd: the LLVM module does not verify:\n{e}") from None
        return mod

    def optimize(self, mod) -> None:
        """LLVM's default O3 module pipeline, built for our TargetMachine, with the SLP
        vectorizer on as clang's O3 has it (llvmlite's tuning options default it off): it pairs
        independent f32 operations into ``<2 x float>`` ones, which gfx90a/gfx94x/gfx950 issue
        as ``v_pk_add_f32``/``v_pk_mul_f32``/``v_pk_fma_f32`` (one instruction for two)."""
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(self.tm, pto)
        mpm = pb.getModulePassManager()
        mpm.run(mod, pb)

    @staticmethod
    def check_calls(mod) -> None:
        """Refuse what AMDGPU would abort the process on or cannot link (see the module
        docstring): libm-only intrinsics, calls to functions without a body, and LDS
        (addrspace 3) variables with an initializer other than undef/poison."""
        for gv in mod.global_variables:
            text = str(gv)
            if " addrspace(3) " in text and not gv.is_declaration and not re.search(r"\b(undef|poison)\b", text):
                raise CodegenError(
                    f"amd: LDS variable @{gv.name} has an initializer; shared memory (addrspace 3) "
                    f"cannot be initialised, use undef/poison")
        for fn in mod.functions:
            if not fn.is_declaration:
                continue
            name = fn.name
            if name.startswith("llvm."):
                if _LIBCALL_ONLY.match(name):
                    raise CodegenError(
                        f"amd: {name} has no AMDGPU lowering (LLVM would need a libm call); "
                        f"use naiad_amd's TargetInfo.math, which expands it")
                continue
            raise CodegenError(
                f"amd: the kernel calls external function {name!r}, which has no definition; "
                f"AMDGPU code objects cannot link against host or device libraries")

    def codegen(self, mod) -> str:
        """The AMDGCN assembly of the optimised module: the one code-generator run."""
        with _LLVM_LOCK:
            return self.tm.emit_assembly(mod)

    def emit_object(self, mod) -> bytes:
        """The object straight from the code generator (what :meth:`assemble` must reproduce)."""
        with _LLVM_LOCK:
            return bytes(self.tm.emit_object(mod))

    # -- assembling and linking -------------------------------------------------------------
    def assemble(self, asm: str) -> bytes:
        """AMDGCN text -> relocatable ELF object; CodegenError with the assembler log."""
        with tempfile.TemporaryDirectory(prefix="naiad_amd_") as tmp:
            src, out = os.path.join(tmp, "kernel.s"), os.path.join(tmp, "kernel.o")
            with open(src, "w") as f:
                f.write(asm)
            _run_tool("the assembler (clang -cc1as)", assembler_command(self.arch) + ["-o", out, src], out)
            with open(out, "rb") as f:
                return f.read()

    @staticmethod
    def link(obj: bytes) -> bytes:
        """``ld.lld -shared`` the object into an hsaco; CodegenError with the linker log."""
        with tempfile.TemporaryDirectory(prefix="naiad_amd_") as tmp:
            src, out = os.path.join(tmp, "kernel.o"), os.path.join(tmp, "kernel.hsaco")
            with open(src, "wb") as f:
                f.write(obj)
            _run_tool("ld.lld", lld_command() + ["-shared", "--no-undefined", src, "-o", out], out)
            with open(out, "rb") as f:
                return f.read()

    # -- all of it ------------------------------------------------------------------------
    def compile(self, llvm_ir: str, fp_fusion: bool = True) -> Artifacts:
        times = {}
        t0 = time.perf_counter()
        if fp_fusion:
            llvm_ir = allow_fp_contraction(llvm_ir)
        mod = self.parse(ensure_code_object_version(llvm_ir))
        t1 = time.perf_counter()
        self.optimize(mod)
        self.check_calls(mod)
        optimized = str(mod)
        t2 = time.perf_counter()
        asm = self.codegen(mod)
        t3 = time.perf_counter()
        obj = self.assemble(asm)
        t4 = time.perf_counter()
        hsaco = self.link(obj)
        t5 = time.perf_counter()
        times.update(parse=t1 - t0, optimize=t2 - t1, codegen=t3 - t2, assemble=t4 - t3, link=t5 - t4,
                     total=t5 - t0)
        return Artifacts(asm=asm, obj=obj, hsaco=hsaco, optimized_ir=optimized, times=times)


def _run_tool(what: str, cmd: list[str], out: str) -> None:
    """Run one of the zig-bundled LLVM tools; CodegenError with its log when it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        raise CodegenError(f"amd: could not run {what} ({' '.join(cmd)}): {e}") from None
    if proc.returncode != 0 or not os.path.exists(out):
        log = (proc.stdout + proc.stderr).strip()
        raise CodegenError(f"amd: {what} failed (exit {proc.returncode}):\n{log}")


@functools.lru_cache(maxsize=None)
def get_toolchain(arch: str) -> Toolchain:
    return Toolchain(arch)
