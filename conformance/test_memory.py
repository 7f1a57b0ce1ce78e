"""Loads and stores: masks, ``other``, strided and indirect access, scalar pointers."""
import numpy as np
import pytest

import naiad
import naiad.language as tl

from .harness import ALL_DTYPES
from .kernels import copy_kernel


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("n", [1, 127, 1024, 3001])
def test_masked_copy(conf, dtype, n):
    x = conf.rand(n, dtype)
    out = conf.poison(n, dtype)
    conf.check(copy_kernel, (naiad.cdiv(n, 256),), [x, out, n], {1: x}, dict(BLOCK=256))


@naiad.jit
def load_other_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "uint8"])
def test_load_other(conf, dtype):
    n = 37
    x = conf.rand(256, dtype, low=1, high=100)
    out = conf.poison(256, dtype)
    want = x.copy()
    want[n:] = 7
    conf.check(load_other_kernel, (1,), [x, out, n], {1: want}, dict(OTHER=7, BLOCK=256))


@naiad.jit
def strided_kernel(x_ptr, out_ptr, rows, cols, stride_x, stride_out,
                   BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.arange(0, BC)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * stride_x + c[None, :], mask=mask)
    tl.store(out_ptr + c[None, :] * stride_out + r[:, None], x, mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "int16", "float64", "bfloat16"])
@pytest.mark.parametrize("rows,cols", [(64, 32), (50, 20), (128, 64)])
def test_strided_transpose(conf, dtype, rows, cols):
    x = conf.rand((rows, cols + 3), dtype)
    out = conf.poison((cols, rows), dtype)
    want = x[:, :cols].T
    conf.check(strided_kernel, (naiad.cdiv(rows, 16),), [x, out, rows, cols, cols + 3, rows],
               {1: want}, dict(BR=16, BC=64))


@naiad.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + idx, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_gather(conf, dtype, idx_dtype):
    n, size = 900, 333
    x = conf.rand(size, dtype)
    idx = conf.rand(n, idx_dtype, low=0, high=size - 1)
    out = conf.poison(n, dtype)
    conf.check(gather_kernel, (naiad.cdiv(n, 128),), [x, idx, out, n], {2: x[idx]},
               dict(BLOCK=128))


@naiad.jit
def scatter_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + idx, tl.load(x_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_scatter_permutation(conf, dtype):
    n = 700
    x = conf.rand(n, dtype)
    perm = conf.rng.permutation(n).astype(np.int32)
    out = conf.poison(n, dtype)
    want = np.empty_like(x)
    want[perm] = x
    conf.check(scatter_kernel, (naiad.cdiv(n, 128),), [x, perm, out, n], {2: want},
               dict(BLOCK=128))


@naiad.jit
def scalar_kernel(x_ptr, out_ptr, scale):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid, v * scale + pid)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_scalar_pointer(conf, dtype):
    n = 19
    x = conf.rand(n, dtype, low=-50, high=50)
    out = conf.poison(n, dtype)
    scale = 3
    want = (x * scale + np.arange(n)).astype(x.dtype)
    conf.check(scalar_kernel, (n,), [x, out, scale], {1: want})


@naiad.jit
def pointer_increment_kernel(x_ptr, out_ptr, n_steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(n_steps):
        acc += tl.load(x_ptr + offs)
        x_ptr += BLOCK
    tl.store(out_ptr + offs, acc)


def test_pointer_augmented_assignment(conf):
    steps, block = 6, 64
    x = conf.rand(steps * block, "float32")
    out = conf.poison(block, "float32")
    want = x.reshape(steps, block).sum(axis=0, dtype=np.float32)
    conf.check(pointer_increment_kernel, (1,), [x, out, steps], {1: want}, dict(BLOCK=block),
               rtol=1e-5)
