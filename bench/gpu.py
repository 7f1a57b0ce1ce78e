"""naiad vs Triton vs torch on an NVIDIA GPU, in one run, one table.

    python bench/gpu.py [--out results.md] [--quick]

The kernels live in bench/gpu_kernels.py and are compiled by both naiad and Triton from the same
source text. Every result is checked against torch before it is timed; timings are medians of
CUDA-event-timed repeats (triton.testing.do_bench) over the same buffers for all three.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import same_source  # noqa: E402


def load_kernels(flavour: str):
    """Import gpu_kernels.py as naiad code, or rewritten to import Triton."""
    return same_source.load_kernels((HERE / "gpu_kernels.py").read_text(), flavour, "gpu_kernels")


def median_ms(fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def check(name, got, want, rtol, atol):
    import torch

    if not torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol):
        err = (got.float() - want.float()).abs().max().item()
        raise SystemExit(f"{name}: result differs from torch (max abs err {err})")


def bench_add(nk, tk, quick):
    import torch

    n = 1 << (24 if quick else 28)
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    grid = ((n + 1023) // 1024,)
    rows = []
    for name, fn in [("naiad", lambda: nk.add_kernel[grid](x, y, out, n, BLOCK=1024)),
                     ("triton", lambda: tk.add_kernel[grid](x, y, out, n, BLOCK=1024)),
                     ("torch", lambda: torch.add(x, y, out=out))]:
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        check(f"add/{name}", out, x + y, 0, 0)
        ms = median_ms(fn)
        rows.append((name, ms, 3 * n * 4 / ms / 1e6))
    return f"vector add fp32 2^{(n).bit_length() - 1}", "GB/s", rows


def bench_softmax(nk, tk, quick):
    import torch

    m, n = (4096 if quick else 16384), 4096
    x = torch.randn(m, n, device="cuda")
    out = torch.full_like(x, float("nan"))
    want = torch.softmax(x, dim=1)
    rows = []
    for name, fn in [
        ("naiad", lambda: nk.softmax_kernel[(m,)](out, x, n, n, m, n, BLOCK=4096, num_warps=8)),
        ("triton", lambda: tk.softmax_kernel[(m,)](out, x, n, n, m, n, BLOCK=4096, num_warps=8)),
        ("torch", lambda: torch.softmax(x, dim=1))]:
        out.fill_(float("nan"))
        res = fn()
        torch.cuda.synchronize()
        check(f"softmax/{name}", res if name == "torch" else out, want, 1e-5, 1e-6)
        ms = median_ms(fn)
        rows.append((name, ms, 2 * m * n * 4 / ms / 1e6))
    return f"softmax fp32 {m}x{n}", "GB/s", rows


def bench_layer_norm(nk, tk, quick):
    import torch

    m, n = (1024 if quick else 4096), 8192
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.rand(n, device="cuda", dtype=torch.float16)
    b = torch.rand(n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty(m, device="cuda")
    rstd = torch.empty(m, device="cuda")
    want = torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)
    rows = []
    for name, fn in [
        ("naiad", lambda: nk.layer_norm_fwd_kernel[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5,
                                                         BLOCK=1024, num_warps=8)),
        ("triton", lambda: tk.layer_norm_fwd_kernel[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5,
                                                          BLOCK=1024, num_warps=8)),
        ("torch", lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5))]:
        y.fill_(float("nan"))
        res = fn()
        torch.cuda.synchronize()
        check(f"layer_norm/{name}", res if name == "torch" else y, want, 1e-2, 1e-2)
        ms = median_ms(fn)
        rows.append((name, ms, 2 * m * n * 2 / ms / 1e6))
    return f"layer-norm fwd fp16 {m}x{n}", "GB/s", rows


def bench_matmul(nk, tk, quick):
    import torch

    s = 1024 if quick else 2048
    a = torch.randn(s, s, device="cuda")
    b = torch.randn(s, s, device="cuda")
    c = torch.empty(s, s, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    want = a.double() @ b.double()
    bm, bn, bk = 64, 64, 32
    grid = ((s // bm) * (s // bn),)
    args = (a, b, c, s, s, s, s, 1, s, 1, s, 1)
    rows = []
    for name, fn in [
        ("naiad", lambda: nk.matmul_kernel[grid](*args, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                                 num_warps=4)),
        ("triton", lambda: tk.matmul_kernel[grid](*args, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                                  num_warps=4)),
        ("torch", lambda: torch.mm(a, b, out=c))]:
        c.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        check(f"matmul/{name}", c, want, 1e-3, 1e-2)
        ms = median_ms(fn)
        rows.append((name, ms, 2 * s ** 3 / ms / 1e9))
    return f"matmul fp32 FMA {s}^3", "TFLOP/s", rows


def bench_matmul_fp16(nk, tk, quick):
    """Tensor cores: naiad's wgmma from its cp.async ring (sm_90) against Triton's wgmma."""
    import torch

    s = 2048 if quick else 4096
    a = torch.randn(s, s, device="cuda", dtype=torch.float16)
    b = torch.randn(s, s, device="cuda", dtype=torch.float16)
    c = torch.empty(s, s, device="cuda", dtype=torch.float16)
    want = (a.float() @ b.float()).half()
    bm, bn, bk = 128, 128, 32
    grid = ((s // bm) * (s // bn),)
    args = (a, b, c, s, s, s, s, s, s)
    rows = []
    for name, fn in [
        ("naiad", lambda: nk.matmul_tc_kernel[grid](*args, BM=bm, BN=bn, BK=bk, num_warps=8)),
        ("triton", lambda: tk.matmul_tc_kernel[grid](*args, BM=bm, BN=bn, BK=bk, num_warps=8)),
        ("torch", lambda: torch.mm(a, b, out=c))]:
        c.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        check(f"matmul_fp16/{name}", c, want, 2e-2, 0.25)
        ms = median_ms(fn)
        rows.append((name, ms, 2 * s ** 3 / ms / 1e9))
    return f"matmul fp16 tensor cores {s}^3", "TFLOP/s", rows


def launch_overhead(nk, tk, batches=7, per_batch=2000, call=None):
    """Host time per warm launch of a tiny kernel, µs: median of ``batches`` batches, after one
    uncounted batch (the first batch in a process also pays one-time costs). ``call(kernel,
    x)`` is one launch (default ``kernel[(1,)](x, 1)``)."""
    import torch

    x = torch.empty(64, device="cuda", dtype=torch.int32)
    call = call or (lambda k, x: k[(1,)](x, 1))
    return [(name, per_launch_us(lambda: call(k, x), batches, per_batch))
            for name, k in [("naiad", nk.tiny_kernel), ("triton", tk.tiny_kernel)]]


def per_launch_us(launch, batches, per_batch) -> float:
    """Median over ``batches`` batches of ``per_batch`` calls of ``launch()`` (after one
    uncounted batch), µs per call; the device is synchronised before each batch and after."""
    import torch

    samples = []
    for i in range(batches + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_batch):
            launch()
        if i:
            samples.append((time.perf_counter() - t0) / per_batch * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def warmup_then_launch(kernel, x):
    """Tutorial 02's ``softmax()`` per call: ``warmup(...)`` for the compiled kernel,
    ``_init_handles()``, ``n_regs`` and ``shared``, then ``compiled[grid](...)``."""
    compiled = kernel.warmup(x, 1, grid=(1,), num_warps=8)
    compiled._init_handles()
    assert compiled.n_regs >= 0 and compiled.metadata.shared >= 0
    compiled[(1, 1, 1)](x, 1)


def launch_detail(nk, batches=7, per_batch=2000):
    """Where naiad's tiny-kernel launch time goes, in this process's state: {part: value}.

    Why: the launch-overhead row after the benchmarks has read up to 2.4 µs above the fresh
    process's. These parts tell host work from device or driver effects: the warm path without
    the driver call (``k[(0,)](x, 1)``: binding, key, lookup, grid; an empty grid launches
    nothing), the bound launch alone (stream, packing, cuda-python's cuLaunchKernel), the full
    launch in short batches (100 launches, which never fill the launch queue: when they cost less
    than long ones, the queue and not the host sets the pace), CUDA events around ``per_batch``
    launches (the device's span, never less than the host's pace), and Python's GC collections
    and tracked objects during the timed launches."""
    import gc

    import torch
    from naiad.runtime.launch import runtime_of
    from naiad.runtime.targets import current_state

    k = nk.tiny_kernel
    x = torch.empty(64, device="cuda", dtype=torch.int32)
    out = {}
    collections = [0, 0, 0]

    def count(phase, info):
        if phase == "start":
            collections[info["generation"]] += 1

    k[(1,)](x, 1)   # compiled and on the warm path before anything is counted
    k[(1,)](x, 1)
    gc.callbacks.append(count)
    try:
        out["full launch, 2000 a batch (µs)"] = per_launch_us(lambda: k[(1,)](x, 1), batches,
                                                             per_batch)
    finally:
        gc.callbacks.remove(count)
    out["GC collections gen0/1/2 in those launches"] = "/".join(map(str, collections))
    out["GC-tracked objects"] = len(gc.get_objects())
    out["full launch, 100 a batch (µs)"] = per_launch_us(lambda: k[(1,)](x, 1), 50, 100)
    out["warm path without the driver call, k[(0,)](x, 1) (µs)"] = per_launch_us(
        lambda: k[(0,)](x, 1), batches, per_batch)
    plan = runtime_of(k).plans[current_state()]
    go = next(iter(plan[1].values())).go
    ptr = x.data_ptr()
    out["bound launch alone, entry.go (µs)"] = per_launch_us(
        lambda: go((1, 1, 1), [ptr, 1], None), batches, per_batch)
    out["cuda-python cuLaunchKernel alone (µs)"] = per_launch_us(
        driver_launch_of(k, ptr), batches, per_batch)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(per_batch):
        k[(1,)](x, 1)
    end.record()
    torch.cuda.synchronize()
    out["events around 2000 launches, per launch (µs; at least the host's pace)"] = \
        start.elapsed_time(end) * 1e3 / per_batch
    return out


def driver_launch_of(k, ptr):
    """A call of cuda-python's ``cuLaunchKernel`` for naiad's tiny kernel with arguments
    ``(ptr, 1)`` packed once: the driver's and the bindings' share of a launch."""
    from naiad.runtime.launch import runtime_of
    from naiad.runtime.targets import current_state

    state = current_state()
    entry = next(iter(runtime_of(k).plans[state][1].values()))
    launcher, handle = state.launcher, entry.handle
    packer = handle.packers[tuple(entry.arg_types)]
    packer.struct.pack_into(packer.buf, 0, ptr, 1)
    stream = launcher.current_stream()
    cu_launch, function, params = launcher._launch_fn, handle.function, packer.params
    block = entry.num_warps * 32
    return lambda: cu_launch(function, 1, 1, 1, block, 1, 1, entry.shared, stream, params, 0)


def in_fresh_process(expression):
    """``expression`` (over ``g``, this module, and ``nk``/``tk``, its kernels) evaluated in a
    fresh process with no earlier benchmark state; its value must print as a literal."""
    import subprocess

    code = ("import sys; sys.path.insert(0, %r); import gpu as g; "
            "nk, tk = g.load_kernels('naiad'), g.load_kernels('triton'); print(repr(%s))"
            % (str(HERE), expression))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-500:])
    return eval(out.stdout.strip().splitlines()[-1], {})  # a literal printed by the child


def launch_overhead_fresh():
    """launch_overhead measured in a fresh process (no earlier benchmark state): {name: µs}."""
    return in_fresh_process("dict(g.launch_overhead(nk, tk))")


def cold_compile(flavour):
    """(vector add s, matmul s, error): first call of each through the JIT in a fresh process
    with empty caches -- compile, cache write, module load, launch -- by
    bench/cold_compile_local.py (the FMA matmul ``fma-64x64x32``, the vector add before it)."""
    import cold_compile_local

    try:
        r = cold_compile_local.run_child(flavour, None, "fma-64x64x32", launch=True)
    except RuntimeError as exc:
        return None, None, str(exc)
    return r["first"]["first compile (vector add)"], r["seconds"], ""


def _fmt(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import torch

    nk, tk = load_kernels("naiad"), load_kernels("triton")
    lines = [f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
             f"triton {__import__('triton').__version__}", "",
             "| benchmark | naiad | Triton | torch | naiad / Triton |", "|---|---|---|---|---|"]
    for bench in (bench_add, bench_softmax, bench_layer_norm, bench_matmul, bench_matmul_fp16):
        try:
            title, unit, rows = bench(nk, tk, args.quick)
        except Exception as exc:  # report and continue with the next benchmark
            lines.append(f"| {bench.__name__} | failed: {type(exc).__name__}: {exc} | | | |")
            continue
        val = {name: rate for name, _, rate in rows}
        lines.append(f"| {title} ({unit}) | {val['naiad']:.1f} | {val['triton']:.1f} | "
                     f"{val['torch']:.1f} | {val['naiad'] / val['triton']:.2f} |")
    for label, measure in (("after the benchmarks above, same process",
                            lambda: dict(launch_overhead(nk, tk))),
                           ("fresh process", launch_overhead_fresh),
                           ("as tutorial 02 calls it: warmup + compiled launch, same process",
                            lambda: dict(launch_overhead(nk, tk, call=warmup_then_launch)))):
        try:
            oh = measure()
            lines.append(f"| host launch overhead, tiny kernel, {label} (µs, lower is better) | "
                         f"{oh['naiad']:.1f} | {oh['triton']:.1f} | | "
                         f"{oh['naiad'] / oh['triton']:.2f} |")
        except Exception as exc:
            lines.append(f"| launch overhead, {label} | failed: {exc} | | | |")
    detail_rows = []
    try:
        after, fresh = launch_detail(nk), in_fresh_process("g.launch_detail(nk)")
        detail_rows = ["", "| naiad tiny-kernel launch, by part | after the benchmarks | "
                       "fresh process |", "|---|---|---|"]
        detail_rows += [f"| {part} | {_fmt(after[part])} | {_fmt(fresh.get(part))} |"
                        for part in after]
    except Exception as exc:
        detail_rows = ["", f"launch detail failed: {type(exc).__name__}: {exc}"]
    cold = {f: cold_compile(f) for f in ("naiad", "triton")}
    for i, what in enumerate(("vector add", "matmul")):
        n_s, t_s = cold["naiad"][i], cold["triton"][i]
        if n_s is None or t_s is None:
            lines.append(f"| cold compile {what} | failed | {cold['naiad'][2][-300:]} "
                         f"{cold['triton'][2][-300:]} | | |")
        else:
            lines.append(f"| cold compile + first launch, {what} (s, lower is better) | "
                         f"{n_s:.3f} | {t_s:.3f} | | {n_s / t_s:.2f} |")
    text = "\n".join(lines + detail_rows)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
