"""Compares whose result axis info proves constant over runs of registers are emitted once per
run (layout assignment records ``uniform``; see ``naiad.gpu.lower.elementwise.lower_cmp``).
Results are checked against numpy on the CPU SIMT device with poisoned outputs.
"""
import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from simt import run

ALIGNED = {"divisibility": 16}


@naiad.jit
def centered_rows(x_ptr, out_ptr, stride, N, BLOCK: tl.constexpr):
    """Layer norm's ``tl.where(cols < N, x - mean, 0.)`` on one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    tl.store(out_ptr + row * stride + cols, tl.where(cols < N, x - mean, -7.0))


def _run(n, aligned):
    rows, block = 5, 64
    rng = np.random.default_rng(n)
    x = rng.standard_normal((rows, block)).astype(np.float32)
    out = np.full((rows, block), np.nan, np.float32)
    spec = {"x_ptr": ALIGNED, "out_ptr": ALIGNED, "stride": ALIGNED}
    if aligned:
        spec["N"] = ALIGNED
    k = run(centered_rows, (rows,), [x, out, block, n], {"BLOCK": block}, warp_size=8,
            num_warps=2, specialization=spec)
    want = np.where(np.arange(block) < n, x - x[:, :n].mean(axis=1, keepdims=True), -7.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    return k


@pytest.mark.parametrize("n", [16, 48, 64])
def test_masks_of_aligned_bounds_compare_once_per_run(n):
    k = _run(n, aligned=True)
    assert re.search(r"cmp .*uniform = \[\d+\]", k.lowered.gpu_text)
    # 64 columns over 16 threads: 4 registers per thread, one compare for all 4
    compares = re.findall(r"icmp slt", k.lowered.llvm_ir)
    assert len(compares) <= 2


@pytest.mark.parametrize("n", [1, 37, 63])
def test_unaligned_bounds_compare_every_element(n):
    k = _run(n, aligned=False)
    assert len(re.findall(r"icmp slt", k.lowered.llvm_ir)) >= 4
