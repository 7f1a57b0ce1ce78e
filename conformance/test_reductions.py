"""Reductions: sum/max/min/argmax/argmin/xor_sum over each axis, keep_dims, tl.reduce."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def reduce2d_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr,
                    N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS)
    else:
        tl.static_assert(OP == "xor_sum", "unknown OP")
        r = tl.xor_sum(x, axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + rn, r)
    else:
        tl.store(out_ptr + rm, r)


def _want(op, x, axis):
    if op == "sum":
        if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
            return x.astype(np.float64).sum(axis=axis).astype(x.dtype)
        return x.sum(axis=axis, dtype=x.dtype)
    if op == "xor_sum":
        return np.bitwise_xor.reduce(x, axis=axis)
    return {"max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin}[op](
        x, axis=axis)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(32, 64), (4, 128), (128, 8)])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduce(conf, op, dtype, shape, axis):
    m, n = shape
    x = conf.rand(shape, dtype, low=-50, high=50) if "int" in dtype else conf.rand(shape, dtype)
    want = _want(op, x, axis)
    out = conf.poison(want.shape, want.dtype)
    # f16 sums may accumulate in f16 or f32: allow the f16 rounding of every partial sum
    rtol, atol = {"float16": (1e-2, 0.1), "float32": (1e-5, 1e-5)}.get(dtype, (None, None))
    if op != "sum":
        rtol = atol = None
    conf.check(reduce2d_kernel, (1,), [x, out], {1: want}, dict(OP=op, AXIS=axis, M=m, N=n),
               rtol=rtol, atol=atol)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce(conf, op, dtype, axis):
    m, n = 16, 64
    # few distinct values so that ties happen: the first index wins
    x = conf.rand((m, n), "int32", low=-5, high=5).astype(dtype)
    want = _want(op, x, axis).astype(np.int32)
    out = conf.poison(want.shape, np.int32)
    conf.check(reduce2d_kernel, (1,), [x, out], {1: want}, dict(OP=op, AXIS=axis, M=m, N=n))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "uint16", "int64"])
def test_xor_sum(conf, dtype, axis):
    x = conf.rand((16, 32), dtype)
    want = _want("xor_sum", x, axis)
    out = conf.poison(want.shape, dtype)
    conf.check(reduce2d_kernel, (1,), [x, out], {1: want},
               dict(OP="xor_sum", AXIS=axis, M=16, N=32))


@naiad.jit
def _mul_combine(a, b):
    return a * b


@naiad.jit
def custom_reduce_kernel(x_ptr, out_ptr, N: tl.constexpr):
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + rn)
    tl.store(out_ptr + tl.program_id(0), tl.reduce(x, 0, _mul_combine))


def test_custom_combine(conf):
    rows, n = 8, 16
    x = conf.rand((rows, n), "float32", low=0.8, high=1.25)
    want = np.prod(x.astype(np.float64), axis=1).astype(np.float32)
    out = conf.poison(rows, "float32")
    conf.check(custom_reduce_kernel, (rows,), [x, out], {1: want}, dict(N=n), rtol=1e-5)


@naiad.jit
def keepdims_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    mx = tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x - mx)
    y = e / tl.sum(e, axis=1, keep_dims=True)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y)


def test_keep_dims_softmax(conf):
    m, n = 16, 128
    x = conf.rand((m, n), "float32")
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    out = conf.poison((m, n), "float32")
    conf.check(keepdims_kernel, (1,), [x, out], {1: want}, dict(M=m, N=n), rtol=1e-5,
               atol=1e-7)


@naiad.jit
def sum_1d_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))


@pytest.mark.parametrize("n,block", [(1, 16), (1000, 1024), (4096, 4096)])
def test_full_sum_to_scalar(conf, n, block):
    x = conf.rand(n, "float32")
    want = np.array([x.astype(np.float64).sum()], dtype=np.float32)
    out = conf.poison(1, "float32")
    # any summation order is right: float32 rounding is bounded by a few ulps of sum(|x|), not of
    # the (possibly cancelled) result -- a fixed atol failed for one seed in 10^3 or so; a
    # dropped element still shows (|x_i| above this bound but for a 1-in-5000 draw)
    atol = 4 * 2.0 ** -24 * float(np.abs(x).astype(np.float64).sum())
    conf.check(sum_1d_kernel, (1,), [x, out, n], {1: want}, dict(BLOCK=block), rtol=1e-5,
               atol=atol)
