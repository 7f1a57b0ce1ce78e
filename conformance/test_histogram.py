"""``tl.histogram``: counts of the values ``0..num_bins-1`` of a 1-D integer tensor, against numpy's
``bincount``. Values fall partly outside the bins (negative, past the last bin, and for 64-bit
inputs beyond 2**32, where a truncated value would land in a bin); masked-off elements are not
counted; several programs count their own blocks; sizes from 1 to 4096 elements, 1 to 1024
bins; the counters share the kernel's shared-memory scratch with other ops and with a loop's
next iteration."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


def _values(conf, n: int, dtype: str, bins: int) -> np.ndarray:
    """Random values about half inside ``[0, bins)``; for 64-bit types some are a bin plus 2**32."""
    dt = np.dtype(dtype)
    low = 0 if dt.kind == "u" else -bins - 2
    high = 2 * bins + 2
    if dt.itemsize == 1:
        low, high = max(low, -128 if dt.kind == "i" else 0), min(high, 127 if dt.kind == "i" else 255)
    x = conf.rand(n, dtype, low=low, high=high)
    if dt.itemsize == 8:
        aliased = conf.rng.random(n) < 0.25
        x = np.where(aliased, x + dt.type(1 << 32), x).astype(dt)
    return x


def _counts(x: np.ndarray, bins: int, counted: np.ndarray | None = None) -> np.ndarray:
    keep = (x >= 0) & (x < bins)
    if counted is not None:
        keep &= counted
    return np.bincount(x[keep].astype(np.int64), minlength=bins).astype(np.int32)


@naiad.jit
def blocks_kernel(x_ptr, out_ptr, n, M: tl.constexpr, BINS: tl.constexpr,
                  MASKED: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, M)
    inside = offs < n
    x = tl.load(x_ptr + pid * M + offs, mask=inside, other=0)
    if MASKED:
        h = tl.histogram(x, BINS, mask=inside)
    else:
        h = tl.histogram(x, BINS)
    tl.store(out_ptr + pid * BINS + tl.arange(0, BINS), h)


@pytest.mark.parametrize("m, n, bins, dtype, masked", [
    (1, 1, 1, "int32", True),
    (2, 1, 4, "int8", True),
    (16, 16, 1024, "int32", False),      # more bins than elements and than threads
    (64, 37, 4, "int32", True),
    (128, 100, 64, "int16", True),
    (256, 256, 16, "uint8", False),
    (512, 512, 2, "uint64", False),
    (1024, 1000, 128, "int32", True),
    (4096, 3000, 8, "uint32", True),
    (4096, 4096, 256, "int64", False),
])
def test_histogram_of_blocks(conf, m, n, bins, dtype, masked):
    programs = 3
    x = _values(conf, programs * m, dtype, bins)
    want = []
    for p in range(programs):
        block = x[p * m:(p + 1) * m].copy()
        block[n:] = 0                       # masked-off loads read other=0
        want.append(_counts(block[:n] if masked else block, bins))
    out = conf.poison(programs * bins, "int32")
    conf.check(blocks_kernel, (programs,), [x, out, n], {1: np.concatenate(want)},
               dict(M=m, BINS=bins, MASKED=masked), rtol=0, atol=0)


@naiad.jit
def data_mask_kernel(x_ptr, keep_ptr, out_ptr, M: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + offs)
    keep = tl.load(keep_ptr + offs) != 0
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, keep))


@pytest.mark.parametrize("m, bins", [(32, 8), (512, 64), (2048, 512)])
def test_histogram_with_a_data_mask(conf, m, bins):
    x = _values(conf, m, "int32", bins)
    keep = conf.rand(m, "int8", low=0, high=1)
    out = conf.poison(bins, "int32")
    conf.check(data_mask_kernel, (1,), [x, keep, out], {2: _counts(x, bins, keep != 0)},
               dict(M=m, BINS=bins), rtol=0, atol=0)


@naiad.jit
def row_max_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    rows = tl.max(tl.load(x_ptr + offs), axis=1)     # several threads hold each row's max
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(rows, BINS))


@pytest.mark.parametrize("r, c, bins", [(8, 32, 16), (64, 16, 32)])
def test_histogram_of_values_held_by_several_threads(conf, r, c, bins):
    x = _values(conf, r * c, "int32", bins).reshape(r, c)
    out = conf.poison(bins, "int32")
    conf.check(row_max_kernel, (1,), [x, out], {1: _counts(x.max(axis=1), bins)},
               dict(R=r, C=c, BINS=bins), rtol=0, atol=0)


@naiad.jit
def scratch_sharing_kernel(x_ptr, y_ptr, out_ptr, sum_ptr, M: tl.constexpr,
                           BINS: tl.constexpr, ITERS: tl.constexpr):
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + offs)
    total = tl.sum(x, axis=0)                          # a cross-warp reduction before
    hx = tl.histogram(x, BINS)
    hy = tl.zeros([BINS], dtype=tl.int32)
    for i in range(ITERS):                              # the same counters every iteration
        y = tl.load(y_ptr + i * M + offs)
        hy += tl.histogram(y, BINS, mask=y != x)
    tl.store(out_ptr + tl.arange(0, BINS), hx)
    tl.store(out_ptr + BINS + tl.arange(0, BINS), hy)
    tl.store(sum_ptr, total + tl.sum(hx + hy, axis=0))  # and one after


@pytest.mark.parametrize("m, bins, iters", [(256, 32, 3), (1024, 256, 2)])
def test_histogram_counters_share_scratch(conf, m, bins, iters):
    x = _values(conf, m, "int32", bins)
    y = _values(conf, iters * m, "int32", bins)
    hx = _counts(x, bins)
    hy = sum(_counts(y[i * m:(i + 1) * m], bins, y[i * m:(i + 1) * m] != x)
             for i in range(iters)).astype(np.int32)
    total = np.array([x.astype(np.int64).sum() + hx.sum() + hy.sum()]).astype(np.int32)
    out, tot = conf.poison(2 * bins, "int32"), conf.poison(1, "int32")
    conf.check(scratch_sharing_kernel, (1,), [x, y, out, tot],
               {2: np.concatenate([hx, hy]), 3: total}, dict(M=m, BINS=bins, ITERS=iters),
               rtol=0, atol=0)
