"""Cold compile of the tutorial matmul, naiad vs Triton, stage by stage: where the time goes.

    python bench/cold_compile_local.py [<triton-tutorials>] [--repeat 5] [--kernels t03-128x128x32,...]
                                       [--flavours naiad,triton] [--launch] [--profile naiad|triton]
                                       [--baseline <exported tree of another commit>]

Each measurement is a fresh Python process with empty caches (``NAIAD_CACHE_DIR`` and
``TRITON_CACHE_DIR`` point to new temporary folders), naiad and Triton alternating, after one
uncounted process per compiler that leaves Python's bytecode caches written, as an installed
package has them (``PYTHONDONTWRITEBYTECODE`` is dropped for the children). In that
process the *first call* costs are measured first (import of the compiler and its plugins, then
the first compile of bench/gpu_kernels.py's vector add: target set-up, nvJitLink / ptxas
start-up), then
the clock runs over the first compile of the matmul, split per stage. Without ``--launch`` both
compilers stop at a cubin for sm_90 (no GPU needed: naiad's ``naiad.compile``, Triton 3.x's
``triton.compile`` with ``GPUTarget("cuda", 90, 32)``). With ``--launch`` (on a GPU machine) the
kernels are called through each JIT with torch tensors instead, so the time is compile + cache
write + module load + first launch, as a user sees it; stages are then naiad's only.

Kernels (same source and constexprs for both compilers; strides specialised as their JITs do:
pointers, sizes and leading strides divisible by 16, unit strides equal to 1):

* ``t03-128x128x32`` / ``t03-128x256x64``: tutorial 03's ``matmul_kernel``, fp16, 4 warps /
  4 stages and 8 warps / 3 stages (its first two CUDA autotune configs);
* ``tc-128x128x32`` / ``tc-128x256x64``: bench/gpu_kernels.py's ``matmul_tc_kernel`` (fp16, the
  H200 tensor-core benchmark kernel), 8 warps;
* ``fma-64x64x32``: bench/gpu_kernels.py's ``matmul_kernel`` (fp32, ``input_precision="ieee"``,
  4 warps): the kernel of bench/gpu.py's "cold compile + first launch" rows, which come from
  this module (:func:`run_child` with ``launch=True``).

naiad's stages are timed by wrapping its stage functions in the child process (the product code
is not instrumented); a stage that a later version renames shows up as missing, not as zero.
CPU time counts the process and its finished children (Triton runs ptxas as a subprocess; naiad
runs nvJitLink in-process, possibly on a second thread). On a shared machine CPU time is the
steadier number; the H200 figures are wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: kernel name -> (source, constexprs, options)
KERNELS = {
    "t03-128x128x32": ("t03", dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32,
                                   GROUP_SIZE_M=8, ACTIVATION=""),
                       dict(num_warps=4, num_stages=4)),
    "t03-128x256x64": ("t03", dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                                   GROUP_SIZE_M=8, ACTIVATION=""),
                       dict(num_warps=8, num_stages=3)),
    "tc-128x128x32": ("tc", dict(BM=128, BN=128, BK=32), dict(num_warps=8)),
    "tc-128x256x64": ("tc", dict(BM=128, BN=256, BK=64), dict(num_warps=8)),
    "fma-64x64x32": ("fma", dict(BM=64, BN=64, BK=32, GROUP_M=8), dict(num_warps=4)),
}

CHILD = r'''
import json, os, sys, time
T_START = time.perf_counter()
sys.path.insert(0, {here!r})
from pathlib import Path
flavour, tutorials, kernel_name, launch = {flavour!r}, {tutorials!r}, {kernel!r}, {launch!r}
tutorials = Path(tutorials) if tutorials else None
source, CX, OPTS = {spec!r}
def cpu():   # this process (ns resolution) and its finished children (Triton's ptxas)
    t = os.times()
    return time.process_time() + t.children_user + t.children_system
stages = {{}}
cpus = {{}}
def timed(owner, attr, stage):
    """Wrap owner.attr so its wall time adds up under ``stage`` (only while ``stages`` is live)."""
    inner = getattr(owner, attr, None)
    if inner is None:
        stages.setdefault("(missing) " + stage, 0.0)
        return
    def wrapper(*a, **k):
        t0, c0 = time.perf_counter(), cpu()
        try:
            return inner(*a, **k)
        finally:
            stages[stage] = stages.get(stage, 0.0) + time.perf_counter() - t0
            cpus[stage] = cpus.get(stage, 0.0) + cpu() - c0
    setattr(owner, attr, wrapper)

if source in ("t03", "fma"):
    ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    ONES = ("stride_ak", "stride_bn", "stride_cn")
    INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
            "stride_cn")
else:
    ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    ONES = ()
    INTS = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
SIG = {{n: "*fp32" if source == "fma" else "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")}}
SIG.update({{n: "i32" for n in INTS}})

t0, c0 = time.perf_counter(), cpu()
if flavour == "naiad":
    import naiad
    from naiad.plugins.manager import get_plugin_manager
    get_plugin_manager()
else:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
first = {{"import": time.perf_counter() - t0, "import cpu": cpu() - c0}}

if flavour == "triton" and not launch:
    class Offline:
        """No GPU here: the tutorial asks the driver which target it runs on (is_cuda)."""
        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)
        def get_active_torch_device(self):
            return "cpu"
    triton.runtime.driver.set_active(Offline())
import gpu
gk = gpu.load_kernels(flavour)     # bench/gpu_kernels.py: the tiny vector add, FMA and tc matmuls
tiny_fn = gk.add_kernel
if source == "t03":                # tutorial 03's kernel, executed by the flavour's JIT
    import triton_tutorials as tt
    if flavour == "naiad":
        from naiad.compat import triton_alias
        with triton_alias.aliased():
            t03 = tt.load_tutorial(tutorials / "03-matrix-multiplication.py", "naiad",
                                   {{"DEVICE": "cpu"}})
    else:
        t03 = tt.load_tutorial(tutorials / "03-matrix-multiplication.py", "triton",
                               {{"DEVICE": "cpu"}})
    fn = t03.matmul_kernel
else:
    fn = {{"tc": gk.matmul_tc_kernel, "fma": gk.matmul_kernel}}[source]
if flavour == "naiad":
    while not hasattr(fn, "constexpr_params"):   # the JITFunction under the autotuner
        fn = fn.fn
    def compile_tiny():
        naiad.compile(tiny_fn, {{"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                      "n": "i32"}}, {{"BLOCK": 1024}}, target="nvidia:sm_90")
    def compile_matmul():
        spec = {{n: {{"divisibility": 16}} for n in ALIGNED}}
        spec.update({{n: {{"equal_to": 1}} for n in ONES}})
        return naiad.compile(fn, SIG, CX, target="nvidia:sm_90", options=OPTS,
                             specialization=spec)
    def instrument():
        import llvmlite.binding as llvm
        import naiad.frontend, naiad.passes, naiad.gpu.lower as lower, naiad.compiler as drv
        from naiad_nvidia import toolchain
        timed(naiad.frontend, "generate", "frontend (AST -> tile IR)")
        timed(naiad.passes, "run_generic_pipeline", "tile passes")
        timed(lower, "run_gpu_passes", "GPU passes")
        timed(lower, "emit_module", "LLVM IR build (llvmlite.ir)")
        timed(lower, "check_llvm", "core check of the LLVM IR (parse + verify)")
        timed(lower, "lower_to_llvm", "_lower_to_llvm")
        timed(toolchain, "llvm_to_ptx", "_llvm_to_ptx")
        timed(llvm.ModulePassManager, "run", "LLVM O3 (new pass manager)")
        timed(llvm.TargetMachine, "emit_assembly", "NVPTX codegen (PTX emission)")
        timed(toolchain, "ptx_to_cubin", "ptxas via nvJitLink")
        timed(naiad, "compile", "_total")            # naiad.compile (ahead of time)
        timed(drv, "compile", "_total")              # what the JIT calls
    def derive():
      for s in (stages, cpus):
        s["LLVM IR print + attributes"] = (s.pop("_lower_to_llvm") - s["GPU passes"]
            - s["LLVM IR build (llvmlite.ir)"] - s.get("core check of the LLVM IR (parse + verify)", 0))
        s["backend parse + verify + PTX fix-ups"] = (s.pop("_llvm_to_ptx")
            - s["LLVM O3 (new pass manager)"] - s["NVPTX codegen (PTX emission)"])
        total = s.pop("_total")
        s["driver, remarks, reports"] = total - sum(s.values())
        if launch:
            s["JIT: key, cache write, load, first launch"] = (
                (seconds if s is stages else cpu_s) - total)
else:
    from triton.runtime.jit import JITFunction
    while not isinstance(fn, JITFunction):   # the tutorial's autotuner wraps it
        fn = fn.fn
    target = GPUTarget("cuda", 90, 32)
    def compile_tiny():
        sig = {{"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
               "BLOCK": "constexpr"}}
        triton.compile(ASTSource(tiny_fn, sig, {{"BLOCK": 1024}}), target=target)
    def compile_matmul():
        names = list(fn.arg_names)
        sig = {{n: SIG.get(n, "constexpr") for n in names}}
        consts = dict(CX)
        consts.update({{n: 1 for n in ONES}})
        attrs = {{(names.index(a),): [["tt.divisibility", 16]] for a in ALIGNED}}
        return triton.compile(ASTSource(fn, sig, consts, attrs), target=target, options=OPTS)
    def instrument():
        from triton.backends.nvidia.compiler import CUDABackend
        import triton.compiler.compiler as tc
        names = {{"ttir": "frontend + TTIR passes", "ttgir": "TTGIR passes",
                 "llir": "LLVM IR + LLVM O3", "ptx": "NVPTX codegen (PTX emission)",
                 "cubin": "ptxas (subprocess)"}}
        add = CUDABackend.add_stages
        def add_stages(self, st, options, language):
            add(self, st, options, language)
            for key in list(st):
                holder = type("H", (), {{"f": staticmethod(st[key])}})
                timed(holder, "f", names.get(key, key))
                st[key] = holder.f
        CUDABackend.add_stages = add_stages
        timed(ASTSource, "make_ir", "frontend (AST -> TTIR)")
        timed(triton, "compile", "_total")
    def derive():
      for s in (stages, cpus):
        total = s.pop("_total")
        if "frontend (AST -> TTIR)" in s:
            s["TTIR passes"] = s.pop("frontend + TTIR passes", 0.0)
        s["driver, cache, metadata"] = total - sum(s.values())

if launch:
    import torch
    def run_tiny():
        x = torch.rand(4096, device="cuda")
        tiny_fn[(4,)](x, x, x, 4096, BLOCK=1024)
        torch.cuda.synchronize()
    a = torch.randn(512, 512, device="cuda",
                    dtype=torch.float32 if source == "fma" else torch.float16)
    c = torch.empty_like(a)
    bm, bn = [v for k, v in CX.items() if k.startswith(("BM", "BN", "BLOCK_SIZE_M", "BLOCK_SIZE_N"))]
    grid = ((512 // bm) * (512 // bn),)
    def run_matmul():    # fn: the JIT function itself (tutorial 03's autotuner unwrapped)
        if source in ("t03", "fma"):
            fn[grid](a, a, c, 512, 512, 512, 512, 1, 512, 1, 512, 1, **CX, **OPTS)
        else:
            fn[grid](a, a, c, 512, 512, 512, 512, 512, 512, **CX, **OPTS)
        torch.cuda.synchronize()
    compile_tiny, compile_matmul = run_tiny, run_matmul
    if flavour == "triton":
        instrument = lambda: None
        derive = lambda: None

t0, c0 = time.perf_counter(), cpu()
compile_tiny()
first["first compile (vector add)"] = time.perf_counter() - t0
first["first compile cpu"] = cpu() - c0
instrument()
t0, c0 = time.perf_counter(), cpu()
k = compile_matmul()
seconds, cpu_s = time.perf_counter() - t0, cpu() - c0
derive()
print(json.dumps({{"seconds": seconds, "cpu": cpu_s, "stages": stages, "cpus": cpus, "first": first}}))
'''


def baseline_path(tree: Path) -> str:
    """``PYTHONPATH`` that makes a child import naiad and its backends from ``tree`` (an export
    of another commit, e.g. ``git archive <base> | tar -x -C tree``) instead of this checkout."""
    return os.pathsep.join(str(tree / p) for p in ("core", "backends/nvidia", "backends/amd",
                                                   "backends/reference"))


def run_child(flavour: str, tutorials: Path | None, kernel: str, launch: bool,
              profile: bool = False, baseline: Path | None = None) -> dict:
    """One fresh process with empty caches: its first-call costs, the matmul's seconds and CPU
    seconds, and per-stage splits (``tutorials`` is needed for the ``t03-*`` kernels only;
    ``baseline``: naiad imported from that exported tree)."""
    if KERNELS[kernel][0] == "t03" and tutorials is None:
        raise ValueError(f"{kernel} is tutorial 03's kernel: pass the tutorials folder")
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = baseline_path(baseline)
    cache = tempfile.mkdtemp(prefix="cold-compile-")
    env["NAIAD_CACHE_DIR"] = os.path.join(cache, "naiad")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    # Bytecode as after an installation: a machine with PYTHONDONTWRITEBYTECODE=1 would make
    # every fresh process compile naiad's sources (Triton's site-packages have their .pyc).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = CHILD.format(here=str(HERE), flavour=flavour, tutorials=tutorials and str(tutorials),
                        kernel=kernel,
                        launch=launch, spec=KERNELS[kernel])
    cmd = [sys.executable, "-c", code]
    if profile:
        out_file = os.path.join(cache, f"{flavour}.prof")
        code = code.replace("k = compile_matmul()",
                            "import cProfile; _p = cProfile.Profile(); _p.enable(); "
                            "k = compile_matmul(); _p.disable(); "
                            f"_p.dump_stats({out_file!r})")
        cmd = [sys.executable, "-c", code]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{flavour} {kernel}: {out.stderr[-2500:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if profile:
        import pstats
        pstats.Stats(out_file).sort_stats("cumulative").print_stats(40)
    return result


def median(values):
    values = list(values)
    return statistics.median(values) if values else float("nan")


def table(kernel: str, runs: dict, repeat: int) -> list[str]:
    lines = [f"**{kernel}** (median of {repeat} fresh processes, seconds)", "",
             "| | naiad | Triton | naiad / Triton |", "|---|---|---|---|"]
    some = next(iter(runs.values()))[0]

    def row(what, pick, bold=""):
        n = median(pick(r) for r in runs.get("naiad", ()))
        t = median(pick(r) for r in runs.get("triton", ()))
        lines.append(f"| {what} | {n:.3f} | {t:.3f} | {bold}{n / t:.2f}{bold} |")

    row("matmul cold compile, wall", lambda r: r["seconds"], "**")
    row("matmul cold compile, CPU (process + children)", lambda r: r["cpu"], "**")
    if "baseline" in runs:
        b = median(r["cpu"] for r in runs["baseline"])
        t = median(r["cpu"] for r in runs.get("triton", ()))
        lines.append(f"| baseline naiad, CPU (process + children) | {b:.3f} | {t:.3f} | "
                     f"{b / t:.2f} |")
    for key in some["first"]:
        row(key, lambda r: r["first"][key])
    for flavour in runs:
        keys = list(runs[flavour][0]["stages"])
        if not keys:
            continue
        lines += ["", f"| {flavour} stage | wall s | CPU s |", "|---|---|---|"]
        for key in keys:
            wall = median(r["stages"].get(key, 0) for r in runs[flavour])
            cpu = median(r["cpus"].get(key, 0) for r in runs[flavour])
            lines.append(f"| {key} | {wall:.3f} | {cpu:.3f} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials", type=Path, nargs="?",
                    help="Triton's tutorials folder (needed for the t03-* kernels)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kernels", default="t03-128x128x32,t03-128x256x64",
                    help=f"comma-separated, of {', '.join(KERNELS)}")
    ap.add_argument("--launch", action="store_true",
                    help="compile through each JIT and launch once on the GPU (needs one)")
    ap.add_argument("--profile", choices=("naiad", "triton"),
                    help="print a cProfile of one matmul compile and stop")
    ap.add_argument("--flavours", default="naiad,triton",
                    help="naiad and/or triton (the ratio needs both)")
    ap.add_argument("--baseline", type=Path,
                    help="an exported tree of another commit: its naiad runs too, alternating "
                         "with this checkout's (before/after in one run)")
    args = ap.parse_args(argv)
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    if args.profile:
        run_child(args.profile, args.tutorials, kernels[0], args.launch, profile=True)
        return 0
    flavours = args.flavours.split(",") + (["baseline"] if args.baseline else [])

    def child(flavour, kernel):
        if flavour == "baseline":
            return run_child("naiad", args.tutorials, kernel, args.launch, baseline=args.baseline)
        return run_child(flavour, args.tutorials, kernel, args.launch)

    for flavour in flavours:   # uncounted: writes the bytecode caches
        child(flavour, kernels[0])
    for kernel in kernels:
        runs: dict = {f: [] for f in flavours}
        for _ in range(args.repeat):
            for flavour in runs:
                runs[flavour].append(child(flavour, kernel))
        print("\n".join(table(kernel, runs, args.repeat)) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
