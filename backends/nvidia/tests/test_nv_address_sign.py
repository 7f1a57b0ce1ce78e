"""What naiad assumes about the sign of index values when it vectorizes an access
(naiad.gpu.axis, docs/language.md "Memory access vectorization"): a run-time divisor is positive,
nothing more. An index negative by construction -- program 0 reads below ``x + 64`` through a
truncated ``%`` -- is not vectorized (its lanes are not consecutive: ``-63 % 64 == -63``) and a
remark says why at its line; the same wrap of a provably non-negative index is. Both give numpy's
answer on the reference backend; the vector widths are read from the sm_90 compile, no GPU."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import naiad
import naiad.language as tl

N, BLOCK = 64, 64


@naiad.jit
def negative_wrap(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """out[i + 64] = x[64 + (i % N)] with i = pid * BLOCK + j - 64: negative in program 0,
    where the truncated remainder reads x[64], x[1], ..., x[63]."""
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK) - 64
    middle = x_ptr + 64
    vals = tl.load(middle + i % N)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), vals)


@naiad.jit
def shifted_wrap(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """out[i] = x[i % N], the offset written from the middle pointer ``x + 64``: negative
    relative to it, but the index itself is provably non-negative."""
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    middle = x_ptr + 64
    vals = tl.load(middle + i % N - 64)
    tl.store(out_ptr + i, vals)


def expected(kernel, x):
    i = np.arange(2 * BLOCK)
    if kernel is negative_wrap:
        return x[64 + np.fmod(i - 64, N)]  # truncated remainder, as on the GPU
    return x[i % N]


@pytest.mark.parametrize("kernel", [negative_wrap, shifted_wrap])
def test_values_on_the_reference(kernel):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(2 * BLOCK).astype(np.float32)
    out = np.full(2 * BLOCK, np.nan, np.float32)
    naiad.set_target("reference")
    try:
        kernel[(2,)](x, out, N, BLOCK=BLOCK)
    finally:
        naiad.set_target(None)
    np.testing.assert_array_equal(out, expected(kernel, x))


def compile_sm90(kernel):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "N": "i32"}
    return naiad.compile(kernel, signature=sig, target="nvidia:sm_90",
                         constexprs={"BLOCK": BLOCK}, options={"num_warps": 1},
                         specialization={p: {"divisibility": 16} for p in sig})


def load_vec(gpu_ir: str) -> int:
    (line,) = [ln for ln in gpu_ir.splitlines() if re.search(r"= load ", ln)]
    found = re.search(r"vec = (\d+)", line)
    return int(found.group(1)) if found else 1


def test_negative_index_stays_scalar_and_a_remark_says_why():
    k = compile_sm90(negative_wrap)
    assert load_vec(k.asm["gpu"]) == 1
    assert not re.search(r"ld\.global\S*\.v\d", k.asm["ptx"])
    (remark,) = k.metadata["remarks"]
    lines, first = inspect.getsourcelines(negative_wrap.fn)
    line = first + next(n for n, text in enumerate(lines) if "tl.load" in text)
    # a thread holds 2 of the 64 elements: 8-byte vectors were the index known non-negative
    assert remark.startswith(f"load at test_nv_address_sign.py:{line} moves 4-byte vectors, "
                             f"not 8-byte ones: its index is not known to be non-negative")


def test_non_negative_index_is_vectorized_from_the_middle_pointer():
    k = compile_sm90(shifted_wrap)
    assert load_vec(k.asm["gpu"]) == 2  # 64 elements over 32 threads
    assert re.search(r"ld\.global\S*\.v2", k.asm["ptx"])
    assert k.metadata["remarks"] == []
