"""Static quality of naiad's NVIDIA matmul code beside Triton's, from Triton's own tutorials.

    python bench/nv_static.py ../shared/triton-tutorials [--out FILE] [--only 03,08] [--first N]

No GPU is needed: both compilers stop at a cubin for sm_90a. The kernels come from the tutorial
files themselves (read, never copied): each file's ``@triton.jit`` functions are executed twice,
once with ``triton`` resolved to naiad and once with Triton 3.9, and every autotune
configuration the file lists for CUDA is compiled by both with the same constexprs and the same
specialisation facts -- what either JIT derives for the tutorial's own tensors (16-byte-aligned
pointers, sizes and leading strides divisible by 16, unit strides equal to 1).

Both sides are measured by the same code: Triton's PTX is linked by the same nvJitLink call as
naiad's (``naiad_nvidia.toolchain.ptx_to_cubin``), and the registers, spill bytes and static
shared memory come from that info log; shared memory adds what each launcher requests
dynamically. PTX instruction counts (all, tensor-core ops, cp.async copies) come from the PTX
text. naiad's "path" column says how its dots were lowered and lists the performance remarks.
Triton is optional: without it the Triton columns say so.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import re
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in [ROOT / "core", *sorted((ROOT / "backends").iterdir())]:
    if _p.is_dir() and str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

#: Stand-ins for the tutorials' host-side queries, so their CUDA configurations are listed
#: without a GPU (132 SMs: an H100/H200).
HOST_STUBS = {"is_cuda": lambda: True, "is_hip": lambda: False, "num_sms": lambda: 132,
              "supports_tma": lambda: True, "is_hopper": lambda: True,
              "supports_ws": lambda: True}


# -- loading the tutorials' kernels ---------------------------------------------------------------
def _is_jit_def(node) -> bool:
    def name(d):
        d = d.func if isinstance(d, ast.Call) else d
        return ast.unparse(d)
    return isinstance(node, ast.FunctionDef) and any(name(d).endswith("jit")
                                                     for d in node.decorator_list)


def load_kernels(path: Path, flavour: str) -> types.ModuleType:
    """The tutorial's imports of triton and its function definitions, executed as a module with
    ``triton`` resolved to naiad (``flavour`` "naiad") or to Triton. Host helpers that query a
    device are replaced by :data:`HOST_STUBS`; other statements (demos, benchmarks) are skipped."""
    tree = ast.parse(path.read_text(), str(path))
    name = f"_nv_static_{flavour}_{path.stem.replace('-', '_')}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module   # inspect.getsource looks the module up
    module.__dict__.update(HOST_STUBS)

    def run(stmts):
        code = compile(ast.Module(body=stmts, type_ignores=[]), str(path), "exec")
        exec(code, module.__dict__)

    def body():
        for st in tree.body:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in st.names]
                src = st.module if isinstance(st, ast.ImportFrom) else names[0]
                if src and src.split(".")[0] == "triton":
                    try:
                        run([st])
                    except ImportError:  # e.g. triton.profiler: demos only
                        pass
            elif isinstance(st, ast.FunctionDef):
                if st.name in HOST_STUBS:
                    continue
                try:
                    run([st])
                except Exception as exc:  # noqa: BLE001 -- a kernel one side cannot define
                    if _is_jit_def(st):
                        module.__dict__.setdefault("_failed", {})[st.name] = exc

    if flavour == "naiad":
        from naiad.compat import triton_alias

        with triton_alias.aliased():
            body()
    else:
        body()
    return module


# -- the cases ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel of one tutorial with one dtype variant; its configs come from the file."""

    tutorial: str
    kernel: str
    variant: str
    signature: dict
    divisible: tuple
    ones: tuple
    extra_constexprs: dict = dataclasses.field(default_factory=dict)
    #: host TensorDescriptor parameters: name -> the constexprs naming its block dimensions
    #: (naiad compiles the companion with a tensor map each, Triton a ``tensordesc`` argument)
    descriptors: dict = dataclasses.field(default_factory=dict)


def _mm_signature(ab: str, c: str) -> dict:
    sig = {"a_ptr": ab, "b_ptr": ab, "c_ptr": c}
    sig.update({n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                   "stride_bn", "stride_cm", "stride_cn")})
    return sig


