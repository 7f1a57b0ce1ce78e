"""Layout conversions through shared memory in passes (naiad.gpu.movement.slice_bits, the
allocation's ``scratch_slices``, naiad.gpu.lower.shared.through_shared).

A conversion whose tile would be the largest user of the shared-memory buffer moves it in
slices instead -- index bits that only registers set on both sides -- so the buffer is no
larger than the kernel's other users (a matmul's copy ring): the conversion in a matmul's
epilogue then no longer sets how many programs share an SM. Each pass's buffer must be filled
exactly once by the writers and read back by the readers of that slice; numerics run on the
CPU SIMT device against numpy with poisoned outputs.
"""
import itertools
import re

import numpy as np
import pytest

import naiad.language as tl
from naiad.gpu.layouts import BlockedLayout, linear_of
from naiad.gpu.lower import shared
from naiad.gpu.movement import SLICE_ATTR, scratch_bytes, slice_bits, slice_of, without_bits
from naiad.gpu.passes import allocate_shared
from naiad.ir.parser import parse_module
from gpu_kernels import dot_kernel
from simt import run

RNG = np.random.default_rng(2468)

ROW = ((1, 8), (4, 8), (4, 1), (1, 0))       # 16-byte fp16 vectors along rows, 16 rows a pass
ROW4 = ((1, 4), (2, 16), (4, 1), (1, 0))     # 8-byte vectors, 8 rows a pass
COL = ((8, 1), (8, 4), (1, 4), (0, 1))       # 16-byte vectors down columns


def blocked(spt, tpw, wpc, order, shape):
    return linear_of(BlockedLayout(spt, tpw, wpc, order), shape)


def test_slice_bits_are_what_only_registers_of_both_sides_set():
    # (128, 64), row-major index = row * 64 + col: ROW's threads cover rows 0-15 and ROW4's
    # rows 0-7 (columns all), so rows 16, 32 and 64 (index bits 10-12) are registers on
    # both sides; rows 8 (bit 9) is one of ROW's warps
    src, view = blocked(*ROW, (128, 64)), blocked(*ROW4, (128, 64))
    assert slice_bits(src, view, 2) == [12, 11, 10]


def test_a_transposition_cannot_run_in_passes():
    # every index bit is some thread's on one side or the other
    assert slice_bits(blocked(*ROW, (64, 64)), blocked(*COL, (64, 64)), 2) == []


@pytest.mark.parametrize("k", [1, 2, 3])
def test_each_pass_fills_its_buffer_exactly_once(k):
    src, view = blocked(*ROW, (128, 64)), blocked(*ROW4, (128, 64))
    bits = slice_bits(src, view, 2)[:k]
    for ll in (src, view):
        inner = without_bits(ll, bits)
        assert inner.numel == ll.numel >> k
        for part in itertools.product((0, 1), repeat=k):
            regs = [r for r in range(ll.in_size("register"))
                    if slice_of(ll.apply_flat(register=r), bits) == part]
            placed = []
            for r in regs:
                for lane in range(ll.in_size("lane")):
                    for warp in range(ll.in_size("warp")):
                        flat = ll.apply_flat(register=r, lane=lane, warp=warp)
                        assert slice_of(flat, bits) == part   # the register decides
                        placed.append(inner.apply_flat(register=r, lane=lane, warp=warp))
            assert sorted(placed) == list(range(inner.numel))


def _operands(m, n, k):
    a = RNG.uniform(-1, 1, (m, k)).astype(np.float16)
    b = RNG.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    return a, b, c


def test_fma_dot_epilogue_runs_in_passes_on_simt(monkeypatch):
    """The FMA dot's operands go through shared memory (the other user); its accumulator's
    conversion for the store, twice that size, runs in passes through a buffer no larger."""
    passes = []
    inner = shared._in_passes

    def recording(kl, vals, src, view, elem, slices):
        passes.append((src.numel, slices))
        return inner(kl, vals, src, view, elem, slices)

    monkeypatch.setattr(shared, "_in_passes", recording)
    m, n, k = 64, 32, 16
    a, b, c = _operands(m, n, k)
    kern = run(dot_kernel, (1,), [a, b, c], {"M": m, "N": n, "K": k, "OUT": tl.float32},
               num_warps=2)
    assert passes and all(s >= 1 for _, s in passes), passes
    assert not np.isnan(c).any(), "unwritten output elements"
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-5 * k)
    sizes = [int(x) for x in re.findall(r"scratch = (\d+)", kern.lowered.gpu_text)]
    # the buffer is the largest user's, no longer the whole accumulator's
    assert kern.lowered.shared_bytes == max(sizes) < m * n * 4


def test_allocation_slices_only_down_to_the_other_users():
    """Alone, the conversion keeps one pass; beside a smaller user, it takes the fewest
    passes that bring it to that user's size."""
    m, n, k = 64, 32, 16
    a, b, c = _operands(m, n, k)
    kern = run(dot_kernel, (1,), [a, b, c], {"M": m, "N": n, "K": k, "OUT": tl.float32},
               num_warps=2)
    module = parse_module(kern.lowered.gpu_text)
    ops = [op for f in module.functions.values() for op in f.walk() if op.attrs.get("scratch")]
    conversions = [op for op in ops if SLICE_ATTR in op.attrs]
    others = [op for op in ops if SLICE_ATTR not in op.attrs]
    assert len(conversions) == 1 and others
    conv = conversions[0]
    del conv.attrs[SLICE_ATTR]
    whole = scratch_bytes(conv)
    assert whole == m * n * 4
    [(_, alone)] = allocate_shared._slice_large_gathers([(conv, whole)])
    assert alone == whole and SLICE_ATTR not in conv.attrs
    rest = max(scratch_bytes(op) for op in others)
    users = [(conv, whole)] + [(op, scratch_bytes(op)) for op in others]
    got = dict((id(op), size) for op, size in allocate_shared._slice_large_gathers(users))
    passes = conv.attrs[SLICE_ATTR]
    assert got[id(conv)] == whole >> passes <= rest < whole >> (passes - 1)
