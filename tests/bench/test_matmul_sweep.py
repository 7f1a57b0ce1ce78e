"""bench/matmul_sweep.py: the issue's grid (every config whose stages fit in shared memory, none
that does not), the run plan, the summary, and the source variants of ``matmul_features_kernel``
computing the right product (on the reference executor, against numpy)."""
from __future__ import annotations

import argparse
import math
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import matmul_sweep as ms  # noqa: E402


def test_grid_is_the_issues_grid_minus_what_does_not_fit():
    full = [(bm, bn, bk, w, s) for bm, bn in ((128, 128), (128, 256)) for bk in (32, 64, 128)
            for w in (4, 8) for s in (2, 3, 4, 5)]
    left_out = sorted(set(full) - set(ms.GRID))
    assert len(full) == 48 and len(ms.GRID) == 36 and len(set(ms.GRID)) == 36
    for bm, bn, bk, _, s in left_out:   # each needs more than the 227 KiB a CTA may use
        assert s * (bm + bn) * bk * 2 > 227 * 1024
    for bm, bn, bk, _, s in ms.GRID:
        assert s * (bm + bn) * bk * 2 <= 227 * 1024
    assert (128, 256, 128, 8, 2) in ms.GRID and (128, 256, 128, 8, 3) in left_out
    assert (128, 128, 128, 4, 3) in ms.GRID and (128, 128, 128, 4, 4) in left_out


def _args(**kw):
    base = dict(variants="", quick=False, tf32=False)
    base.update(kw)
    return argparse.Namespace(**base)


def test_plan_covers_variants_and_precisions():
    runs = ms.plan(_args(tf32=True))
    fp16 = [r for r in runs if r[0] == "fp16"]
    assert len(fp16) == 2 * len(ms.GRID) + (len(ms.VARIANTS) - 2) * len(ms.FEATURE_CONFIGS)
    assert {v for _, v, _ in fp16} == set(ms.VARIANTS)
    assert [c for k, _, c in runs if k == "tf32"] == ms.TF32_CONFIGS
    assert [c for k, _, c in runs if k == "ieee"] == ms.IEEE_CONFIGS
    quick = ms.plan(_args(quick=True, tf32=True))
    assert len(quick) == 2 * len(ms.QUICK) + 2
    assert ms.plan(_args(variants="kmask")) == [("fp16", "kmask", c) for c in ms.FEATURE_CONFIGS]
    with pytest.raises(SystemExit, match="unknown variants"):
        ms.plan(_args(variants="plain,nope"))


def test_summary_reports_worst_best_and_failures():
    nan = float("nan")
    rows = [{"kind": "fp16", "label": "a", "naiad": 500.0, "triton": 600.0, "ratio": 500 / 600},
            {"kind": "fp16", "label": "b", "naiad": 700.0, "triton": 650.0, "ratio": 700 / 650},
            {"kind": "fp16", "label": "c", "naiad": nan, "triton": 640.0, "ratio": nan},
            {"kind": "tf32", "label": "t", "naiad": 80.0, "triton": 80.0, "ratio": 1.0}]
    fp16, tf32 = ms.summary(rows)
    assert fp16.startswith("fp16: best naiad 700.0 vs best Triton 650.0 TFLOP/s (1.08)")
    assert "worst ratio 0.83 (a)" in fp16 and "best ratio 1.08 (b)" in fp16
    assert "no ratio for 1: c" in fp16
    assert tf32.startswith("tf32: best naiad 80.0 vs best Triton 80.0")


@pytest.fixture
def reference():
    import naiad

    naiad.set_target("reference")


@pytest.mark.parametrize("variant", [v for v in ms.VARIANTS if v != "plain"])
def test_features_kernel_variants_compute_the_product(reference, variant):
    """Each variant of the bench kernel against numpy, output poisoned: K not a multiple of BK
    where the K masks are on (the tail tile is masked), whole tiles otherwise."""
    import naiad

    kernel = ms.load_kernels("naiad").matmul_features_kernel
    switches = ms.VARIANTS[variant]
    m, n, bm, bn, bk = 64, 96, 32, 32, 16
    k = 40 if switches["K_MASK"] else 48
    rng = np.random.default_rng(len(variant))
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    out_dtype = np.float32 if switches["F32_OUT"] else np.float16
    c = naiad.to_device(np.full((m, n), np.nan, out_dtype))
    grid = (math.ceil(m / bm) * math.ceil(n / bn),)
    kernel[grid](naiad.to_device(a), naiad.to_device(b), c, m, n, k, k, 1, n, 1, n, 1,
                 BM=bm, BN=bn, BK=bk, **switches)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if out_dtype == np.float32 else 2e-3
    np.testing.assert_allclose(np.asarray(naiad.to_host(c), np.float64), want, rtol=tol,
                               atol=tol * 8)
