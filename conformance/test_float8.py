"""float8 storage and conversions, tensor descriptors and tl.dot_scaled: every backend must give
the reference's bits (float8 conversions are exact integer rules; see docs/language.md)."""
import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl

N, BLOCK = 300, 128
GRID = (3,)
FORMATS = {  # dtype: (ml_dtypes type, saturates (no inf))
    "float8e5": (ml_dtypes.float8_e5m2, False),
    "float8e4nv": (ml_dtypes.float8_e4m3fn, True),
    "float8e4b8": (ml_dtypes.float8_e4m3fnuz, True),
    "float8e5b16": (ml_dtypes.float8_e5m2fnuz, True),
}


@naiad.jit
def to_float8(x_ptr, y_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(back_ptr + offs, y.to(tl.float32), mask=mask)


def _bits_equal(have, want):
    np.testing.assert_array_equal(np.asarray(have).view(np.uint8), np.asarray(want).view(np.uint8))


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("src", ["float32", "float16"])
def test_convert_to_float8(conf, fmt, src):
    ml, saturates = FORMATS[fmt]
    top = float(ml_dtypes.finfo(ml).max)
    x = conf.rand(N, "float32", low=-1.3 * top, high=1.3 * top)
    x[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, top * 1.01, 1e-9, -1e-9]
    with np.errstate(over="ignore"):
        x = x.astype(src)
    wide = x.astype(np.float64)
    want = (np.clip(wide, -top, top) if saturates else wide).astype(ml)
    y = np.zeros(N, ml)
    back = conf.poison(N, "float32")
    conf.check(to_float8, GRID, [x, y, back, N], {1: want}, dict(BLOCK=BLOCK), compare=_bits_equal)
    conf.check(to_float8, GRID, [x, y, back, N], {2: want.astype(np.float32)}, dict(BLOCK=BLOCK),
               compare=np.testing.assert_array_equal)


@naiad.jit
def descriptor_shift(In, Out, M, N, row_stride, dm, dn, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(In, [M, N], [row_stride, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(Out, [M, N], [row_stride, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([pm * BM, pn * BN], src.load([pm * BM + dm, pn * BN + dn]) + 1)


def test_tensor_descriptor_load_store(conf):
    """Blocks past every edge of a 37 x 45 tensor; rows 48 floats apart, as a descriptor's
    strides must be multiples of 16 bytes (Triton's contract; NVIDIA's TMA traps otherwise),
    and the 3 padding columns must keep their poison."""
    M, Ncols, stride, dm, dn = 37, 45, 48, -3, 2
    x = conf.rand((M, stride), "float32")
    pad = np.zeros((M + 64, Ncols + 64), np.float32)
    pad[32:32 + M, 32:32 + Ncols] = x[:, :Ncols]
    out = conf.poison((M, stride), "float32")
    want = out.copy()
    want[:, :Ncols] = pad[32 + dm:32 + dm + M, 32 + dn:32 + dn + Ncols] + 1
    conf.check(descriptor_shift, (3, 3), [x, out, M, Ncols, stride, dm, dn], {1: want},
               dict(BM=16, BN=16), rtol=0, atol=0)


@naiad.jit
def mx_dot(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
           K: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e4m3")
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def test_dot_scaled_e2m1_e4m3(conf):
    M, Ncols, K = 16, 16, 64
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    codes = conf.rng.integers(0, 16, (M, K)).astype(np.uint8)
    a_vals = np.where(codes & 8, -1, 1) * e2m1[codes & 7]
    a = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    b = conf.rand((K, Ncols), "float32", low=-8, high=8).astype(ml_dtypes.float8_e4m3fn)
    sa = conf.rng.integers(122, 132, (M, K // 32)).astype(np.uint8)
    sb = conf.rng.integers(122, 132, (Ncols, K // 32)).astype(np.uint8)
    av = a_vals * np.repeat(2.0 ** (sa - 127.0), 32, axis=1)
    bv = b.astype(np.float64) * np.repeat(2.0 ** (sb - 127.0), 32, axis=1).T
    out = conf.poison((M, Ncols), "float32")
    conf.check(mx_dot, (1,), [a, sa, b, sb, out], {4: av @ bv}, dict(M=M, N=Ncols, K=K),
               rtol=1e-5, atol=1e-3)
