"""The bank swizzle of layout conversions through shared memory (naiad.gpu.lower.shared).

A conversion writes its source and reads its view at the same swizzled positions: the swizzle
must be a permutation of the buffer that keeps each side's vectors whole, and must not add
bank conflicts on either side (it removes the row-major order's, e.g. a transposition's).
Numerics run on the CPU SIMT device against numpy with poisoned outputs.
"""
import numpy as np
import pytest

from naiad.gpu.layouts import BlockedLayout, linear_of
from naiad.gpu.lower import shared
from naiad.gpu.lower.shared import bank_swizzle, run_length, swizzle_index, swizzled
from simt import run
from gpu_kernels import trans_kernel

RNG = np.random.default_rng(4321)


def wavefronts(ll, size: int) -> int:
    """Shared-memory passes all of a layout's accesses take (32 banks of 4 bytes; an access
    of w bytes is served 32 / (w/4) lanes at a time; lanes on the same word share a pass)."""
    run_ = run_length(ll, size)
    width = run_ * size
    per = 32 // max(1, width // 4)
    lanes = ll.in_size("lane")
    total = 0
    for w in range(ll.in_size("warp")):
        for r in range(0, ll.in_size("register"), run_):
            for first in range(0, lanes, per):
                banks: dict[int, set] = {}
                for lane in range(first, min(lanes, first + per)):
                    byte = ll.apply_flat(register=r, lane=lane, warp=w) * size
                    for word in range(byte // 4, (byte + width + 3) // 4):
                        banks.setdefault(word % 32, set()).add(word)
                total += max(len(v) for v in banks.values())
    return total


def blocked(spt, tpw, wpc, order, shape):
    return linear_of(BlockedLayout(spt, tpw, wpc, order), shape)


ROW = ((1, 8), (4, 8), (4, 1), (1, 0))       # 16-byte fp16 vectors along rows
COL = ((8, 1), (8, 4), (1, 4), (0, 1))       # the same, down columns
ROW4 = ((1, 4), (2, 16), (4, 1), (1, 0))
ONE = ((1, 1), (1, 32), (4, 1), (1, 0))      # one element a thread, lanes along a row
DOWN = ((1, 1), (32, 1), (1, 4), (0, 1))     # one element a thread, lanes down a column
PAIRS = [(ROW, COL), (COL, ROW), (ROW4, COL), (ONE, DOWN), (DOWN, ONE), (ROW, DOWN)]
SHAPES = [(64, 64), (32, 128), (128, 32), (64, 256)]


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_swizzle_is_a_permutation_that_keeps_vectors(pair, shape, size):
    src, view = (blocked(*p, shape) for p in pair)
    pairs = bank_swizzle(src, view, size)
    n = src.numel
    assert sorted(swizzle_index(i, pairs) for i in range(n)) == list(range(n))
    for ll in (src, view):
        vec = run_length(ll, size)
        moved = swizzled(ll, pairs)
        assert run_length(moved, size) == vec
        for r in range(0, ll.in_size("register"), vec):
            first = moved.apply_flat(register=r, lane=5 % ll.in_size("lane"))
            assert first % vec == 0
            assert [moved.apply_flat(register=r + i, lane=5 % ll.in_size("lane"))
                    for i in range(vec)] == list(range(first, first + vec))


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_swizzle_never_adds_bank_conflicts(pair, shape, size):
    src, view = (blocked(*p, shape) for p in pair)
    pairs = bank_swizzle(src, view, size)
    for ll in (src, view):
        assert wavefronts(swizzled(ll, pairs), size) <= wavefronts(ll, size)


@pytest.mark.parametrize("size", [2, 4])
def test_transposition_loses_its_conflicts(size):
    src, view = blocked(*ROW, (64, 64)), blocked(*COL, (64, 64))
    pairs = bank_swizzle(src, view, size)
    assert pairs
    before, after = wavefronts(view, size), wavefronts(swizzled(view, pairs), size)
    assert after * 4 <= before, (before, after)


def test_conflict_free_sides_are_left_alone():
    src, view = blocked(*ROW, (64, 64)), blocked(*ROW4, (64, 64))
    assert bank_swizzle(src, view, 2) == []


@pytest.mark.parametrize("shape", [(64, 64), (32, 128), (16, 32)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_swizzled_transposition_on_simt(monkeypatch, shape, dtype):
    used = []

    def recording(src, view, size):
        pairs = bank_swizzle(src, view, size)
        used.append(pairs)
        return pairs

    monkeypatch.setattr(shared, "bank_swizzle", recording)
    x = (RNG.integers(-100, 100, size=shape) if dtype == "int8"
         else RNG.uniform(-2, 2, size=shape)).astype(dtype)
    out = np.full(shape[::-1], -77 if dtype == "int8" else np.nan, dtype)
    run(trans_kernel, (1,), [x, out], {"M": shape[0], "N": shape[1]}, warp_size=32,
        num_warps=4, specialization={"x_ptr": {"divisibility": 16},
                                     "out_ptr": {"divisibility": 16}})
    assert any(used), "the conversion should have been swizzled"
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("shape,warps,size", [((128, 256), (8, 1), 2), ((128, 128), (4, 1), 2),
                                              ((128, 128), (4, 2), 4), ((64, 64), (2, 2), 2)])
def test_mma_accumulator_epilogue_is_conflict_free(shape, warps, size):
    """The matmul epilogue's conversion (NVIDIA's MMA accumulator -> the store's 16-byte row
    vectors): row-major, each 4-byte pair write meets 8 rows in the same 4 banks; swizzled,
    every write and read takes the fewest passes its bytes allow."""
    mma_layout = pytest.importorskip("naiad_nvidia.ir.mma_layout")
    mma = linear_of(mma_layout.NvidiaMmaLayout(2, warps, (16, 8)), shape)
    nw = warps[0] * warps[1]
    across = min(32, shape[1] * size // 16)          # lanes along a row of 16-byte vectors
    rows = blocked((1, 16 // size), (32 // across, across), (nw, 1), (1, 0), shape)
    pairs = bank_swizzle(mma, rows, size)
    fewest = shape[0] * shape[1] * size // 128      # bytes of all warps / 128 per pass
    assert wavefronts(mma, size) >= 4 * fewest      # what the swizzle removes
    assert wavefronts(swizzled(mma, pairs), size) == fewest
    assert wavefronts(swizzled(rows, pairs), size) == fewest
