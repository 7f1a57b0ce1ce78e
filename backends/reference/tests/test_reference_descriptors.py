"""Tensor descriptors (tl.make_tensor_descriptor) on the reference executor: zero-filled loads
and dropped stores outside the tensor, atomics, and Triton's errors for bad block shapes."""
import os
import sys

import numpy as np
import pytest

import naiad
from naiad.errors import CompilationError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))
import descriptor_kernels as dk  # noqa: E402

RNG = np.random.default_rng(12)


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


def shifted_reference(x, dm, dn):
    M, N = x.shape
    want = np.zeros_like(x)
    for i in range(M):
        for j in range(N):
            si, sj = i + dm, j + dn
            if 0 <= si < M and 0 <= sj < N:
                want[i, j] = 2 * x[si, sj]
    return want


@pytest.mark.parametrize("M,N,dm,dn", [(37, 45, -3, 1), (16, 32, 0, 0), (20, 70, 5, -9)])
def test_load_zero_fills_and_store_drops(M, N, dm, dn):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = np.full((M + 2, N), np.nan, np.float32)      # two guard rows past the tensor
    view = out[:M]
    dk.shifted_copy[(naiad.cdiv(M, 16), naiad.cdiv(N, 16))](x, view, M, N, dm, dn, BM=16, BN=16)
    np.testing.assert_array_equal(view, shifted_reference(x, dm, dn))
    assert np.isnan(out[M:]).all()                      # overhanging stores were dropped


def test_atomic_add_through_descriptor():
    M, N = 19, 40
    acc = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    val = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    want = acc + val
    dk.add_into[(naiad.cdiv(M, 8), naiad.cdiv(N, 16))](acc, val, M, N, BM=8, BN=16)
    np.testing.assert_array_equal(acc, want)


def test_block_shape_under_16_bytes_is_triton_error():
    with pytest.raises(CompilationError, match=r"descriptor_kernels.py:\d+") as e:
        dk.bad_block[(1,)](np.zeros((128, 128), np.int32))
    assert "Descriptor block shape must have at least 16 bytes" in str(e.value.__cause__)


def test_store_of_wrong_shape_is_an_error():
    with pytest.raises(CompilationError, match=r"value's shape \[8, 4\] must match the "
                                               r"descriptor's block shape \[8, 8\]"):
        dk.bad_store_shape[(1,)](np.zeros((128, 128), np.int32))


def test_host_tensor_descriptor_arguments():
    from naiad.tools.tensor_descriptor import TensorDescriptor

    M, N = 37, 40
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = np.full((M + 2, N), np.nan, np.float32)
    xd = TensorDescriptor.from_tensor(x, block_shape=[16, 8])
    yd = TensorDescriptor.from_tensor(out[:M], block_shape=[16, 8])
    dk.copy_through_host_descriptors[(naiad.cdiv(M, 16), naiad.cdiv(N, 8))](xd, yd, SCALE=3.0)
    np.testing.assert_array_equal(out[:M], 3 * x)
    assert np.isnan(out[M:]).all()
    # another block shape compiles its own kernel (the block shape is part of the key)
    out[:] = np.nan
    xd = TensorDescriptor.from_tensor(x, block_shape=[8, 32])
    yd = TensorDescriptor.from_tensor(out[:M], block_shape=[8, 32])
    dk.copy_through_host_descriptors[(naiad.cdiv(M, 8), naiad.cdiv(N, 32))](xd, yd, SCALE=2.0)
    np.testing.assert_array_equal(out[:M], 2 * x)


def test_host_descriptor_with_torch_tensor():
    torch = pytest.importorskip("torch")
    from naiad.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(32, 64)
    y = torch.full((32, 64), float("nan"))
    dk.copy_through_host_descriptors[(2, 2)](TensorDescriptor.from_tensor(x, [16, 32]),
                                             TensorDescriptor.from_tensor(y, [16, 32]), SCALE=1.0)
    assert torch.equal(x, y)