_MM_DIV = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
_MM_DIV_BT = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn", "stride_cm")
_MM_ONES = ("stride_ak", "stride_bn", "stride_cn")
_MM_ONES_BT = ("stride_ak", "stride_bk", "stride_cn")   # B passed as a transposed view

_TMA_SIG = {"M": "i32", "N": "i32", "K": "i32"}
_TMA_DESCS = {"a_desc": ("BLOCK_SIZE_M", "BLOCK_SIZE_K"), "b_desc": ("BLOCK_SIZE_N", "BLOCK_SIZE_K"),
              "c_desc": ("BLOCK_SIZE_M", "BLOCK_SIZE_N")}

CASES = [
    Case("03", "matmul_kernel", "fp16", _mm_signature("*fp16", "*fp16"), _MM_DIV, _MM_ONES,
         {"ACTIVATION": ""}),
    Case("03", "matmul_kernel", "fp8e5 (B^T)", _mm_signature("*fp8e5", "*fp16"), _MM_DIV_BT,
         _MM_ONES_BT, {"ACTIVATION": ""}),
    Case("08", "grouped_matmul_kernel", "fp16",
         {"group_a_ptrs": "*i64", "group_b_ptrs": "*i64", "group_c_ptrs": "*i64",
          "group_gemm_sizes": "*i32", "g_lds": "*i32", "group_size": "i32"},
         ("group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds"), ()),
    Case("09", "matmul_kernel", "fp16", _mm_signature("*fp16", "*fp16"), _MM_DIV, _MM_ONES),
    Case("09", "matmul_kernel_persistent", "fp16", _mm_signature("*fp16", "*fp16"), _MM_DIV,
         _MM_ONES, {"NUM_SMS": 132}),
    Case("09", "matmul_kernel_tma", "fp16 (TMA)", _TMA_SIG, ("M", "N", "K"), (),
         {"FP8_OUTPUT": False, "WARP_SPECIALIZE": False}, _TMA_DESCS),
    Case("09", "matmul_kernel_tma_persistent", "fp16 (TMA)", _TMA_SIG, ("M", "N", "K"), (),
         {"FP8_OUTPUT": False, "WARP_SPECIALIZE": False, "NUM_SMS": 132}, _TMA_DESCS),
]

FILES = {"03": "03-matrix-multiplication.py", "08": "08-grouped-gemm.py",
         "09": "09-persistent-matmul.py"}


def configs(module, kernel: str) -> list[tuple[dict, int, int]]:
    """(constexprs, num_warps, num_stages) of every autotune config of ``kernel``, deduplicated
    (a tutorial may list a configuration twice, e.g. NUM_SM variants that do not matter here)."""
    tuner = getattr(module, kernel)
    out = []
    for c in getattr(tuner, "configs", []):
        item = (dict(c.kwargs), int(c.num_warps), int(c.num_stages))
        if item not in out:
            out.append(item)
    return out


# -- measuring ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Measured:
    regs: int | None = None
    spills: int | None = None
    shared: int | None = None
    instrs: int | None = None
    mma: int | None = None
    copies: int | None = None
    path: str = ""
    error: str | None = None
    seconds: float = 0.0


def one_line_error(exc: BaseException, limit: int = 140) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ptx_counts(ptx: str) -> dict:
    """Instructions of the PTX text (statements, which may span lines, that are not
    directives), its tensor-core instructions (wgmma.mma_async, mma.sync) and cp.async copies."""
    text = re.sub(r"//[^\n]*", "", ptx)
    # debug-line directives (Triton's ``.loc``) end without a semicolon: drop them first
    text = re.sub(r"^\s*\.(loc|file)\b[^\n]*$", "", text, flags=re.M)
    stmts = []
    for st in text.split(";"):
        st = re.sub(r"^(\s*(\$\w+:|[{}]))*", "", st).strip()
        if st and not st.startswith("."):
            stmts.append(" ".join(st.split()))
    return {"instrs": len(stmts),
            "mma": sum(1 for st in stmts
                       if re.match(r"(@!?%\w+\s+)?(wgmma\.mma_async|mma\.sync)", st)),
            "copies": sum(1 for st in stmts if re.match(r"(@!?%\w+\s+)?cp\.async\.(ca|cg)", st))}


def link_report(ptx: str, kernel_name: str) -> dict:
    from naiad_nvidia.toolchain import parse_resource_report, ptx_to_cubin

    arch = re.search(r"^\.target\s+(\w+)", ptx, re.M).group(1)
    _, log = ptx_to_cubin(ptx, arch)
    return parse_resource_report(log, kernel_name)


