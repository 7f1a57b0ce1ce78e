"""The FMA dot with a 16-bit float accumulator (``out_dtype=float16`` / bf16) through the GPU
lowering on the CPU SIMT device: the sum is carried in f32 and rounded once, so a batched
f16 dot over K=64 matches numpy's f16 matmul (f32 sums) -- Triton's test_dot3d tolerance --
where rounding after every K step would drift by several f16 ulps."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from simt import run

import ml_dtypes


@naiad.jit
def batched_dot(q_ptr, k_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr, OUT: tl.constexpr):
    rb, rm, rn, rk = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    q = tl.load(q_ptr + rb[:, None, None] * M * K + rm[None, :, None] * K + rk[None, None, :])
    k = tl.load(k_ptr + rb[:, None, None] * K * N + rk[None, :, None] * N + rn[None, None, :])
    o = tl.dot(q, k, out_dtype=OUT)
    tl.store(o_ptr + rb[:, None, None] * M * N + rm[None, :, None] * N + rn[None, None, :], o)


@pytest.mark.parametrize("dtype,sig,out", [(np.float16, "*fp16", tl.float16),
                                           (ml_dtypes.bfloat16, "*bf16", tl.bfloat16)])
def test_16bit_accumulator_rounds_once(dtype, sig, out):
    rng = np.random.default_rng()
    B, M, N, K = 2, 16, 16, 64
    x = rng.standard_normal((B, M, K)).astype(dtype)
    y = rng.standard_normal((B, K, N)).astype(dtype)
    o = np.full((B, M, N), np.nan, dtype)
    run(batched_dot, (1,), [x, y, o], dict(B=B, M=M, N=N, K=K, OUT=out), warp_size=8,
        num_warps=2, signature={"q_ptr": sig, "k_ptr": sig, "o_ptr": sig})
    exact = x.astype(np.float64) @ y.astype(np.float64)
    # one rounding of an f32 sum: within an ulp-and-a-bit of the exact product, plus what the
    # f32 sum itself may lose (K f32 roundings of sum |x y|; it mattered where the result
    # cancels to far below its terms; an f16 accumulator loses many f16 ulps of the terms)
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    f32_sum = K * 2.0 ** -24 * (np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64)))
    assert (np.abs(o.astype(np.float64) - exact) <= 1.01 * ulp + f32_sum).all()
