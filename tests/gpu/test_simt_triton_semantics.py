"""Issue #13's semantics on the GPU lowering, executed on the CPU SIMT device (see simt.py):
the same numbers as the reference executor, for the cases where they used to differ."""
import numpy as np
import pytest

from simt import run
from gpu_kernels import binary_kernel

RNG = np.random.default_rng()


def poison(n, dtype):
    dtype = np.dtype(dtype)
    return np.full(n, np.nan, dtype) if dtype.kind == "f" else np.full(n, 7, dtype)


def test_signed_shr_by_unsigned_is_arithmetic():
    x = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    x[:3] = [-1, -1000, -2**31]
    y = RNG.integers(0, 32, 64).astype(np.uint32)
    out = poison(64, np.uint32)
    run(binary_kernel, (1,), [x, y, out], {"OP": "shr", "BLOCK": 64})
    np.testing.assert_array_equal(out, (x >> y.astype(np.int32)).view(np.uint32))


def test_umulhi_of_signed_ints_is_the_unsigned_high_half():
    x = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    y = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    x[0] = y[0] = -1
    out = poison(64, np.int32)
    run(binary_kernel, (1,), [x, y, out], {"OP": "umulhi", "BLOCK": 64})
    ux, uy = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(out, ((ux * uy) >> np.uint64(32)).astype(np.uint32).view(np.int32))
    assert out[0] == -2
