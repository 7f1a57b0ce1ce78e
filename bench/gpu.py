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
    rows = []
    for name, k in [("naiad", nk.tiny_kernel), ("triton", tk.tiny_kernel)]:
        samples = []
        for i in range(batches + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(per_batch):
                call(k, x)
            if i:
                samples.append((time.perf_counter() - t0) / per_batch * 1e6)
        torch.cuda.synchronize()
        rows.append((name, statistics.median(samples)))
    return rows


def warmup_then_launch(kernel, x):
    """Tutorial 02's ``softmax()`` per call: ``warmup(...)`` for the compiled kernel,
    ``_init_handles()``, ``n_regs`` and ``shared``, then ``compiled[grid](...)``."""
    compiled = kernel.warmup(x, 1, grid=(1,), num_warps=8)
    compiled._init_handles()
    assert compiled.n_regs >= 0 and compiled.metadata.shared >= 0
    compiled[(1, 1, 1)](x, 1)


def launch_overhead_fresh():
    """launch_overhead measured in a fresh process (no earlier benchmark state): {name: µs}."""
    import subprocess

    code = ("import sys; sys.path.insert(0, %r); import gpu as g; "
            "print(dict(g.launch_overhead(g.load_kernels('naiad'), g.load_kernels('triton'))))"
            % str(HERE))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-500:])
    return eval(out.stdout.strip().splitlines()[-1], {})  # a dict literal printed by the child


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
    cold = {f: cold_compile(f) for f in ("naiad", "triton")}
    for i, what in enumerate(("vector add", "matmul")):
        n_s, t_s = cold["naiad"][i], cold["triton"][i]
        if n_s is None or t_s is None:
            lines.append(f"| cold compile {what} | failed | {cold['naiad'][2][-300:]} "
                         f"{cold['triton'][2][-300:]} | | |")
        else:
            lines.append(f"| cold compile + first launch, {what} (s, lower is better) | "
                         f"{n_s:.3f} | {t_s:.3f} | | {n_s / t_s:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
