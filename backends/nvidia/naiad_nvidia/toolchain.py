"""LLVM IR -> PTX (llvmlite's NVPTX target) -> cubin (nvJitLink, in-process), with a resource report.

Why in-process: no CUDA toolkit, ptxas binary or GPU is needed to produce a loadable cubin, so
compile-only runs (CI, ahead-of-time ``naiad.compile``) work on any machine.
"""
from __future__ import annotations

import functools
import hashlib
import re
import time

import llvmlite
import llvmlite.binding as llvm

from naiad.backend import LLVM_LOCK, initialize_llvm, take_verified_module
from naiad.errors import CodegenError

from .target_info import NVPTX_DATA_LAYOUT, NVPTX_TRIPLE

#: PTX ISA version emitted per architecture (LLVM feature ``+ptxNN``). 8.0 (CUDA 12.0) is valid
#: for sm_80/sm_89/sm_90 (their minimums: 7.0, 7.8, 7.8) and understood by nvJitLink >= 12.0.
PTX_VERSION = {"sm_80": 80, "sm_86": 80, "sm_87": 80, "sm_89": 80, "sm_90": 80, "sm_90a": 80}
#: sm_90 with nvJitLink >= 12.8 gets PTX 8.6: its ``fence.acquire``/``fence.release`` (one-sided
#: fences; 8.0 has only ``fence.acq_rel``) are what LLVM then emits for an acquire/release fence,
#: as CUDA and Triton do (``tl.atomic_poll``'s acquire).
PTX_ONE_SIDED_FENCES = (86, (12, 8), ("sm_90", "sm_90a"))

# LLVM's NVPTX backend has no lowering for these intrinsics; it aborts the *process* ("no libcall
# available" / UNREACHABLE) instead of returning an error, so we refuse them up front.
_UNSELECTABLE_NAME = (
    r'llvm\.(?:exp|exp10|log|log2|log10|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|'
    r'pow|powi|sincos|sincospi|modf|frexp)\.[\w.]+|llvm\.exp2\.f64|llvm\.exp2\.v\d+f64')
_UNSELECTABLE = re.compile(rf'@"?({_UNSELECTABLE_NAME})"?\(')

# NVPTX aborts on any other syncscope (e.g. AMD's "agent").
_SYNCSCOPE = re.compile(r'syncscope\("([^"]*)"\)')
_NVPTX_SCOPES = {"", "singlethread", "block", "cluster", "device"}

# llvmlite shares one LLVM context per process; parsing/optimising/emitting is serialised
# under naiad's process-wide lock (the core's module check takes it too).
_LLVM_LOCK = LLVM_LOCK
_init_llvm = initialize_llvm


#: LLVM code-generation level of the NVPTX TargetMachine (the module still gets the full O3
#: pipeline). At 3 ("aggressive") NVPTX's codegen runs GVN twice more over IR that O3 has
#: already put through GVN; at 2 it runs EarlyCSE instead: the PTX is byte-identical on every
#: kernel measured (the 74 modules of bench/nv_static.py's tutorial configs, and bench/gpu.py's
#: kernels) and PTX emission of the fp32 FMA matmul takes ~25% less CPU (0.20 -> 0.15 s).
CODEGEN_OPT_LEVEL = 2

#: LLVM options in force while the module pipeline runs, restored to LLVM's defaults after it
#: (llvmlite's options are process-wide; another backend in the process keeps the defaults):
#: (option, value while optimising, LLVM's default).
#: ``licm-mssa-max-acc-promotion``: LICM promotes memory to registers only in loops with at most
#: this many memory accesses (a compile-time cap of LLVM's; default 250). Looking for candidates
#: puts every loop-invariant access into alias sets, pairwise alias queries through swizzled
#: shared-memory offsets: for the fp32 FMA matmul's k-loop (192 shared-memory tile reads, none
#: promotable: the loop has barriers) that was 0.07 of O3's 0.17 s CPU. PTX byte-identical on
#: bench/nv_matrix_corpus.py's 365 compiles and bench/gpu_kernels.py's kernels.
#: ``dse-memoryssa-walklimit``: how many memory accesses dead-store elimination walks up from
#: each store looking for earlier stores it overwrites (default 90). A layout conversion stores
#: a tile's registers to shared memory at xor-swizzled offsets: each walk asks BasicAA about
#: pairs of those stores, through known bits of the swizzle, and never finds a dead one (a
#: barrier and the reads follow). At 10: DSE 0.023 -> 0.002 s on tutorial 03's 128x128x32
#: epilogue; PTX byte-identical on the 570 modules of bench/nv_matrix_corpus.py's corpus.
PIPELINE_OPTIONS = (("licm-mssa-max-acc-promotion", 64, 250),
                    ("dse-memoryssa-walklimit", 10, 90))


