"""The Triton tutorial kernels (tests/kernels/tutorials.py) through the GPU layer:

* compiled end to end by ``naiad.compile`` for nvidia:sm_90 (PTX -> cubin), amd:gfx942 (wave64)
  and amd:gfx1100 (wave32) (AMDGCN -> hsaco);
* run on the CPU SIMT device (simt.py) and compared with numpy.
"""
import numpy as np
import pytest

import naiad
from simt import run
from tutorials import TUTORIALS

RNG = np.random.default_rng(99)
A16 = {"divisibility": 16}


def _spec(sig):
    return {p: A16 for p, t in sig.items() if t.startswith("*")}


@pytest.mark.parametrize("target", ["nvidia:sm_90", "amd:gfx942", "amd:gfx1100"])
@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_tutorial_compiles_to_binary(name, target):
    fn, sig, cx = TUTORIALS[name]
    k = naiad.compile(fn, signature=sig, constexprs=cx, target=target, specialization=_spec(sig))
    assert "gpu" in k.asm and "llir" in k.asm
    if target.startswith("nvidia"):
        assert f".entry {fn.__name__}" in k.asm["ptx"]
        assert isinstance(k.asm["cubin"], bytes) and k.asm["cubin"]
    else:
        assert fn.__name__ in k.asm["amdgcn"]
        assert isinstance(k.asm["hsaco"], bytes) and k.asm["hsaco"]
    assert k.metadata["shared"] >= 0
    assert not k.metadata.get("spill_bytes", 0) and not k.metadata.get("spill_registers", 0)


def _run(name, grid, args, **kw):
    fn, sig, cx = TUTORIALS[name]
    return run(fn, grid, args, cx, signature=sig, specialization=kw.pop("spec", {}),
               warp_size=kw.pop("warp_size", 8), num_warps=kw.pop("num_warps", 4))


def test_vector_add_runs():
    n = 3000
    x, y = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    _run("vector_add", (naiad.cdiv(n, 1024),), [x, y, out, n],
         spec={"x_ptr": A16, "y_ptr": A16, "output_ptr": A16, "n_elements": A16})
    np.testing.assert_array_equal(out, x + y)


def test_softmax_runs_persistent_rows():
    rows, cols = 5, 700
    x = RNG.uniform(-4, 4, (rows, cols)).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    _run("softmax", (2,), [out, x, cols, cols, rows, cols])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_grouped_matmul_runs():
    m, n, k = 70, 50, 40
    a = RNG.uniform(-1, 1, (m, k)).astype(np.float16)
    b = RNG.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    grid = (naiad.cdiv(m, 64) * naiad.cdiv(n, 64),)
    _run("matmul", grid, [a, b, c, m, n, k, k, 1, n, 1, n, 1])
    acc = a.astype(np.float32) @ b.astype(np.float32)
    want = np.where(acc >= 0, acc, 0.01 * acc).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3,
                               atol=2e-3)


def test_layer_norm_runs():
    rows, n = 3, 1500
    x = RNG.uniform(-2, 2, (rows, n)).astype(np.float16)
    w = RNG.uniform(0.5, 1.5, n).astype(np.float16)
    b = RNG.uniform(-1, 1, n).astype(np.float16)
    y = np.full((rows, n), np.nan, np.float16)
    mean = np.full(rows, np.nan, np.float32)
    rstd = np.full(rows, np.nan, np.float32)
    eps = 1e-5
    _run("layer_norm", (rows,), [x, y, w, b, mean, rstd, n, n, eps])
    xf = x.astype(np.float32)
    mu = xf.mean(axis=1)
    var = ((xf - mu[:, None]) ** 2).mean(axis=1)
    rs = 1 / np.sqrt(var + eps)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, rs, rtol=1e-4)
    want = ((xf - mu[:, None]) * rs[:, None] * w.astype(np.float32) + b.astype(np.float32))
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_int_ops_runs():
    n = 600
    a = RNG.integers(-10**6, 10**6, n).astype(np.int32)
    b = RNG.integers(-128, 128, n).astype(np.int8)
    b[b == 0] = 7
    u = RNG.integers(0, 2**16, n).astype(np.uint16)
    outs = [np.full(n, -7, np.int32) for _ in range(4)]
    _run("int_ops", (naiad.cdiv(n, 256),), [a, b, u, *outs, n])
    q, r, mix, shift = outs
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    qq = np.trunc(a64 / b64).astype(np.int64)
    np.testing.assert_array_equal(q, qq)
    np.testing.assert_array_equal(r, a64 - qq * b64)
    small = (b.astype(np.int16) + 100).astype(np.int8)
    np.testing.assert_array_equal(mix, (a64 + u + small).astype(np.int32))
    wide = (u.astype(np.uint64) * a.astype(np.uint32).astype(np.uint64)) % 2**32
    sh = ((a.astype(np.int64) << 3).astype(np.int32)) >> (b & 7).astype(np.int32)
    ush = (wide >> 4).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(shift, sh ^ ush)


def test_tiles_2d_runs():
    m, n = 20, 150
    src = RNG.random((m, n), dtype=np.float32)
    dst = np.full((m, n), np.nan, np.float32)
    grid = (naiad.cdiv(m, 16), naiad.cdiv(n, 32 * 3))
    _run("tiles_2d", grid, [src, dst, m, n, n])
    scale = (np.arange(n) % 96) // 32 + 1
    np.testing.assert_allclose(dst, src * scale[None, :], rtol=1e-6)


def test_histogram_runs():
    n = 1000
    x = RNG.integers(0, 1000, n).astype(np.int32)
    hist = np.zeros(16, np.int32)
    _run("histogram", (naiad.cdiv(n, 512),), [x, hist, n])
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))


def test_argmax_rows_runs():
    rows, cols = 6, 100
    x = RNG.integers(-20, 20, (rows, cols)).astype(np.float32)
    out = np.full(rows, -1, np.int32)
    _run("argmax_rows", (rows,), [x, out, cols, cols])
    np.testing.assert_array_equal(out, x.argmax(axis=1))
