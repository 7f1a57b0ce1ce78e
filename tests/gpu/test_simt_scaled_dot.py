"""tl.dot_scaled's emulation (widen + scale in f32, round to bf16/fp16, then the dot) through the GPU lowering on
the CPU SIMT device, against the float64 numpy oracle."""
import os
import sys

import numpy as np
import pytest

from simt import run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
from scaled_dot_kernels import oracle, random_operand, scaled_dot  # noqa: E402

RNG = np.random.default_rng(5)
SIG = {"float8_e4m3fn": "*fp8e4nv", "float8_e5m2": "*fp8e5", "bfloat16": "*bf16",
       "float16": "*fp16", "uint8": "*u8"}


@pytest.mark.parametrize("fa,fb", [("e2m1", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "bf16"),
                                   ("e2m1", "e2m1"), ("e4m3", "fp16")])
def test_dot_scaled_on_simt(fa, fb):
    M, N, K = 16, 16, 64
    a, av = random_operand(RNG, fa, M, K, pack_axis=1)
    b, bv = random_operand(RNG, fb, K, N, pack_axis=0)
    sa = RNG.integers(120, 134, (M, K // 32)).astype(np.uint8)
    sb = RNG.integers(120, 134, (N, K // 32)).astype(np.uint8)
    out = np.full((M, N), np.nan, np.float32)
    run(scaled_dot, (1,), [a, sa, b, sb, out],
        dict(M=M, N=N, K=K, FA=fa, FB=fb, KA=a.shape[1], KB=b.shape[0], SCALE_A=True,
             SCALE_B=True), warp_size=8, num_warps=2,
        signature={"a_ptr": SIG[a.dtype.name], "b_ptr": SIG[b.dtype.name]})
    want = oracle(av, sa, bv, sb)
    bound = K * 2.0 ** -24 * oracle(np.abs(av), sa, np.abs(bv), sb)
    assert (np.abs(out - want) <= bound).all()
