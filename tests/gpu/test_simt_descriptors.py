"""Tensor descriptors through the GPU lowering (ordinary masked loads/stores/atomics) on the CPU
SIMT device: zero fill, dropped stores, atomics across programs."""
import os
import sys

import numpy as np
import pytest

import naiad
from simt import run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
import descriptor_kernels as dk  # noqa: E402

RNG = np.random.default_rng(21)


@pytest.mark.parametrize("M,N,dm,dn", [(37, 45, -3, 1), (20, 70, 5, -9)])
def test_shifted_copy(M, N, dm, dn):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = np.full((M + 2, N), np.nan, np.float32)
    run(dk.shifted_copy, (naiad.cdiv(M, 16), naiad.cdiv(N, 16)), [x, out, M, N, dm, dn],
        {"BM": 16, "BN": 16}, warp_size=4, num_warps=2)
    want = np.zeros((M, N), np.float32)
    src = np.zeros((M + 64, N + 64), np.float32)
    src[32:32 + M, 32:32 + N] = x
    want = 2 * src[32 + dm:32 + dm + M, 32 + dn:32 + dn + N]
    np.testing.assert_array_equal(out[:M], want)
    assert np.isnan(out[M:]).all()


def test_atomic_add():
    M, N = 19, 40
    acc = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    val = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    want = acc + val
    run(dk.add_into, (naiad.cdiv(M, 8), naiad.cdiv(N, 16)), [acc, val, M, N],
        {"BM": 8, "BN": 16}, warp_size=8, num_warps=2)
    np.testing.assert_array_equal(acc, want)