#: naiad's GPU-IR ops of a tensor-core dot, most to least pipelined, and their names here
PATHS = (("nvidia.wgmma_ring", "wgmma ring"), ("nvidia.wgmma_staged", "wgmma staged"),
         ("nvidia.mma_ring", "mma.sync ring"), ("nvidia.mma_staged", "mma.sync staged"),
         ("nvidia.mma ", "mma.sync"))


def _path(k) -> str:
    gpu = k.asm.get("gpu", "")
    path = next((name for op, name in PATHS if op in gpu), "no MMA")
    remarks = k.metadata.get("remarks") or []
    return path + (f"; {len(remarks)} remark(s)" if remarks else "")


def _block(case: Case, name: str, constexprs: dict) -> tuple:
    if name == "c_desc" and constexprs.get("EPILOGUE_SUBTILE"):
        return constexprs["BLOCK_SIZE_M"], constexprs["BLOCK_SIZE_N"] // 2
    return tuple(constexprs[d] for d in case.descriptors[name])


def _descriptor_companion(fn, case: Case, cx: dict, signature: dict, spec: dict):
    """The kernel a launch with fp16 host TensorDescriptors (tensor maps built) compiles: each
    descriptor spread into base/shape/strides/map, as the launch path specialises them."""
    from naiad.runtime.descriptor_args import _companion_class

    for d in case.descriptors:
        signature[f"{d}__base"] = "*fp16"
        spec[f"{d}__base"] = {"divisibility": 16}
        for i in range(2):
            signature[f"{d}__shape_{i}"] = "i32"
            signature[f"{d}__stride_{i}"] = "i64"
            spec[f"{d}__shape_{i}"] = {"divisibility": 16}
        spec[f"{d}__stride_0"] = {"divisibility": 16}
        spec[f"{d}__stride_1"] = {"equal_to": 1}
        signature[f"{d}__tensor_map"] = "*u8"
        cx[f"{d}__block"] = _block(case, d, cx)
        cx[f"{d}__padding"] = "zero"
        cx[f"{d}__block_gcd"] = cx[f"{d}__block"]   # the tutorials' shapes: block multiples
    return _companion_class()(fn, {d: 2 for d in case.descriptors},
                              {d: True for d in case.descriptors})


def naiad_kernel(module, case: Case, constexprs: dict, warps: int, stages: int):
    """naiad's CompiledKernel of one config of ``case`` for sm_90 (raises what the compiler
    raises); bench/nv_tree_diff.py reads its cubin."""
    import naiad

    spec = {p: {"divisibility": 16} for p in case.divisible}
    spec.update({p: {"equal_to": 1} for p in case.ones})
    fn = getattr(module, case.kernel)
    fn = getattr(fn, "fn", fn)
    signature, cx = dict(case.signature), {**constexprs, **case.extra_constexprs}
    if case.descriptors:
        fn = _descriptor_companion(fn, case, cx, signature, spec)
    return naiad.compile(fn, signature=signature, target="nvidia:sm_90", constexprs=cx,
                         options={"num_warps": warps, "num_stages": stages},
                         specialization=spec)


def compile_naiad(module, case: Case, constexprs: dict, warps: int, stages: int) -> Measured:
    t0 = time.perf_counter()
    try:
        k = naiad_kernel(module, case, constexprs, warps, stages)
    except Exception as exc:  # noqa: BLE001 -- the table reports a failing compiler
        return Measured(error=one_line_error(exc), seconds=time.perf_counter() - t0)
    md = k.metadata
    return Measured(md.get("registers"), md.get("spill_bytes"), md.get("shared"),
                    path=_path(k), seconds=time.perf_counter() - t0, **ptx_counts(k.asm["ptx"]))


