"""Cold compile of tutorial 03's fp16 matmul for sm_90: naiad vs Triton, same run, no GPU.

    python bench/nv_cold_compile.py /path/to/triton-tutorials [--repeat 3] [--stages]

Each measurement is a fresh Python process with empty caches (``NAIAD_CACHE_DIR`` and
``TRITON_CACHE_DIR`` set to new temporary folders). As in ``bench/gpu.py``'s cold-compile row,
a tiny kernel is compiled first in that process (imports and one-time set-up are paid there),
then the clock runs over the first compile of ``matmul_kernel`` (128x128x32, GROUP_SIZE_M 8, 4
warps, 4 stages, fp16 inputs, strides divisible by 16 / equal to 1 as the runtimes specialise
them). ``--stages`` adds naiad's per-stage split (frontend + generic passes and GPU passes +
LLVM IR from the ``naiad_stage_done`` hook's timestamps; LLVM O3 + PTX and nvJitLink from the
codegen's metadata). Medians over
``--repeat`` processes, alternating naiad and Triton; wall time and CPU time (the
process's and its children's: Triton runs ptxas as a subprocess, naiad nvJitLink in-process),
which is steadier on a shared machine.
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

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, {here!r})
from pathlib import Path
import triton_tutorials as tt
flavour, tutorials = {flavour!r}, Path({tutorials!r})
A = {{"divisibility": 16}}
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
ONES = ("stride_ak", "stride_bn", "stride_cn")
SIG = {{n: "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")}}
SIG.update({{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                               "stride_bn", "stride_cm", "stride_cn")}})
CX = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")
OPTS = dict(num_warps=4, num_stages=4)
stamps = []
if flavour == "naiad":
    import naiad
    from naiad.compat import triton_alias
    from naiad.plugins import hookimpl
    from naiad.plugins.manager import get_plugin_manager

    class Stamps:
        @hookimpl
        def naiad_stage_done(self, stage, ir, target, metadata):
            stamps.append((stage, time.perf_counter()))

    with triton_alias.aliased():
        mod = tt.load_tutorial(tutorials / "03-matrix-multiplication.py", "naiad",
                               {{"DEVICE": "cpu"}})
        tiny = tt.load_tutorial(tutorials / "01-vector-add.py", "naiad0", {{"DEVICE": "cpu"}})
    fn = mod.matmul_kernel
    while not hasattr(fn, "constexpr_params"):
        fn = fn.fn
    def compile_tiny():
        naiad.compile(tiny.add_kernel, {{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32",
                      "n_elements": "i32"}}, {{"BLOCK_SIZE": 1024}}, target="nvidia:sm_90")
    def compile_matmul():
        spec = {{n: A for n in ALIGNED}}
        spec.update({{n: {{"equal_to": 1}} for n in ONES}})
        k = naiad.compile(fn, SIG, CX, target="nvidia:sm_90", options=OPTS, specialization=spec)
        stamps.append(("LLVM O3 + PTX", k.metadata["llvm_to_ptx_s"]))
        stamps.append(("nvJitLink", k.metadata["ptx_to_cubin_s"]))
    compile_tiny()
    get_plugin_manager().register(Stamps(), name="cold-compile-stamps")
else:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    class Offline:
        """No GPU here: the tutorial asks the driver which target it runs on (is_cuda)."""
        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)
        def get_active_torch_device(self):
            return "cpu"

    triton.runtime.driver.set_active(Offline())
    mod = tt.load_tutorial(tutorials / "03-matrix-multiplication.py", "triton", {{"DEVICE": "cpu"}})
    fn = mod.matmul_kernel.fn
    tiny = tt.load_tutorial(tutorials / "01-vector-add.py", "triton0", {{"DEVICE": "cpu"}})
    target = GPUTarget("cuda", 90, 32)
    def compile_tiny():
        sig = {{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32",
               "BLOCK_SIZE": "constexpr"}}
        triton.compile(ASTSource(tiny.add_kernel, sig, {{"BLOCK_SIZE": 1024}}), target=target)
    def compile_matmul():
        names = list(fn.arg_names)
        sig = {{n: SIG.get(n, "constexpr") for n in names}}
        consts = dict(CX)
        consts.update({{n: 1 for n in ONES}})
        for n in ONES:
            sig[n] = "constexpr"
        attrs = {{(names.index(a),): [["tt.divisibility", 16]] for a in ALIGNED}}
        triton.compile(ASTSource(fn, sig, consts, attrs), target=target, options=OPTS)
    compile_tiny()
def cpu():   # this process and its finished children (Triton runs ptxas as a subprocess)
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
t0, c0 = time.perf_counter(), cpu()
compile_matmul()
t1, c1 = time.perf_counter(), cpu()
print(json.dumps({{"seconds": t1 - t0, "cpu": c1 - c0, "start": t0, "stamps": stamps}}))
'''


def run_child(flavour: str, tutorials: Path) -> dict:
    env = dict(os.environ)
    cache = tempfile.mkdtemp(prefix="cold-compile-")
    env["NAIAD_CACHE_DIR"] = os.path.join(cache, "naiad")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    code = CHILD.format(here=str(HERE), flavour=flavour, tutorials=str(tutorials))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{flavour}: {out.stderr[-1500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def stage_split(result: dict) -> dict:
    """Seconds per step: the stage reports' timestamps up to the LLVM IR (each step ends at its
    stage's report), then the codegen's own timings of LLVM and nvJitLink."""
    steps = {"tile": "frontend + generic passes", "llir": "GPU passes + LLVM IR"}
    out, last = {}, result["start"]
    for stage, when in result["stamps"]:
        if stage in steps:
            out[steps[stage]] = when - last
            last = when
        elif stage not in ("gpu", "ptx", "cubin"):
            out[stage] = when          # already a duration
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", action="store_true")
    args = ap.parse_args(argv)
    runs: dict = {"naiad": [], "triton": []}
    for _ in range(args.repeat):
        for flavour in runs:
            runs[flavour].append(run_child(flavour, args.tutorials))
    print("| cold compile, tutorial 03 fp16 matmul 128x128x32, sm_90 (s) | naiad | Triton | "
          "naiad / Triton |")
    print("|---|---|---|---|")
    for key, what in (("seconds", "wall"), ("cpu", "CPU time (process + children)")):
        naiad_s = statistics.median(r[key] for r in runs["naiad"])
        triton_s = statistics.median(r[key] for r in runs["triton"])
        print(f"| {what}, median of {args.repeat} fresh processes | {naiad_s:.3f} | "
              f"{triton_s:.3f} | {naiad_s / triton_s:.2f} |")
    if args.stages:
        splits = [stage_split(r) for r in runs["naiad"]]
        for step in splits[0]:
            print(f"naiad {step}: {statistics.median(s[step] for s in splits):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
