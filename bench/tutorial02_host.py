"""Host time of tutorial 02's ``softmax()`` per call, step by step, for naiad and Triton.

    python bench/tutorial02_host.py /path/to/triton-tutorials [--driver fake] [-n 2000]

Why: the tutorial's ``softmax()`` wrapper calls ``softmax_kernel.warmup(...)``,
``kernel._init_handles()``, ``kernel.n_regs``, ``kernel.metadata.shared`` and ``is_hip()``
before every ``kernel[(programs, 1, 1)](...)``, so its measured time on the H200 is host time
(the kernel is ~28 us). This script loads the unmodified tutorial file (as
bench/triton_tutorials.py does: once with ``triton`` resolved to naiad, once with real Triton),
then times

* the whole ``softmax(x)`` per call (host clock; a small ``x`` so the GPU never queues up), and
* the same body step by step (``perf_counter_ns`` around each step, the clock's own cost taken
  off), so a real driver shows where the time goes.

``--driver fake`` (no GPU): the stand-in libcuda of bench/launch_overhead.py, the compiler
replaced by a stand-in (metadata: 54 registers, 49,184 B shared, as the real kernel), torch CPU
tensors posing as CUDA ones; Triton is skipped (it cannot launch without a GPU).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

STEPS = ("next_power_of_2", "torch.empty_like", "warmup()", "_init_handles()", "n_regs",
         "metadata.shared", "is_hip()", "kernel[grid](...)")


def _fake_setup():
    """No GPU: stand-in libcuda, stand-in compiler, torch posing as CUDA (launch_overhead's)."""
    import launch_overhead as lo

    if not lo.load_fake_libcuda():
        raise SystemExit("--driver fake needs a C compiler")
    import naiad
    import naiad.compiler

    def compile_like_softmax(fn, signature, constexprs=None, target=None, options=None,
                             specialization=None):
        kernel = lo.fake_compile(fn, signature, constexprs, target, options, specialization)
        kernel.metadata.update(registers=54, shared=49184)
        return kernel

    naiad.compiler.compile = compile_like_softmax
    naiad.set_target(lo.TARGET)
    lo.pose_torch_as_cuda()


def step_times(mod, x, n: int) -> list[float]:
    """Microseconds per call of each step of ``mod.softmax``'s body (the NVIDIA branch)."""
    torch, triton = mod.torch, mod.triton
    kernel_fn = mod.softmax_kernel
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in range(1000):
        clock()
    tick = (clock() - t0) / 1000          # the cost of one clock read, taken off each step
    sums = [0] * len(STEPS)
    for i in range(n + 50):
        if i == 50:
            sums = [0] * len(STEPS)       # the first 50 calls warm up
        n_rows, n_cols = x.shape
        a = clock()
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        b = clock()
        y = torch.empty_like(x)
        c = clock()
        kernel = kernel_fn.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                  BLOCK_SIZE=BLOCK_SIZE, num_stages=4, num_warps=8, grid=(1,))
        d = clock()
        kernel._init_handles()
        e = clock()
        n_regs = kernel.n_regs
        f = clock()
        size_smem = kernel.metadata.shared
        g = clock()
        mod.is_hip()
        h = clock()
        occupancy = mod.NUM_REGS // (n_regs * mod.WARP_SIZE * 8)
        occupancy = min(occupancy, mod.SIZE_SMEM // size_smem)
        num_programs = min(mod.NUM_SM * occupancy, n_rows)
        k = clock()
        kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE,
                                     4)
        m = clock()
        for j, dt in enumerate((b - a, c - b, d - c, e - d, f - e, g - f, h - g, m - k)):
            sums[j] += dt - tick
    return [s / n / 1e3 for s in sums]


def whole_call(mod, x, n: int, sync) -> float:
    """Microseconds of host time per ``mod.softmax(x)`` (best of 5 batches of ``n``)."""
    for _ in range(20):
        mod.softmax(x)
    best = float("inf")
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            mod.softmax(x)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    sync()
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", help="folder holding Triton's tutorial files")
    ap.add_argument("--driver", choices=("real", "fake"), default="real")
    ap.add_argument("-n", type=int, default=2000, help="calls per batch")
    ap.add_argument("--shape", default="256x1024", help="rows x cols of x (small: host-bound)")
    ap.add_argument("--profile", action="store_true", help="cProfile naiad's softmax() too")
    args = ap.parse_args(argv)
    os.environ.setdefault("NAIAD_CACHE_DIR", tempfile.mkdtemp(prefix="naiad-t02host-"))
    if args.driver == "fake":
        _fake_setup()
    import torch

    import triton_tutorials as tt

    path = next(pathlib.Path(args.tutorials).glob("02-*.py"))
    mods = tt.load_both(path, with_triton=args.driver == "real")
    rows, cols = (int(v) for v in args.shape.split("x"))
    device = "cuda"
    if args.driver == "fake":
        device = "cpu"
        for name, value in (("NUM_REGS", 65536), ("WARP_SIZE", 32), ("NUM_SM", 132)):
            if not getattr(mods["naiad"], name):      # the stand-in driver reports 0
                setattr(mods["naiad"], name, value)
    sync = torch.cuda.synchronize if args.driver == "real" else (lambda: None)
    x = torch.randn(rows, cols, device=device)
    print(f"tutorial 02 softmax() host time per call, x {rows}x{cols} fp32, driver {args.driver}")
    results = {}
    for name in ("naiad", "triton"):
        mod = mods.get(name)
        if mod is None or isinstance(mod, BaseException):
            if mod is not None:
                print(f"{name}: not loaded: {type(mod).__name__}: {mod}")
            continue
        if args.driver == "real":      # a correct result first: a fast wrong path is no result
            got = mod.softmax(x)
            ok = torch.allclose(got, torch.softmax(x, dim=1), atol=1e-5, rtol=1e-4)
            print(f"{name}: result {'matches' if ok else 'DIFFERS FROM'} torch.softmax")
        results[name] = (whole_call(mod, x, args.n, sync), step_times(mod, x, args.n))
        sync()
    print()
    names = list(results)
    print("| step | " + " | ".join(f"{n} µs" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for i, step in enumerate(STEPS):
        print(f"| {step} | " + " | ".join(f"{results[n][1][i]:.2f}" for n in names) + " |")
    print("| sum of steps | " + " | ".join(f"{sum(results[n][1]):.2f}" for n in names) + " |")
    print("| **whole softmax(x)** | " + " | ".join(f"**{results[n][0]:.2f}**" for n in names)
          + " |")
    if args.profile and "naiad" in mods and not isinstance(mods["naiad"], BaseException):
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.n):
            mods["naiad"].softmax(x)
        prof.disable()
        sync()
        pstats.Stats(prof).sort_stats("tottime").print_stats(22)
    return 0


if __name__ == "__main__":
    sys.exit(main())
