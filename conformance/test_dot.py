"""Matrix products with tl.dot: shapes, input types, accumulators, a K loop."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               OUT: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=OUT, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


SHAPES = [(16, 16, 16), (32, 64, 16), (64, 32, 32), (16, 128, 64), (128, 64, 32)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_dot(conf, dtype, shape):
    m, n, k = shape
    a = conf.rand((m, k), dtype, low=-1, high=1)
    b = conf.rand((k, n), dtype, low=-1, high=1)
    out_dtype = "float64" if dtype == "float64" else "float32"
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(out_dtype)
    c = conf.poison((m, n), out_dtype)
    tl_out = tl.float64 if out_dtype == "float64" else tl.float32
    tol = {"float64": 1e-12, "float32": 1e-5}.get(dtype, 2e-3)
    conf.check(dot_kernel, (1,), [a, b, c], {2: want},
               dict(M=m, N=n, K=k, OUT=tl_out, PRECISION="ieee"), rtol=tol, atol=tol * k)


@pytest.mark.parametrize("shape", [(16, 16, 32), (32, 32, 64)])
def test_int8_dot(conf, shape):
    m, n, k = shape
    a = conf.rand((m, k), "int8", low=-100, high=100)
    b = conf.rand((k, n), "int8", low=-100, high=100)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    c = conf.poison((m, n), "int32")
    conf.check(dot_kernel, (1,), [a, b, c], {2: want},
               dict(M=m, N=n, K=k, OUT=tl.int32, PRECISION="ieee"))


@naiad.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("mnk", [(64, 64, 64), (100, 70, 90), (128, 256, 96)])
def test_tiled_matmul_with_acc(conf, dtype, mnk):
    m, n, k = mnk
    a = conf.rand((m, k), dtype, low=-1, high=1)
    b = conf.rand((k, n), dtype, low=-1, high=1)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    c = conf.poison((m, n), "float32")
    bm, bn, bk = 32, 32, 32
    grid = (naiad.cdiv(m, bm), naiad.cdiv(n, bn))
    conf.check(matmul_kernel, grid, [a, b, c, m, n, k, k, n, n], {2: want},
               dict(BM=bm, BN=bn, BK=bk), rtol=2e-3, atol=2e-3 * k ** 0.5,
               options={"num_warps": 4})


@pytest.mark.parametrize("shape", [(8, 8, 8), (4, 32, 2), (16, 1, 16), (1, 16, 4), (2, 2, 64)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_dot_small_dims(conf, dtype, shape):
    """Dimensions below 16 (Triton pads them to its instruction shape; the result is the same)."""
    m, n, k = shape
    a = conf.rand((m, k), dtype, low=-1 if dtype != "int8" else -100, high=1 if dtype != "int8"
                  else 100)
    b = conf.rand((k, n), dtype, low=-1 if dtype != "int8" else -100, high=1 if dtype != "int8"
                  else 100)
    out_dtype = "int32" if dtype == "int8" else "float32"
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(out_dtype)
    c = conf.poison((m, n), out_dtype)
    tol = 1e-5 if dtype == "float32" else 2e-3
    conf.check(dot_kernel, (1,), [a, b, c], {2: want},
               dict(M=m, N=n, K=k, OUT=tl.int32 if dtype == "int8" else tl.float32,
                    PRECISION="ieee"), rtol=tol if dtype != "int8" else 0,
               atol=tol * k if dtype != "int8" else 0)


#: worst error of each float32 scheme relative to sum_k |a_ik b_kj| (measured bounds have
#: margin; a single tf32 / bf16 product would miss them by 2**-11 / 2**-8)
SPLIT_BOUNDS = {"tf32x3": 2.0 ** -19, "bf16x3": 2.0 ** -15, "bf16x6": 2.0 ** -20}


@pytest.mark.parametrize("precision", sorted(SPLIT_BOUNDS))
@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 64, 32), (64, 64, 64)])
def test_split_precision_dot(conf, precision, shape):
    """Triton's tf32x3 / bf16x3 / bf16x6: f32 operands split into narrower parts whose cross
    products (tensor cores on a GPU) sum to near-f32 accuracy."""
    m, n, k = shape
    a = conf.rand((m, k), "float32", low=-4, high=4)
    b = conf.rand((k, n), "float32", low=-4, high=4)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    bound = SPLIT_BOUNDS[precision] * scale

    def within_bound(got, expected):
        err = np.abs(got.astype(np.float64) - expected)
        assert (err <= bound).all(), f"error up to {np.max(err / scale):.3g} x sum|ab|"

    c = conf.poison((m, n), "float32")
    conf.check(dot_kernel, (1,), [a, b, c], {2: want},
               dict(M=m, N=n, K=k, OUT=tl.float32, PRECISION=precision),
               compare=within_bound)


@naiad.jit
def batched_nd_dot(x_ptr, y_ptr, z_ptr, RANK: tl.constexpr, M: tl.constexpr,
                   TRANS_A: tl.constexpr, TRANS_B: tl.constexpr):
    """Triton's test_dot_multidim: operands [2, ..., 2, M, M]; tl.trans without dims swaps the
    last two axes."""
    n: tl.constexpr = (M * M) << (RANK - 2)
    x = tl.load(x_ptr + tl.arange(0, n)).reshape([2] * (RANK - 2) + [M, M])
    y = tl.load(y_ptr + tl.arange(0, n)).reshape([2] * (RANK - 2) + [M, M])
    if TRANS_A:
        x = tl.trans(x)
    if TRANS_B:
        y = tl.trans(y)
    tl.store(z_ptr + tl.arange(0, n), tl.dot(x, y).reshape([n]))


@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True)])
def test_batched_nd_dot(conf, rank, trans_a, trans_b):
    shape = (2,) * (rank - 2) + (16, 16)
    x = conf.rand(shape, "float16", low=-1, high=1)
    y = conf.rand(shape, "float16", low=-1, high=1)
    a = np.swapaxes(x, -1, -2) if trans_a else x
    b = np.swapaxes(y, -1, -2) if trans_b else y
    want = a.astype(np.float64) @ b.astype(np.float64)
    z = conf.poison(shape, "float32")
    conf.check(batched_nd_dot, (1,), [x.reshape(-1), y.reshape(-1), z.reshape(-1)],
               {2: want.reshape(-1)}, dict(RANK=rank, M=16, TRANS_A=trans_a, TRANS_B=trans_b),
               rtol=1e-5, atol=1e-5)
