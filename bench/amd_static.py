"""Static quality of naiad's AMD code beside Triton's own AMD backend, in one run, one table.

    python bench/amd_static.py [--out bench/amd_static.md] [--arch gfx942]

No GPU is needed: both compilers stop at a linked hsaco. For each kernel the table shows VGPRs,
SGPRs, spills, LDS bytes (static + requested at launch) and machine instructions. The kernels are written once, below, as
Triton source text; that text is imported twice (as is for naiad, with its two import lines
rewritten for Triton), so both compilers see the same code, the same constexprs, the same
specialisation facts (16-byte-aligned pointers, sizes and leading strides divisible by 16, unit
strides equal to 1 -- what either JIT derives for contiguous fp16/fp32 buffers of such sizes) and
the same options (num_warps 4, num_stages 2).

Both sides are measured by the same code: the resource figures come from the hsaco's code-object
metadata note and the instruction count from the kernel's AMDGCN text, read by naiad_amd's own
readers (``naiad_amd.metadata``). Triton is optional: without it the Triton columns say so.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import os
import pathlib
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import same_source  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# Runnable from a checkout without installing naiad: core and every in-tree backend (the plugin
# manager loads them all).
for _p in [ROOT / "core", *sorted((ROOT / "backends").iterdir())]:
    if _p.is_dir() and str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

#: The kernels, once, as Triton code. ``load_kernels`` imports this text for either compiler.
KERNEL_SOURCE = '''\
import naiad as triton
import naiad.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


@triton.jit
def matmul_fp16_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_fp32_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, N_CTX, stride_m, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1) * N_CTX * stride_m
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * stride + offs, xc * rstd * w + b, mask=mask)
'''

#: Options given to both compilers (Triton's AMD defaults, stated so neither side drifts).
OPTIONS = {"num_warps": 4, "num_stages": 2}


def kernel_text(flavour: str) -> str:
    """KERNEL_SOURCE for ``flavour`` "naiad" (as written) or "triton" (imports rewritten)."""
    return same_source.kernel_text(KERNEL_SOURCE, flavour)


def load_kernels(flavour: str):
    """Import the kernel text as a module (a real file, so both JITs can read the source back)."""
    return same_source.load_kernels(KERNEL_SOURCE, flavour, "amd_static")


@dataclass(frozen=True)
class Case:
    """One kernel specialisation compiled by both sides.

    ``signature`` types the non-constexpr parameters; ``divisible`` lists those known to be
    multiples of 16 (pointers: 16-byte aligned); ``ones`` lists integer parameters equal to 1.
    """

    label: str
    kernel: str
    signature: dict
    constexprs: dict
    divisible: tuple = ()
    ones: tuple = ()
    #: the architectures the case is measured on (empty: all); fp8 formats are per arch
    archs: tuple = ()


def _matmul_case(element: str, out: str, bk: int, tile: int = 128, precision: str | None = None,
                 archs: tuple = ()) -> Case:
    """A row for tutorial 03's shape of matmul: ``element`` operands, fp32 accumulator, ``out``
    results, row-major tensors (inner strides 1, the rest divisible by 16 as Triton
    specialises them)."""
    ints = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
            "stride_cn")
    signature = {"a_ptr": f"*{element}", "b_ptr": f"*{element}", "c_ptr": f"*{out}",
                 **{name: "i32" for name in ints}}
    constexprs = {"BM": tile, "BN": tile, "BK": bk}
    name = f"matmul {element} (fp32 acc), {tile}x{tile}x{bk}"
    if precision is not None:
        constexprs["PRECISION"] = precision
        name = f"matmul {element} {precision}, {tile}x{tile}x{bk}"
    kernel = "matmul_fp32_kernel" if element == "fp32" else "matmul_fp16_kernel"
    return Case(name, kernel, signature, constexprs,
                divisible=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                           "stride_cm"),
                ones=("stride_ak", "stride_bn", "stride_cn"), archs=archs)


CASES = (
    Case("vector add fp32, BLOCK 1024", "add_kernel",
         {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
         {"BLOCK": 1024}, divisible=("x_ptr", "y_ptr", "out_ptr", "n")),
    Case("softmax fp32, 1 row/program, BLOCK 1024", "softmax_kernel",
         {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
          "n_cols": "i32"},
         {"BLOCK": 1024}, divisible=("out_ptr", "in_ptr", "in_stride", "out_stride", "n_cols")),
    _matmul_case("fp16", "fp16", 32),
    _matmul_case("bf16", "fp16", 32),
    _matmul_case("fp8e4b8", "fp16", 64, archs=("gfx942",)),
    _matmul_case("fp8e4nv", "fp16", 64, archs=("gfx950",)),
    _matmul_case("fp32", "fp32", 32, tile=64, precision="ieee"),
    Case("flash-attention fwd fp16, M128 N64 D64", "attn_fwd_kernel",
         {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
          "N_CTX": "i32", "stride_m": "i32"},
         {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64},
         divisible=("Q", "K", "V", "Out", "N_CTX", "stride_m")),
    Case("layer norm fp32, 1 row/program, BLOCK 1024", "layer_norm_kernel",
         {"x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "stride": "i32",
          "n_cols": "i32", "eps": "fp32"},
         {"BLOCK": 1024}, divisible=("x_ptr", "y_ptr", "w_ptr", "b_ptr", "stride", "n_cols")),
)

#: the architectures ``--arch all`` (the default) measures
DEFAULT_ARCHS = ("gfx942", "gfx90a", "gfx1100", "gfx950")


@dataclass
class Measured:
    """What one compiler made of one case: the resource report, or why there is none."""

    report: dict = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    skipped: bool = False  # ``error`` then says why the compiler was not run


def measure(hsaco: bytes, amdgcn: str, kernel_name: str, dynamic_lds: int) -> dict:
    """The resource report of ``kernel_name``: code-object metadata plus instructions counted in
    its AMDGCN text. Used for both compilers so the figures are comparable.

    Both compilers address LDS through an unsized ``external addrspace(3)`` array and ask for its
    size at launch, so the note's static size alone misses it: ``lds`` is static + the
    ``dynamic_lds`` bytes the compiler's launcher requests (``lds_static``/``lds_dynamic`` apart).
    """
    from naiad_amd import metadata as md

    rep = md.resource_report(md.kernel_metadata(hsaco, kernel_name))
    rep["lds_static"], rep["lds_dynamic"] = rep["lds"], int(dynamic_lds)
    rep["lds"] = rep["lds_static"] + rep["lds_dynamic"]
    rep["instructions"] = md.count_instructions(amdgcn, kernel_name)
    rep["matrix"] = len(re.findall(r"^\s*v_(?:mfma|wmma|smfmac)\w*", amdgcn, re.M))
    rep["mnemonics"] = sorted(set(re.findall(r"^\s*(v_(?:mfma|wmma)\w*)", amdgcn, re.M)))
    rep["lds_reads"] = sorted(set(re.findall(r"^\s*(ds_(?:read|load)\w*)", amdgcn, re.M)))
    rep["occupancy"] = md.asm_occupancy(amdgcn)
    rep["memory_ops"] = memory_ops(amdgcn)
    rep["hsaco_sha"] = hashlib.sha256(hsaco).hexdigest()
    rep["setprio"] = len(re.findall(r"^\s*s_setprio\b", amdgcn, re.M))
    return rep


def memory_ops(amdgcn: str) -> dict:
    """Global-memory instructions by kind and the branches around masked lanes
    (``s_cbranch_execz``) in an AMDGCN text (issue #11's buffer ops)."""
    count = lambda pattern: len(re.findall(pattern, amdgcn, re.M))  # noqa: E731
    return {"buffer": count(r"^\s*buffer_(?:load|store)_\w+"),
            "global": count(r"^\s*global_(?:load|store)_\w+"),
            "execz": count(r"^\s*s_cbranch_execz\b")}


def memory_table(measured: list) -> list[str]:
    """One line per kernel: buffer / global memory instructions and execz branches, both
    compilers (``measured``: (label, naiad Measured, Triton Measured))."""
    def cell(m):
        if m.error:
            return "-"
        r = m.report["memory_ops"]
        return f"{r['buffer']} / {r['global']} / {r['execz']}"

    lines = ["| kernel | naiad buffer / global / execz | Triton buffer / global / execz |",
             "|---|---|---|"]
    lines += [f"| {label} | {cell(ours)} | {cell(theirs)} |" for label, ours, theirs in measured]
    return lines


def one_line_error(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compile_naiad(mod, case: Case, arch: str, extra: dict | None = None) -> Measured:
    import naiad

    spec = {p: {"divisibility": 16} for p in case.divisible}
    spec.update({p: {"equal_to": 1} for p in case.ones})
    t0 = time.perf_counter()
    try:
        k = naiad.compile(getattr(mod, case.kernel), signature=dict(case.signature),
                          constexprs=dict(case.constexprs), target=f"amd:{arch}",
                          options={**OPTIONS, **(extra or {})}, specialization=spec)
        # naiad's launcher passes metadata["shared"] as the dynamic LDS size.
        rep = measure(k.asm["hsaco"], k.asm["amdgcn"], case.kernel, k.metadata.get("shared", 0))
    except Exception as exc:  # the bench reports a failing compiler, it does not stop
        return Measured(error=one_line_error(exc), seconds=time.perf_counter() - t0)
    return Measured(rep, seconds=time.perf_counter() - t0)


def compile_triton(mod, case: Case, arch: str, wave_size: int,
                   extra: dict | None = None) -> Measured:
    """Triton's AMD backend on the same case. Triton types every parameter: constexprs (and the
    parameters known to equal 1, which Triton's JIT turns into constexprs) get "constexpr"."""
    import triton
    from triton.backends.compiler import GPUTarget

    fn = getattr(mod, case.kernel)
    constexprs = dict(case.constexprs)
    constexprs.update({p: 1 for p in case.ones})
    signature = {p: ("constexpr" if p in constexprs else case.signature[p]) for p in fn.arg_names}
    attrs = {(fn.arg_names.index(p),): [["tt.divisibility", 16]] for p in case.divisible}
    t0 = time.perf_counter()
    try:
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs,
                                        attrs=attrs)
        k = triton.compile(src, target=GPUTarget("hip", arch, wave_size),
                           options={**OPTIONS, **(extra or {})})
        rep = measure(k.asm["hsaco"], k.asm["amdgcn"], k.metadata.name, k.metadata.shared)
    except Exception as exc:
        return Measured(error=one_line_error(exc), seconds=time.perf_counter() - t0)
    return Measured(rep, seconds=time.perf_counter() - t0)


#: matrix options compared on the fp16 matmul (MFMA archs): as in Triton, nonkdim picks the
#: instruction, kpack the width of each lane's LDS reads
OPTION_VARIANTS = ({}, {"matrix_instr_nonkdim": 16}, {"kpack": 2})


def option_table(nk, tk, arch: str, wave: int) -> list[str]:
    case = next((c for c in CASES if c.kernel == "matmul_fp16_kernel"), None)
    if case is None:
        return []
    lines = ["| fp16 matmul options | naiad matrix instr | Triton matrix instr | naiad LDS reads "
             "| Triton LDS reads |", "|---|---|---|---|---|"]
    for extra in OPTION_VARIANTS:
        cells = []
        for m in (compile_naiad(nk, case, arch, extra),
                  compile_triton(tk, case, arch, wave, extra) if tk else None):
            if m is None or m.error:
                cells.append(["-", "-"] if m is None else [f"error: {m.error}", "-"])
            else:
                cells.append([", ".join(m.report["mnemonics"]), ", ".join(m.report["lds_reads"])])
        label = ", ".join(f"{k}={v}" for k, v in extra.items()) or "defaults"
        lines.append("| " + " | ".join(_cell(c) for c in
                                       [label, cells[0][0], cells[1][0], cells[0][1], cells[1][1]])
                     + " |")
    return lines


#: pipeline depths compared on the fp16 matmul (issue #11: stream-pipeline)
STAGE_VARIANTS = (1, 2, 3)


def stages_table(nk, tk, arch: str, wave: int) -> list[str]:
    """The fp16 matmul at num_stages 1, 2, 3: LDS, instructions, VGPRs and MFMAs of each side,
    and whether naiad's code object changes with the depth (its stream pipeliner's LDS ring)."""
    case = next((c for c in CASES if c.kernel == "matmul_fp16_kernel"), None)
    if case is None:
        return []
    lines = ["| fp16 matmul num_stages | LDS naiad/Triton | instructions naiad/Triton | "
             "VGPR naiad/Triton | MFMA naiad/Triton | naiad hsaco |",
             "|---|---|---|---|---|---|"]
    seen: dict[str, int] = {}
    for stages in STAGE_VARIANTS:
        extra = {"num_stages": stages}
        ours = compile_naiad(nk, case, arch, extra)
        theirs = compile_triton(tk, case, arch, wave, extra) if tk else \
            Measured(error="Triton not installed", skipped=True)

        def pair(key):
            return "/".join("-" if m.error else str(m.report[key]) for m in (ours, theirs))

        digest = "-" if ours.error else ours.report["hsaco_sha"]
        same = [s for s, d in seen.items() if d == digest]
        seen[digest] = stages
        note = ours.error or (f"same as num_stages {same[0]}" if same else
                              f"distinct ({digest[:8]})")
        lines.append("| " + " | ".join(_cell(c) for c in [
            stages, pair("lds"), pair("instructions"), pair("vgpr"), pair("matrix"), note]) + " |")
    return lines


#: block ping-pong configurations (issue #11): gfx942, 8 warps, fp16 matmul tiles
PING_PONG_TILES = ((256, 256, 64, 2), (256, 256, 32, 2), (128, 128, 32, 2))


def ping_pong_table(nk, tk, arch: str, wave: int) -> list[str]:
    """8-warp fp16 matmuls: ``s_setprio`` count (block ping-pong), LDS, spills, instructions."""
    base = next((c for c in CASES if c.kernel == "matmul_fp16_kernel"), None)
    if base is None or arch not in ("gfx942", "gfx950"):
        return []
    lines = ["| fp16 matmul, 8 warps | s_setprio naiad/Triton | LDS naiad/Triton | "
             "spills naiad/Triton | VGPR naiad/Triton | instructions naiad/Triton |",
             "|---|---|---|---|---|---|"]
    for bm, bn, bk, stages in PING_PONG_TILES:
        case = Case(f"{bm}x{bn}x{bk}", base.kernel, base.signature,
                    {"BM": bm, "BN": bn, "BK": bk}, base.divisible, base.ones)
        extra = {"num_warps": 8, "num_stages": stages}
        ours = compile_naiad(nk, case, arch, extra)
        theirs = compile_triton(tk, case, arch, wave, extra) if tk else \
            Measured(error="Triton not installed", skipped=True)

        def pair(key):
            return "/".join((m.error[:60] if m.error else str(m.report[key]))
                            for m in (ours, theirs))

        lines.append("| " + " | ".join(_cell(c) for c in [
            f"{case.label}, num_stages {stages}", pair("setprio"), pair("lds"),
            pair("spill_registers"), pair("vgpr"), pair("instructions")]) + " |")
    return lines


COLUMNS = ("kernel", "naiad VGPR", "Triton VGPR", "naiad SGPR", "Triton SGPR",
           "spills naiad/Triton", "LDS bytes naiad/Triton", "instructions naiad/Triton",
           "MFMA/WMMA naiad/Triton")


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def table_row(label: str, ours: Measured, theirs: Measured) -> list[str]:
    """One row; a side that failed shows its error once (in its VGPR cell) and '-' elsewhere."""
    def get(m: Measured, key):
        return "-" if m.error else m.report[key]

    def pair(key):
        return f"{get(ours, key)}/{get(theirs, key)}"

    def first(m: Measured):
        if m.error:
            return f"{'skipped' if m.skipped else 'error'}: {m.error}"
        return m.report["vgpr"]

    return [label, first(ours), first(theirs),
            get(ours, "sgpr"), get(theirs, "sgpr"),
            pair("spill_registers"), pair("lds"), pair("instructions"), pair("matrix")]


def render_table(rows: list[list]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def detail_line(label: str, ours: Measured, theirs: Measured) -> str:
    """AGPRs, the LDS split, scratch, LLVM's occupancy estimate (waves per SIMD) and compile
    seconds, which the table leaves out."""
    def side(name, m: Measured):
        if m.error:
            return f"{name} {'skipped' if m.skipped else f'failed ({m.seconds:.2f} s)'}"
        r = m.report
        return (f"{name} AGPR {r['agpr']}, LDS {r['lds_static']} static + {r['lds_dynamic']} "
                f"dynamic B, scratch {r['scratch']} B, occupancy {r['occupancy']}, "
                f"{m.seconds:.2f} s")

    return f"- {label}: {side('naiad', ours)}; {side('Triton', theirs)}"


def triton_version() -> str | None:
    """Triton's version if it and its AMD backend import, else None."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception:
        return None
    return triton.__version__


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="also write the report (markdown) to this file")
    ap.add_argument("--arch", default=",".join(DEFAULT_ARCHS),
                    help=f"AMD architectures, comma-separated (default {','.join(DEFAULT_ARCHS)})")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    args = ap.parse_args(argv)
    wanted = {k.strip() for k in args.kernels.split(",") if k.strip()}

    from naiad.errors import TargetError
    from naiad_amd.archs import get_arch

    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    try:
        waves = {a: get_arch(a).wave_size for a in archs}
    except TargetError as exc:
        ap.error(str(exc))
    # Triton 3.9 warns on every compile unless told its (unchanged) FP-fusion default; a private
    # cache keeps the run from reusing, or filling, the user's ~/.triton.
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="amd_static_triton_"))

    tv = triton_version()
    nk = load_kernels("naiad")
    tk = load_kernels("triton") if tv else None
    skipped = Measured(error="Triton not installed", skipped=True)

    import llvmlite

    sections = []
    for arch in archs:
        rows, details, measured = [], [], []
        for case in CASES:
            if (wanted and case.kernel not in wanted) or (case.archs and arch not in case.archs):
                continue
            ours = compile_naiad(nk, case, arch)
            theirs = compile_triton(tk, case, arch, waves[arch]) if tk else skipped
            rows.append(table_row(case.label, ours, theirs))
            details.append(detail_line(case.label, ours, theirs))
            measured.append((case.label, ours, theirs))
        sections += [f"### {arch} (wave{waves[arch]})", "", render_table(rows), ""] + details + [""]
        sections += memory_table(measured) + [""]
        if waves[arch] == 64:
            sections += option_table(nk, tk, arch, waves[arch]) + [""]
            sections += stages_table(nk, tk, arch, waves[arch]) + [""]
            sections += ping_pong_table(nk, tk, arch, waves[arch]) + [""]

    header = [f"AMD static report, options {OPTIONS}; naiad via llvmlite {llvmlite.__version__}; "
              + (f"Triton {tv}" if tv else "Triton: not installed, its columns are skipped "
                 "(pip install triton to compare)"),
              ""]
    notes = ["", "VGPR is the code object's `.vgpr_count`: on gfx90a/gfx942 the unified count "
             "(architectural VGPRs + AGPRs). Spills are VGPR + SGPR spills. Instructions are "
             "the machine instructions in the kernel's AMDGCN text (no labels, directives or "
             "comments), counted by the same function for both."]
    report = "\n".join(header + sections + notes) + "\n"
    if not tv:
        print("Triton is not installed: skipping the Triton side (pip install triton to compare)",
              file=sys.stderr)
    print(report, end="")
    if args.out:
        pathlib.Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
