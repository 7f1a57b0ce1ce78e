"""``naiad demo``: the tutorial kernels on the default target, checked against numpy.

Each kernel runs on fresh random inputs with its output poisoned first (NaN or a sentinel), is
compared with numpy, then timed with :func:`naiad.testing.do_bench`. The table shows the target,
the kernel, the largest error, the status and the median time in ms. Exit status 1 when any
kernel fails, so CI notices.
"""
from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

import naiad
import naiad.language as tl


@naiad.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@naiad.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step):
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@naiad.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
           stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_in_group = GROUP_M * num_pid_n
    group_id = pid // num_in_group
    first_m = group_id * GROUP_M
    group_size = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % num_in_group) % group_size
    pid_n = (pid % num_in_group) // group_size
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@naiad.jit
def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)


@naiad.jit
def histogram(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


# -- the cases ---------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    size: str
    setup: Callable   # rng -> (launch: () -> output, expected, poisoned output, tolerance)


def _device(a):
    return naiad.to_device(a)


def _host(a):
    return a if isinstance(a, np.ndarray) else a.numpy()


def case_vector_add(rng, quick):
    n = (1 << 16) if quick else (1 << 20)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy, out = _device(x), _device(y), _device(np.full(n, np.nan, np.float32))
    block = 1024

    def launch():
        vector_add[(naiad.cdiv(n, block),)](dx, dy, out, n, BLOCK=block)
        return out
    return launch, x + y, 1e-6, f"{n}"


def case_softmax(rng, quick):
    rows, cols = (128, 250) if quick else (1024, 1000)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = _device(np.full((rows, cols), np.nan, np.float32))
    dx = _device(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    block = naiad.next_power_of_2(cols)

    def launch():
        softmax[(rows,)](out, dx, cols, cols, rows, cols, BLOCK=block)
        return out
    return launch, want, 1e-5, f"{rows}x{cols}"


def case_matmul(rng, quick):
    m, n, k = (128, 128, 128) if quick else (256, 256, 256)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    da, db = _device(a), _device(b)
    c = _device(np.full((m, n), np.nan, np.float32))
    bm, bn, bk = 64, 64, 32

    def launch():
        grid = (naiad.cdiv(m, bm) * naiad.cdiv(n, bn),)
        matmul[grid](da, db, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                     GROUP_M=8)
        return c
    want = a.astype(np.float64) @ b.astype(np.float64)
    # tl.dot on f32 defaults to tf32 (as in Triton): tensor cores round inputs to 10 mantissa
    # bits, so allow ~2^-10 relative error per product, growing with sqrt(k) (real bugs are O(1)).
    return launch, want, 3e-3 * np.sqrt(k), f"{m}x{n}x{k}"


def case_layer_norm(rng, quick):
    rows, cols = (64, 512) if quick else (512, 1024)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    eps = 1e-5
    dx, dw, db = _device(x), _device(w), _device(b)
    y = _device(np.full((rows, cols), np.nan, np.float32))
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(var + eps) * w + b

    def launch():
        layer_norm[(rows,)](dx, y, dw, db, cols, cols, eps, BLOCK=256)
        return y
    return launch, want, 1e-4, f"{rows}x{cols}"


def case_histogram(rng, quick):
    n, bins = ((1 << 14) if quick else (1 << 18)), 256
    x = rng.integers(0, bins, n).astype(np.int32)
    dx = _device(x)
    block = 1024

    def launch():
        hist = naiad.zeros(bins, np.int32)   # atomics accumulate: a fresh zeroed histogram
        histogram[(naiad.cdiv(n, block),)](dx, hist, n, BLOCK=block)
        return hist
    return launch, np.bincount(x, minlength=bins).astype(np.int32), 0, f"{n} -> {bins} bins"


CASES = [("vector add", case_vector_add), ("softmax", case_softmax), ("matmul", case_matmul),
         ("layer norm", case_layer_norm), ("histogram", case_histogram)]


def _max_error(got, want) -> float:
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    diff = np.abs(got - want)
    return float("inf") if np.isnan(diff).any() else float(diff.max(initial=0.0))


def run_demo(target=None, quick: bool = False, out=None) -> int:
    """Run every case; print the table; return 0 when all pass."""
    from .testing import do_bench

    out = out or sys.stdout
    ctx = naiad.target(target) if target is not None else _Nothing()
    rows = [("target", "kernel", "size", "max error", "status", "ms")]
    failures = 0
    with ctx:
        tname = str(naiad.get_target())
        for name, make in CASES:
            rng = np.random.default_rng(int(time.time_ns()) & 0xFFFFFFFF)
            try:
                launch, want, tol, size = make(rng, quick)
                got = _host(launch())
                err = _max_error(got, want)
                ok = err <= tol
                ms = do_bench(launch, warmup=5 if quick else 20, rep=20 if quick else 100)
                status = "ok" if ok else f"FAIL (tol {tol:g})"
                rows.append((tname, name, size, f"{err:.2e}", status, f"{ms:.3f}"))
            except Exception as exc:  # noqa: BLE001 -- report every case, then fail
                ok = False
                detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
                rows.append((tname, name, "-", "-", "ERROR", "-"))
                print(f"{name}: {detail}", file=sys.stderr)
            failures += not ok
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(), file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=out)
    print(f"{len(CASES) - failures} of {len(CASES)} kernels match numpy", file=out)
    return 1 if failures else 0


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