@functools.lru_cache(maxsize=None)
def target_machine(arch: str) -> "llvm.TargetMachine":
    """The NVPTX TargetMachine for ``arch`` (e.g. ``sm_90``), codegen at
    :data:`CODEGEN_OPT_LEVEL`."""
    _init_llvm()
    ptx = ptx_version(arch)
    target = llvm.Target.from_triple(NVPTX_TRIPLE)
    return target.create_target_machine(cpu=arch, features=f"+ptx{ptx}",
                                        opt=CODEGEN_OPT_LEVEL, codemodel="default")


def _set_options(pairs) -> None:
    for name, value in pairs:
        llvm.set_option("naiad", f"--{name}={value}")


def _refuse_intrinsic(name: str, stage: str):
    raise CodegenError(
        f"{stage}: LLVM's NVPTX backend cannot lower the intrinsic {name!r} (it would "
        f"abort the process); emit it through NvidiaTargetInfo.math instead")


def _check_declarations(mod, stage: str) -> None:
    """What the optimiser may have introduced (a libm call folded into an intrinsic) is a
    declaration: scanning those is the same check as the text one, without printing the
    optimised module."""
    for fn in mod.functions:
        if fn.is_declaration and re.fullmatch(_UNSELECTABLE_NAME, fn.name):
            _refuse_intrinsic(fn.name, stage)


def ptx_version(arch: str) -> int:
    """The PTX ISA version emitted for ``arch`` (see ``PTX_ONE_SIDED_FENCES``)."""
    version, jitlink, archs = PTX_ONE_SIDED_FENCES
    if arch in archs:
        try:
            if tuple(_nvjitlink().version()) >= jitlink:
                return version
        except Exception:  # no nvJitLink: PTX only, the baseline version
            pass
    return PTX_VERSION.get(arch, 80)


def _check_selectable(text: str, stage: str) -> None:
    m = _UNSELECTABLE.search(text)
    if m:
        _refuse_intrinsic(m.group(1), stage)
    for scope in set(_SYNCSCOPE.findall(text)) - _NVPTX_SCOPES:
        raise CodegenError(
            f"{stage}: syncscope({scope!r}) is not supported by NVPTX (it would abort the "
            f"process); use one of {sorted(_NVPTX_SCOPES)}")


def llvm_to_ptx(llvm_ir: str, arch: str, *, opt_level: int = 3,
                fp_fusion: bool = True) -> str:
    """Parse, verify, optimise (new pass manager, ``opt_level``) and emit PTX for ``arch``.

    A module without a triple or data layout gets NVPTX's. Raises CodegenError with LLVM's
    message on a parse or verifier failure, or for an intrinsic NVPTX cannot lower. The PTX has
    the narrow negations ptxas 12.x miscompiles rewritten (:func:`harden_narrow_ints`).
    """
    _check_selectable(llvm_ir, "LLVM IR")
    with _LLVM_LOCK:
        tm = target_machine(arch)
        mod = take_verified_module(llvm_ir)      # the core's check parsed it already
        verified = mod is not None
        if mod is None:
            try:
                mod = llvm.parse_assembly(llvm_ir)
            except RuntimeError as e:
                raise CodegenError(f"LLVM IR does not parse:\n{e}") from None
        if not mod.triple:
            mod.triple = NVPTX_TRIPLE
        elif not mod.triple.startswith("nvptx64"):
            raise CodegenError(f"LLVM module triple is {mod.triple!r}, expected {NVPTX_TRIPLE!r}")
        if not mod.data_layout:
            mod.data_layout = NVPTX_DATA_LAYOUT
        try:
            if not verified:
                mod.verify()
        except RuntimeError as e:
            raise CodegenError(f"LLVM IR fails verification:\n{e}") from None
        if opt_level > 0:
            # before the tuning options: they copy LLVM's LICM caps when they are created
            _set_options((name, value) for name, value, _ in PIPELINE_OPTIONS)
            try:
                pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
                pb = llvm.create_pass_builder(tm, pto)
                pb.getModulePassManager().run(mod, pb)
            finally:
                _set_options((name, default) for name, _, default in PIPELINE_OPTIONS)
        _check_declarations(mod, "optimised LLVM IR")
        # fp contraction of separate fmul/fadd into FMA is an NVPTX code-generator option.
        llvm.set_option("naiad", f"--nvptx-fma-level={2 if fp_fusion else 0}")
        try:
            ptx = tm.emit_assembly(mod)
        except RuntimeError as e:
            raise CodegenError(f"LLVM NVPTX code generation failed:\n{e}") from None
    return harden_narrow_ints(ptx)


