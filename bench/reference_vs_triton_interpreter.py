"""naiad's reference executor vs Triton's interpreter (TRITON_INTERPRET=1, CPU torch tensors),
in the same run, on three kernels:

* vector add, 2^20 fp32, BLOCK 1024 (1024 programs)
* softmax, 1024 x 1000 fp32, one row per program, BLOCK 1024
* matmul, 512^3 fp32, 64x64x32 tiles on an 8x8 grid

Both results are checked against numpy. Prints a plain table and the same table in markdown.
Triton and torch are optional peers (the project never depends on them): install them into the
venv for this script only (``.venv/bin/pip install torch==2.13.0 triton``); a missing peer, or a
missing naiad frontend, skips its column with a line saying why.

    PYTHONPATH=core:backends/reference .venv/bin/python bench/reference_vs_triton_interpreter.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"  # must be set before triton is imported

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for sub in ("core", "backends/reference"):
    path = os.path.join(ROOT, sub)
    if path not in sys.path:
        sys.path.insert(0, path)

VEC_N = 1 << 20
SM_ROWS, SM_COLS = 1024, 1000
MM = 512
TARGET_RATIO = 20.0


# ------------------------------------------------------------------------------------------------
# the kernels, once, as Triton code: imported as naiad code and rewritten for Triton
# ------------------------------------------------------------------------------------------------
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
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak
    b_ptrs = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK * s_ak
        b_ptrs += BK * s_bk
    c_ptrs = c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptrs, acc, mask=mask)
'''


def _kernels(flavour):
    sys.path.insert(0, HERE)
    import same_source

    mod = same_source.load_kernels(KERNEL_SOURCE, flavour, "interp_kernels")
    return mod.add_kernel, mod.softmax_kernel, mod.matmul_kernel


def naiad_kernels():
    return _kernels("naiad")


def triton_kernels():
    return _kernels("triton")


# ------------------------------------------------------------------------------------------------
# the three cases: inputs, launch arguments and the numpy answer
# ------------------------------------------------------------------------------------------------
def make_cases(rng):
    x = rng.standard_normal(VEC_N).astype(np.float32)
    y = rng.standard_normal(VEC_N).astype(np.float32)
    s = rng.standard_normal((SM_ROWS, SM_COLS)).astype(np.float32)
    e = np.exp(s.astype(np.float64) - s.max(axis=1, keepdims=True))
    a = rng.standard_normal((MM, MM)).astype(np.float32)
    b = rng.standard_normal((MM, MM)).astype(np.float32)
    return [
        {"name": "vector add 2^20 fp32 (BLOCK 1024)", "kernel": 0,
         "inputs": [x, y], "out_shape": (VEC_N,), "grid": (VEC_N // 1024,),
         "args": lambda i, o: [i[0], i[1], o, VEC_N], "meta": {"BLOCK": 1024},
         "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
         "want": x + y, "rtol": 1e-6, "atol": 1e-6},
        {"name": "softmax 1024x1000 fp32 (row/program)", "kernel": 1,
         "inputs": [s], "out_shape": (SM_ROWS, SM_COLS), "grid": (SM_ROWS,),
         "args": lambda i, o: [o, i[0], SM_COLS, SM_COLS, SM_COLS], "meta": {"BLOCK": 1024},
         "signature": {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                       "out_stride": "i32", "n_cols": "i32"},
         "want": e / e.sum(axis=1, keepdims=True), "rtol": 1e-5, "atol": 1e-6},
        {"name": "matmul 512^3 fp32 (64x64x32, 8x8 grid)", "kernel": 2,
         "inputs": [a, b], "out_shape": (MM, MM), "grid": (MM // 64, MM // 64),
         "args": lambda i, o: [i[0], i[1], o, MM, MM, MM, MM, 1, MM, 1, MM, 1],
         "meta": {"BM": 64, "BN": 64, "BK": 32},
         "signature": {n: t for n, t in zip(
             ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "s_am", "s_ak", "s_bk", "s_bn", "s_cm",
              "s_cn"], ["*fp32"] * 3 + ["i32"] * 9)},
         "want": a.astype(np.float64) @ b.astype(np.float64), "rtol": 1e-3, "atol": 1e-3},
    ]


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def check(name, who, got, case):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), case["want"],
                               rtol=case["rtol"], atol=case["atol"],
                               err_msg=f"{who} result of {name} differs from numpy")


# ------------------------------------------------------------------------------------------------
# runners
# ------------------------------------------------------------------------------------------------
def naiad_runner():
    """A function (case, repeats) -> ms, or a string saying why naiad cannot run."""
    try:
        from naiad.frontend import generate
        from naiad.passes import run_generic_pipeline
        from naiad_reference.runtime.executor import PreparedKernel
        kernels = naiad_kernels()
    except Exception as exc:  # the frontend is optional while it is being written
        return f"naiad frontend unavailable ({type(exc).__name__}: {exc})"

    def run(case, repeats):
        fn = kernels[case["kernel"]]
        module = generate(fn, case["signature"], case["meta"], {})
        module = run_generic_pipeline(module) or module
        pk = PreparedKernel(module, fn.__name__)
        out = np.full(case["out_shape"], np.nan, np.float32)
        args = case["args"](case["inputs"], out)
        pk(case["grid"], args)  # warm (and checked) run
        check(case["name"], "naiad", out, case)
        return timed(lambda: pk(case["grid"], args), repeats)

    return run


def triton_runner():
    try:
        import torch
    except ImportError:
        return "torch is not installed (.venv/bin/pip install torch==2.13.0)"
    try:
        import triton  # noqa: F401
        kernels = triton_kernels()
    except Exception as exc:
        return f"triton is not usable ({type(exc).__name__}: {exc}); .venv/bin/pip install triton"

    def run(case, repeats):
        fn = kernels[case["kernel"]]
        inputs = [torch.from_numpy(i.copy()) for i in case["inputs"]]
        out = torch.full(case["out_shape"], float("nan"), dtype=torch.float32)
        args = case["args"](inputs, out)
        fn[case["grid"]](*args, **case["meta"])
        check(case["name"], "triton-interpreter", out.numpy(), case)
        return timed(lambda: fn[case["grid"]](*args, **case["meta"]), repeats)

    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of naiad per kernel")
    ap.add_argument("--triton-repeats", type=int, default=2,
                    help="timed runs of Triton's interpreter per kernel (it is slow)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng()
    cases = make_cases(rng)
    naiad_run, triton_run = naiad_runner(), triton_runner()
    for label, runner in (("naiad", naiad_run), ("triton-interpreter", triton_run)):
        if isinstance(runner, str):
            print(f"skipping {label}: {runner}")
    rows = []
    for case in cases:
        n_ms = naiad_run(case, args.repeats) if callable(naiad_run) else None
        t_ms = triton_run(case, args.triton_repeats) if callable(triton_run) else None
        rows.append((case["name"], n_ms, t_ms))
    print_tables(rows)
    met = [t / n >= TARGET_RATIO for _, n, t in rows if n and t]
    if met:
        print(f"\ntarget (>= {TARGET_RATIO:.0f}x faster than Triton's interpreter): "
              f"{'met' if all(met) else 'NOT met'} on {sum(met)}/{len(met)} kernels")
    return 0


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_tables(rows):
    head = ("kernel", "naiad ms", "triton-interp ms", "ratio")
    body = [(name, _fmt(n, ".1f"), _fmt(t, ".1f"),
             _fmt(t / n if n and t else None, ".1f") + ("x" if n and t else ""))
            for name, n, t in rows]
    widths = [max(len(r[i]) for r in [head] + body) for i in range(4)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in
                     enumerate(zip(head, widths)))
    print(line)
    print("-" * len(line))
    for r in body:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * 3) + "|")
    for r in body:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    sys.exit(main())
