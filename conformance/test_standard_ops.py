"""Triton's standard-library ops: flip, sort, topk, cat, gather (histogram: test_histogram.py)."""
import numpy as np
import pytest

import naiad
import naiad.language as tl

def _rand(conf, shape, dtype):
    """Random values with repeats (ints from a small range) so ties are exercised."""
    if np.dtype(conf.rand(1, dtype).dtype).kind in "iu":
        return conf.rand(shape, dtype, low=0, high=50)
    return conf.rand(shape, dtype, low=-100, high=100)


@naiad.jit
def flip_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.flip(tl.load(x_ptr + offs), DIM))


@pytest.mark.parametrize("dim", [0, 1, -1, None])
@pytest.mark.parametrize("shape", [(8, 32), (1, 64), (16, 1)])
@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "int8"])
def test_flip(conf, dim, shape, dtype):
    x = _rand(conf, shape, dtype)
    out = conf.poison(shape, dtype)
    want = np.flip(x, -1 if dim is None else dim)
    conf.check(flip_kernel, (1,), [x, out], {1: want}, dict(M=shape[0], N=shape[1], DIM=dim),
               rtol=0, atol=0)


@naiad.jit
def sort_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr,
                DESC: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs), dim=DIM, descending=DESC))


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("shape, dim", [((2, 32), None), ((16, 8), 1), ((8, 16), 0),
                                        ((8, 2), None)])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float16", "float32"])
def test_sort(conf, desc, shape, dim, dtype):
    x = _rand(conf, shape, dtype)
    axis = -1 if dim is None else dim
    want = np.sort(x.astype(np.float64) if x.dtype.name == "bfloat16" else x, axis=axis)
    want = np.flip(want, axis) if desc else want
    out = conf.poison(shape, dtype)
    conf.check(sort_kernel, (1,), [x, out], {1: want.astype(x.dtype)},
               dict(M=shape[0], N=shape[1], DIM=dim, DESC=desc), rtol=0, atol=0)


@naiad.jit
def topk_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                DESC: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    top = tl.topk(tl.load(x_ptr + offs), K, descending=DESC)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], top)


@pytest.mark.parametrize("desc", [True, False])
@pytest.mark.parametrize("shape, k", [((4, 32), 8), ((8, 16), 1), ((2, 16), 16)])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_topk(conf, desc, shape, k, dtype):
    x = _rand(conf, shape, dtype)
    s = np.sort(x, axis=1)
    want = np.flip(s, 1)[:, :k] if desc else s[:, :k]
    out = conf.poison((shape[0], k), dtype)
    conf.check(topk_kernel, (1,), [x, out], {1: np.ascontiguousarray(want)},
               dict(M=shape[0], N=shape[1], K=k, DESC=desc), rtol=0, atol=0)


@naiad.jit
def cat_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    z = tl.cat(tl.load(x_ptr + offs), tl.load(y_ptr + offs), dim=DIM)
    if DIM == 0:
        out = tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :]
    else:
        out = tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :]
    tl.store(out_ptr + out, z)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("shape", [(8, 16), (1, 32)])
@pytest.mark.parametrize("dtype", ["int16", "float32", "float16"])
def test_cat(conf, dim, shape, dtype):
    x, y = _rand(conf, shape, dtype), _rand(conf, shape, dtype)
    want = np.concatenate([x, y], axis=dim)
    out = conf.poison(want.shape, dtype)
    conf.check(cat_kernel, (1,), [x, y, out], {2: want}, dict(M=shape[0], N=shape[1], DIM=dim),
               rtol=0, atol=0)


@naiad.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                  IM: tl.constexpr, IN: tl.constexpr, AXIS: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    ioffs = tl.arange(0, IM)[:, None] * IN + tl.arange(0, IN)[None, :]
    tl.store(out_ptr + ioffs, tl.gather(src, tl.load(idx_ptr + ioffs), AXIS))


@pytest.mark.parametrize("index_dtype", ["int64", "uint8"])
def test_gather_out_of_range_gives_zero(conf, index_dtype):
    src = _rand(conf, (8, 16), "float32")
    idx = conf.rand((8, 32), index_dtype, low=0, high=20)      # some beyond the 16 columns
    inside = idx < 16
    want = np.where(inside, np.take_along_axis(src, np.where(inside, idx, 0).astype(np.int64),
                                               1), 0).astype(np.float32)
    out = conf.poison((8, 32), "float32")
    conf.check(gather_kernel, (1,), [src, idx, out], {2: want},
               dict(M=8, N=16, IM=8, IN=32, AXIS=1), rtol=0, atol=0)