# ------------------------------------------------------------------ PTX ptxas mishandles
# ptxas 12.x (12.9 checked: Triton's bundled one) keeps a 16-bit register sign-extended in its
# 32-bit hardware register and folds ``neg.s16``/``abs.s16`` into a 32-bit negate/IABS of that
# value *without re-normalising*: ``-(int16)-32768`` widened by ``cvt.s32.s16`` (or compared,
# shifted, divided) is +32768 instead of -32768. nvJitLink 13.x is right, but the device's may be
# 12.x (the H200 run showed it). So neither instruction reaches the assembler: the operation is
# done in 32 bits on the sign-extended value and truncated back (bit-identical), and the
# truncation tells ptxas that the 16-bit result is not normalised, so every consumer
# re-extends it. ``sub.s16 d, 0, x`` is the same negation to ptxas. Other 16-bit arithmetic
# (add, sub, mul, shl, not, shr, min/max, mul.hi, div/rem, with registers or immediates) is
# re-normalised correctly (checked in SASS for widening, compare and shift consumers).
_NARROW_NEG_ABS = re.compile(
    r"^(?P<indent>[ \t]*)(?P<pred>@!?%\w+[ \t]+)?(?P<op>neg|abs|sub)\.s16[ \t]+"
    r"(?P<dst>%\w+),[ \t]*(?P<zero>0,[ \t]*)?(?P<src>%\w+);", re.MULTILINE)
#: part of the toolchain hash: bump when the PTX rewrites change (cached cubins are stale)
PTX_REWRITES = "narrow-neg-abs-2"


def _widen_narrow_neg_abs(m: re.Match) -> str:
    if (m["op"] == "sub") != bool(m["zero"]):
        return m[0]                 # a subtraction other than 0 - x: left alone
    ind, pred, op = m["indent"], m["pred"] or "", "abs" if m["op"] == "abs" else "neg"
    return (f"{ind}{{ .reg .b32 %naiad_w; {pred}cvt.s32.s16 %naiad_w, {m['src']}; "
            f"{pred}{op}.s32 %naiad_w, %naiad_w; {pred}cvt.u16.u32 {m['dst']}, %naiad_w; }}")


def harden_narrow_ints(ptx: str) -> str:
    """``neg.s16``/``abs.s16``/``sub.s16 d, 0, x`` rewritten as a 32-bit operation plus
    truncation (see above)."""
    return _NARROW_NEG_ABS.sub(_widen_narrow_neg_abs, ptx)


# ------------------------------------------------------------------------------ nvJitLink

def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink
    except Exception as e:  # pragma: no cover - depends on the environment
        raise CodegenError(f"nvJitLink is not available (pip install nvidia-nvjitlink "
                           f"cuda-bindings): {e}") from None
    return nvjitlink


def _log(nvjitlink, handle, which: str) -> str:
    size = getattr(nvjitlink, f"get_{which}_log_size")(handle)
    if not size:
        return ""
    buf = bytearray(size)
    getattr(nvjitlink, f"get_{which}_log")(handle, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def ptx_to_cubin(ptx: str, arch: str, *, options=()) -> tuple[bytes, str]:
    """Assemble and link ``ptx`` for ``arch`` with nvJitLink; returns (cubin, info log).

    ``-verbose`` makes the info log carry ptxas's per-function resource usage.
    """
    nvjitlink = _nvjitlink()
    opts = [f"-arch={arch}", "-O3", "-verbose", *options]
    try:
        handle = nvjitlink.create(len(opts), opts)
    except Exception as e:
        raise CodegenError(f"nvJitLink rejected options {opts}: {e}") from None
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "naiad.ptx")
            nvjitlink.complete(handle)
        except Exception as e:
            log = _log(nvjitlink, handle, "error") or _log(nvjitlink, handle, "info")
            raise CodegenError(f"nvJitLink failed for {arch} ({e}):\n{log}") from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin), _log(nvjitlink, handle, "info")
    finally:
        nvjitlink.destroy(handle)