def triton_kernel(module, case: Case, constexprs: dict, warps: int, stages: int):
    """Triton's compiled kernel of the same config for ``GPUTarget("cuda", 90, 32)``. As its
    JIT does, integer parameters equal to 1 become constexprs; divisibility by 16 goes in as
    ``tt.divisibility`` attributes."""
    import triton
    from triton.backends.compiler import GPUTarget

    fn = getattr(module, case.kernel)
    fn = getattr(fn, "fn", fn)
    cx = {**constexprs, **case.extra_constexprs, **{p: 1 for p in case.ones}}
    cx = {k: v for k, v in cx.items() if k in fn.arg_names}
    sig = dict(case.signature)
    for d in case.descriptors:
        sig[d] = f"tensordesc<fp16{list(_block(case, d, cx))}>"
    signature = {p: ("constexpr" if p in cx else sig[p]) for p in fn.arg_names}
    attrs = {(fn.arg_names.index(p),): [["tt.divisibility", 16]] for p in case.divisible}
    src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=cx, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages})


def compile_triton(module, case: Case, constexprs: dict, warps: int, stages: int) -> Measured:
    """Triton on the same case (:func:`triton_kernel`), its PTX linked by naiad's nvJitLink."""
    t0 = time.perf_counter()
    try:
        k = triton_kernel(module, case, constexprs, warps, stages)
        ptx = k.asm["ptx"]
        rep = link_report(ptx, k.metadata.name)
    except Exception as exc:  # noqa: BLE001
        return Measured(error=one_line_error(exc), seconds=time.perf_counter() - t0)
    return Measured(rep.get("registers"), rep.get("spill_bytes"),
                    max(int(k.metadata.shared), rep.get("shared", 0)), path="",
                    seconds=time.perf_counter() - t0, **ptx_counts(ptx))


# -- the table ------------------------------------------------------------------------------------
def _pair(a, b) -> str:
    def f(v):
        return "-" if v is None else str(v)
    return f"{f(a)} / {f(b)}"


def row(case: Case, constexprs: dict, warps: int, stages: int, ours: Measured,
        theirs: Measured | None) -> str:
    cfg = "x".join(str(constexprs.get(k, "?")) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N",
                                                          "BLOCK_SIZE_K"))
    cfg += f" w{warps} s{stages}"
    theirs = theirs or Measured(error="Triton not installed")
    if ours.error:
        return (f"| {case.tutorial} {case.kernel} | {case.variant} | {cfg} | naiad failed: "
                f"{ours.error} |" + " |" * 6)
    t = theirs if not theirs.error else Measured()
    cells = [_pair(ours.regs, t.regs), _pair(ours.spills, t.spills),
             _pair(ours.shared, t.shared), _pair(ours.instrs, t.instrs),
             _pair(ours.mma, t.mma), _pair(ours.copies, t.copies), ours.path]
    note = f" (Triton: {theirs.error})" if theirs.error else ""
    return f"| {case.tutorial} {case.kernel} | {case.variant} | {cfg} | " + " | ".join(cells) \
        + note + " |"


HEADER = ("| kernel | dtype | BMxBNxBK warps stages | regs naiad / Triton | spill B | shared B | "
          "PTX instrs | MMA instrs | cp.async | naiad path |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tutorials", type=Path, help="folder with Triton's tutorial files")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    ap.add_argument("--only", default="", help="comma-separated tutorial numbers (03,08,09)")
    ap.add_argument("--first", type=int, default=0, help="at most N configs per case")
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args(argv)
    with_triton = not args.no_triton and triton_available()
    wanted = [s for s in args.only.split(",") if s]
    lines = [HEADER]
    loaded: dict = {}
    worst = {"spilling configs": 0, "configs": 0}
    for case in CASES:
        if wanted and case.tutorial not in wanted:
            continue
        path = args.tutorials / FILES[case.tutorial]
        if case.tutorial not in loaded:
            loaded[case.tutorial] = (load_kernels(path, "naiad"),
                                     load_kernels(path, "triton") if with_triton else None)
        ours_mod, their_mod = loaded[case.tutorial]
        cfgs = configs(ours_mod, case.kernel)
        if args.first:
            cfgs = cfgs[: args.first]
        for constexprs, warps, stages in cfgs:
            ours = compile_naiad(ours_mod, case, constexprs, warps, stages)
            theirs = (compile_triton(their_mod, case, constexprs, warps, stages)
                      if their_mod is not None else None)
            line = row(case, constexprs, warps, stages, ours, theirs)
            worst["configs"] += 1
            worst["spilling configs"] += bool(ours.spills)
            print(line, flush=True)
            lines.append(line)
    summary = (f"\nnaiad spills in {worst['spilling configs']} of {worst['configs']} "
               f"configurations (Triton {'compiled the same' if with_triton else 'not run'}).")
    print(summary)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n" + summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