@pytest.mark.parametrize("src_shape, idx_shape, axis", [((16, 8), (32, 8), 0),
                                                        ((8, 32), (8, 4), 1),
                                                        ((64, 64), (64, 32), 1)])
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "int64"])
def test_gather(conf, src_shape, idx_shape, axis, dtype):
    src = _rand(conf, src_shape, dtype)
    idx = conf.rand(idx_shape, "int32", low=0, high=src_shape[axis] - 1)
    want = np.take_along_axis(src, idx, axis)
    out = conf.poison(idx_shape, dtype)
    conf.check(gather_kernel, (1,), [src, idx, out], {2: want},
               dict(M=src_shape[0], N=src_shape[1], IM=idx_shape[0], IN=idx_shape[1],
                    AXIS=axis), rtol=0, atol=0)


# -- Philox random numbers: a numpy Philox 4x32-10 written from the published algorithm -------
_PHILOX_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_KEY = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))


def philox_4x32(seed: int, c0, c1, c2, c3, rounds: int = 10):
    """Salmon et al. (SC'11) Philox 4x32, keyed by the seed's low and high words."""
    seed &= (1 << 64) - 1
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    c = [np.asarray(x, np.uint32) for x in (c0, c1, c2, c3)]
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            prod_a = _PHILOX_MUL[0] * c[0].astype(np.uint64)
            prod_b = _PHILOX_MUL[1] * c[2].astype(np.uint64)
            c = [(prod_b >> np.uint64(32)).astype(np.uint32) ^ c[1] ^ k0,
                 prod_b.astype(np.uint32),
                 (prod_a >> np.uint64(32)).astype(np.uint32) ^ c[3] ^ k1,
                 prod_a.astype(np.uint32)]
            k0, k1 = k0 + _PHILOX_KEY[0], k1 + _PHILOX_KEY[1]
    return c


def uniform_np(bits):
    x = bits.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


@naiad.jit
def random_kernel(off_ptr, ints_ptr, uni_ptr, normal_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = tl.load(off_ptr + r)
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(ints_ptr + r, a)
    tl.store(ints_ptr + N + r, b)
    tl.store(ints_ptr + 2 * N + r, c)
    tl.store(ints_ptr + 3 * N + r, d)
    tl.store(ints_ptr + 4 * N + r, tl.randint(seed, offs))
    tl.store(uni_ptr + r, tl.rand(seed, offs))
    tl.store(normal_ptr + r, tl.randn(seed, offs))


@pytest.mark.parametrize("offset_dtype", ["int32", "int64"])
def test_philox_random(conf, offset_dtype):
    n = 256
    offs = conf.rand(n, offset_dtype, low=0)
    seed = int(conf.rng.integers(0, 2 ** 40))
    lo = offs.astype(np.uint32)
    hi = (offs.astype(np.int64) >> 32).astype(np.uint32)
    zero = np.zeros(n, np.uint32)
    words = philox_4x32(seed, lo, hi, zero, zero)
    u1, u2 = uniform_np(words[0]), uniform_np(words[1])
    normal = (np.sqrt(np.float32(-2.0) * np.log(np.maximum(np.float32(1e-7), u1)))
              * np.cos(np.float32(6.283185307179586) * u2))
    ints, uni, nrm = conf.poison(5 * n, "uint32"), conf.poison(n, "float32"), \
        conf.poison(n, "float32")
    conf.check(random_kernel, (1,), [offs, ints, uni, nrm, seed],
               {1: np.concatenate(words + [words[0]]), 2: uniform_np(words[0])}, dict(N=n),
               rtol=0, atol=0)
    if conf.tier == "execute":  # randn: log/cos/sqrt are only as exact as each math library
        got = conf._run(conf.backend, random_kernel, (1,), [offs, ints, uni, nrm, seed],
                        dict(N=n), {})[3]
        np.testing.assert_allclose(got, normal, rtol=1e-5, atol=1e-5)