# ------------------------------------------------------------------------- resource report

_PTXAS_FN = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for '?([^':\s]+)'?")
_FIELDS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "cmem": re.compile(r"(\d+) bytes cmem\[0\]"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
}
_LINK_LINE = re.compile(r"used (\d+) registers.*?(\d+) stack, (\d+) bytes smem.*?(\d+) bytes lmem")


def parse_resource_report(log: str, kernel_name: str) -> dict:
    """Resource usage of ``kernel_name`` from nvJitLink's ``-verbose`` info log.

    Keys (ints, bytes unless noted): ``registers`` (per thread, count), ``barriers`` (count),
    ``shared`` (static shared memory declared by the kernel), ``shared_linked`` (shared memory
    the linker reserves for it, incl. the driver's per-CTA reserve on sm_90), ``stack`` (stack
    frame), ``spill_stores``, ``spill_loads``, ``spill_bytes`` (= spill_stores), ``local`` (lmem),
    ``cmem`` (constant bank 0).
    """
    report = {"registers": 0, "barriers": 0, "shared": 0, "cmem": 0, "stack": 0,
              "spill_stores": 0, "spill_loads": 0}
    current = None
    linker_fn = None
    for line in log.splitlines():
        m = _PTXAS_FN.search(line) or (_PROPS.search(line) if line.startswith("ptxas") else None)
        if m:
            current = m.group(1)
            continue
        if line.startswith("ptxas") and current == kernel_name:
            for key, rx in _FIELDS.items():
                fm = rx.search(line)
                if fm:
                    report[key] = int(fm.group(1))
            continue
        if not line.startswith("ptxas"):
            pm = _PROPS.search(line)
            if pm:
                linker_fn = pm.group(1)
                continue
            lm = _LINK_LINE.search(line)
            if lm and linker_fn == kernel_name:
                report["shared_linked"] = int(lm.group(3))
                report["local"] = int(lm.group(4))
                cm = _FIELDS["cmem"].search(line)
                if cm and not report["cmem"]:
                    report["cmem"] = int(cm.group(1))
                if not report["registers"]:
                    report["registers"] = int(lm.group(1))
    report["spill_bytes"] = report["spill_stores"]
    report.setdefault("shared_linked", report["shared"])
    report.setdefault("local", report["stack"])
    return report


@functools.lru_cache(maxsize=None)
def toolchain_hash() -> str:
    """Hash of LLVM's and nvJitLink's versions (and llvmlite's): a cache-key component."""
    try:
        jit_version = ".".join(map(str, _nvjitlink().version()))
    except Exception:
        jit_version = "unavailable"
    parts = [f"llvm={'.'.join(map(str, llvm.llvm_version_info))}",
             f"llvmlite={llvmlite.__version__}", f"nvjitlink={jit_version}",
             f"ptx={sorted(PTX_VERSION.items())}/{PTX_ONE_SIDED_FENCES}", f"rewrites={PTX_REWRITES}",
             f"codegen-O{CODEGEN_OPT_LEVEL}", f"options={PIPELINE_OPTIONS}"]
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:32]


def compile_llvm_to_cubin(llvm_ir: str, arch: str, kernel_name: str, *, opt_level: int = 3,
                          fp_fusion: bool = True, ptxas_options=()) -> tuple[str, bytes, dict]:
    """The whole pipeline; returns (ptx, cubin, metadata) with the resource report and timings."""
    t0 = time.perf_counter()
    ptx = llvm_to_ptx(llvm_ir, arch, opt_level=opt_level, fp_fusion=fp_fusion)
    t1 = time.perf_counter()
    if not re.search(rf"\.entry\s+{re.escape(kernel_name)}\s*\(", ptx):
        raise CodegenError(
            f"kernel {kernel_name!r} is not an entry point of the generated PTX (is the function "
            f"defined with the ptx_kernel calling convention?)")
    jit_opts = [] if fp_fusion else ["-Xptxas=--fmad=false"]
    cubin, log = ptx_to_cubin(ptx, arch, options=[*jit_opts, *ptxas_options])
    t2 = time.perf_counter()
    meta = parse_resource_report(log, kernel_name)
    meta.update(arch=arch, kernel_name=kernel_name, llvm_to_ptx_s=t1 - t0,
                ptx_to_cubin_s=t2 - t1, jit_log=log)
    return ptx, cubin, meta
