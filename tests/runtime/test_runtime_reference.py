"""End to end on the reference target: real frontend, real compiler, the numpy executor."""
from __future__ import annotations

import io

import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@naiad.jit
def scaled_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=mask) * 2, mask=mask)


@pytest.fixture(autouse=True)
def on_reference():
    from naiad.plugins.manager import get_plugin_manager

    if "reference" not in get_plugin_manager().target_table():
        pytest.fail("the reference backend plugin did not load: "
                    f"{[str(b) for b in get_plugin_manager().broken]}")
    add_kernel.cache_clear()
    scaled_copy.cache_clear()
    with naiad.target("reference"):
        yield


@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_vector_add_matches_numpy(n):
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    add_kernel[lambda m: (naiad.cdiv(m["n"], m["BLOCK"]),)](x, y, out, n, BLOCK=256)
    np.testing.assert_allclose(out, x + y, rtol=1e-6, atol=1e-6)


def test_vector_add_other_dtypes():
    rng = np.random.default_rng()
    for dtype in (np.float64, np.int32, np.float16):
        x = (rng.standard_normal(300) * 100).astype(dtype)
        y = (rng.standard_normal(300) * 100).astype(dtype)
        out = np.full(300, 77, dtype)
        add_kernel[(2,)](x, y, out, 300, BLOCK=256)
        np.testing.assert_array_equal(out, (x + y).astype(dtype))


def test_specialisations_compile_distinct_kernels_with_same_results():
    rng = np.random.default_rng()
    x = rng.standard_normal(64).astype(np.float32)
    results = {}
    for stride in (1, 16, 3):
        out = np.full(64, np.nan, np.float32)
        n = 64 // stride
        kernel = scaled_copy[(1,)](x, out, n, stride, BLOCK=64)
        idx = np.arange(n) * stride
        np.testing.assert_allclose(out[idx], 2 * x[idx])
        assert np.isnan(np.delete(out, idx)).all()     # nothing written elsewhere
        results[stride] = kernel.asm["tile"]
    assert scaled_copy.cache_info()["compiles"] == 3
    assert len(set(results.values())) == 3


def test_disk_cache_round_trip_runs_the_same(cache_dir):
    rng = np.random.default_rng()
    x = rng.standard_normal(500).astype(np.float32)
    y = rng.standard_normal(500).astype(np.float32)
    out = np.full(500, np.nan, np.float32)
    add_kernel[(2,)](x, y, out, 500, BLOCK=256)
    first = add_kernel.cache_info()
    assert first["compiles"] == 1 and first["disk_writes"] == 1
    add_kernel.cache_clear()
    out2 = np.full(500, np.nan, np.float32)
    add_kernel[(2,)](x, y, out2, 500, BLOCK=256)
    info = add_kernel.cache_info()
    assert info["disk_hits"] == 1 and info["compiles"] == 0
    np.testing.assert_array_equal(out2, x + y)


def test_autotune_on_reference():
    @naiad.autotune(configs=[naiad.Config({"BLOCK": 64}), naiad.Config({"BLOCK": 512})],
                    key=["n"], warmup=1, rep=5)
    @naiad.jit
    def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs,
                                                                            mask=mask), mask=mask)

    rng = np.random.default_rng()
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    tuned_add[lambda m: (naiad.cdiv(n, m["BLOCK"]),)](x, y, out, n)
    assert tuned_add.best_config in tuned_add.configs and tuned_add.tuned == 1
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_do_bench_on_reference():
    x = np.ones(1024, np.float32)
    out = np.empty(1024, np.float32)
    ms = naiad.testing.do_bench(lambda: add_kernel[(4,)](x, x, out, 1024, BLOCK=256),
                                warmup=1, rep=10)
    assert 0 < ms < 1000
    np.testing.assert_array_equal(out, 2 * x)


def test_demo_passes_quick():
    from naiad.demo import run_demo

    buf = io.StringIO()
    status = run_demo(target="reference", quick=True, out=buf)
    table = buf.getvalue()
    assert status == 0, table
    for name in ("vector add", "softmax", "matmul", "layer norm", "histogram"):
        line = next(ln for ln in table.splitlines() if f"  {name}  " in f"  {ln}  ")
        assert "reference" in line and " ok " in f" {line} "
    assert "5 of 5 kernels match numpy" in table
