"""Shape ops: expand dims, broadcasting, reshape, trans/permute, broadcast_to, join/split."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm)
    y = tl.load(y_ptr + rn)
    if OP == "add":
        r = x[:, None] + y[None, :]
    elif OP == "mul":
        r = tl.expand_dims(x, 1) * tl.expand_dims(y, 0)
    else:
        r = tl.broadcast_to(x[:, None], (M, N)) - y[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], r)


@pytest.mark.parametrize("op", ["add", "mul", "sub"])
@pytest.mark.parametrize("shape", [(16, 32), (1, 64), (64, 2)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_broadcast_outer(conf, op, shape, dtype):
    m, n = shape
    x = conf.rand(m, dtype, low=-100, high=100)
    y = conf.rand(n, dtype, low=-100, high=100)
    want = {"add": x[:, None] + y[None, :], "mul": x[:, None] * y[None, :],
            "sub": x[:, None] - y[None, :]}[op]
    out = conf.poison(shape, dtype)
    conf.check(outer_kernel, (1,), [x, y, out], {2: want}, dict(M=m, N=n, OP=op))


@naiad.jit
def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, KIND: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if KIND == "trans":
        t = tl.trans(x)
    else:
        t = tl.permute(x, (1, 0))
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], t)


@pytest.mark.parametrize("kind", ["trans", "permute"])
@pytest.mark.parametrize("shape", [(16, 64), (32, 32), (128, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_transpose(conf, kind, shape, dtype):
    m, n = shape
    x = conf.rand(shape, dtype)
    out = conf.poison((n, m), dtype)
    conf.check(trans_kernel, (1,), [x, out], {1: x.T}, dict(M=m, N=n, KIND=kind))


@naiad.jit
def reshape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M * N)
    x = tl.load(x_ptr + r)
    x2 = tl.reshape(x, (M, N))
    rowsum = tl.sum(x2, axis=1)
    tl.store(out_ptr + tl.arange(0, M), rowsum)


@pytest.mark.parametrize("shape", [(4, 64), (32, 8), (16, 16)])
def test_reshape(conf, shape):
    m, n = shape
    x = conf.rand(m * n, "int32", low=-1000, high=1000)
    want = x.reshape(m, n).sum(axis=1).astype(np.int32)
    out = conf.poison(m, "int32")
    conf.check(reshape_kernel, (1,), [x, out], {1: want}, dict(M=m, N=n))


@naiad.jit
def join_split_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rn)
    y = tl.load(y_ptr + rn)
    j = tl.join(x, y)                       # (N, 2): interleaved
    tl.store(out_ptr + rn[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    a, b = tl.split(j)
    tl.store(x_ptr + rn, b)                 # swap through split
    tl.store(y_ptr + rn, a)


def test_join_split(conf):
    n = 64
    x = conf.rand(n, "float32")
    y = conf.rand(n, "float32")
    out = conf.poison(2 * n, "float32")
    conf.check(join_split_kernel, (1,), [x, y, out],
               {0: y.copy(), 1: x.copy(), 2: np.stack([x, y], axis=1).reshape(-1)},
               dict(N=n))


@naiad.jit
def full_kernel(out_ptr, zl_ptr, N: tl.constexpr, VALUE: tl.constexpr):
    rn = tl.arange(0, N)
    f = tl.full((N,), VALUE, dtype=tl.int32)
    z = tl.zeros_like(f) + tl.full_like(f, 2)
    tl.store(out_ptr + rn, f + rn)
    tl.store(zl_ptr + rn, z)


def test_full_and_like(conf):
    out = conf.poison(32, "int32")
    zl = conf.poison(32, "int32")
    conf.check(full_kernel, (1,), [out, zl], {0: 7 + np.arange(32), 1: np.full(32, 2)},
               dict(N=32, VALUE=7))
