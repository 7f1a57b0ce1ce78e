"""Loads of loops that ask for stages, streamed through a thread-private cp.async ring
(naiad_nvidia.passes.stream_loads): GPU IR, shared memory and PTX without a GPU; results on the
device (``gpu`` tests, skipped here).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl

ALIGNED = {"divisibility": 16}


@naiad.jit
def row_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                STAGES: tl.constexpr):
    """Tutorial 02's persistent shape: rows strided by the number of programs."""
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@naiad.jit
def row_scale(out_ptr, in_ptr, w_ptr, n_rows, N: tl.constexpr, STAGES: tl.constexpr):
    """Two streamed loads per iteration (fp16 x and a per-row weight row), constant step."""
    cols = tl.arange(0, N)
    for row in tl.range(0, n_rows, 1, num_stages=STAGES):
        x = tl.load(in_ptr + row * N + cols)
        w = tl.load(w_ptr + row * N + cols)
        tl.store(out_ptr + row * N + cols, (x.to(tl.float32) * w.to(tl.float32)).to(tl.float16))


@naiad.jit
def carried_pointer(out_ptr, in_ptr, n_rows, N: tl.constexpr):
    """The address depends on a loop-carried pointer: not streamed."""
    cols = tl.arange(0, N)
    p = in_ptr
    for row in tl.range(0, n_rows, 1, num_stages=3):
        tl.store(out_ptr + row * N + cols, tl.load(p + cols))
        p += N


SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
               "n_rows": "i32", "n_cols": "i32"}
ALIGNED_SOFTMAX = {n: ALIGNED for n in ("out_ptr", "in_ptr", "in_stride", "out_stride",
                                        "n_cols")}


def _softmax(block=4096, stages=4, warps=8):
    return naiad.compile(row_softmax, SOFTMAX_SIG, {"BLOCK": block, "STAGES": stages},
                         target="nvidia:sm_90", options={"num_warps": warps},
                         specialization=ALIGNED_SOFTMAX)


def _loop_ptx(ptx: str) -> str:
    """The PTX between the loop's first label and its back edge."""
    start = ptx.index("cp.async.wait_group")
    return ptx[start:ptx.rindex("cp.async.wait_group")]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_softmax_rows_stream_through_a_private_ring(stages):
    k = _softmax(stages=stages)
    gpu = k.asm["gpu"]
    # D = stages - 1 tiles ahead: D prologue copies, one per iteration
    assert gpu.count("nvidia.stream_copy") == stages
    assert gpu.count("nvidia.stream_read") == 1
    assert re.search(rf"nvidia.cp_async_wait .*pending = {stages - 2}\b", gpu)
    # the ring sits above the reductions' scratch: D slots of 4096 floats
    scratch = max(int(s) for s in re.findall(r"scratch = (\d+)", gpu))
    ring = (stages - 1) * 4096 * 4
    assert k.metadata["shared"] == (scratch + 15) // 16 * 16 + ring
    ptx = k.asm["ptx"]
    assert ptx.count("cp.async.cg.shared.global") == 4 * stages   # 4 chunks of 16 bytes
    assert "ld.global" not in ptx                                 # every row comes by copy
    body = _loop_ptx(ptx)
    assert body.count("ld.shared.v4.b32") >= 4
    assert f"cp.async.wait_group {stages - 2};" in ptx


def test_loops_without_stages_keep_their_loads():
    @naiad.jit
    def plain(out_ptr, in_ptr, n_rows, N: tl.constexpr):
        cols = tl.arange(0, N)
        for row in range(0, n_rows):
            tl.store(out_ptr + row * N + cols, tl.load(in_ptr + row * N + cols) * 2.0)

    k = naiad.compile(plain, {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_rows": "i32"},
                      {"N": 512}, target="nvidia:sm_90",
                      specialization={"out_ptr": ALIGNED, "in_ptr": ALIGNED})
    assert "stream" not in k.asm["gpu"] and "cp.async" not in k.asm["ptx"]


def test_carried_addresses_are_not_streamed():
    k = naiad.compile(carried_pointer, {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_rows": "i32"},
                      {"N": 512}, target="nvidia:sm_90",
                      specialization={"out_ptr": ALIGNED, "in_ptr": ALIGNED})
    assert "stream_copy" not in k.asm["gpu"]
    assert "ld.global" in k.asm["ptx"]


@naiad.jit
def counted_rows(out_ptr, in_ptr, count_ptr, n_rows, N: tl.constexpr):
    """An atomic in the loop: programs may synchronise through it, so loads stay in place."""
    cols = tl.arange(0, N)
    for row in tl.range(0, n_rows, 1, num_stages=3):
        tl.store(out_ptr + row * N + cols, tl.load(in_ptr + row * N + cols))
        tl.atomic_add(count_ptr, 1)


def test_loops_with_atomics_are_not_streamed():
    k = naiad.compile(counted_rows, {"out_ptr": "*fp32", "in_ptr": "*fp32", "count_ptr": "*i32",
                                     "n_rows": "i32"}, {"N": 512}, target="nvidia:sm_90",
                      specialization={"out_ptr": ALIGNED, "in_ptr": ALIGNED})
    assert "stream_copy" not in k.asm["gpu"]
    assert "ld.global" in k.asm["ptx"]


def test_two_fp16_loads_share_each_slot():
    k = naiad.compile(row_scale, {"out_ptr": "*fp16", "in_ptr": "*fp16", "w_ptr": "*fp16",
                                  "n_rows": "i32"}, {"N": 1024, "STAGES": 3},
                      target="nvidia:sm_90", options={"num_warps": 4},
                      specialization={n: ALIGNED for n in ("out_ptr", "in_ptr", "w_ptr")})
    gpu = k.asm["gpu"]
    assert gpu.count("nvidia.stream_read") == 2
    # 2 slots, each holding both 1024-element fp16 tiles
    assert k.metadata["shared"] == 2 * 2 * 1024 * 2
    # a constant positive step: "the iteration exists" is a plain compare, no sign test
    assert "pred = \"gt\"" not in gpu
    assert "cp.async.cg.shared.global" in k.asm["ptx"]


def test_unaligned_rows_copy_4_byte_chunks():
    """Without divisibility facts the f32 chunks are single elements: cp.async.ca of 4 bytes."""
    k = naiad.compile(row_softmax, SOFTMAX_SIG, {"BLOCK": 1024, "STAGES": 2},
                      target="nvidia:sm_90", options={"num_warps": 4})
    ptx = k.asm["ptx"]
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;", ptx)
    assert "cp.async.cg" not in ptx


def test_unaligned_fp16_rows_are_not_streamed_and_say_why():
    """2-byte chunks (fp16 with no alignment facts) are below cp.async's 4 bytes: the loads
    stay where they are, and each gets a remark at its own source line."""
    k = naiad.compile(row_scale, {"out_ptr": "*fp16", "in_ptr": "*fp16", "w_ptr": "*fp16",
                                  "n_rows": "i32"}, {"N": 1024, "STAGES": 3},
                      target="nvidia:sm_90", options={"num_warps": 4})
    assert "stream_copy" not in k.asm["gpu"] and "cp.async" not in k.asm["ptx"]
    lines = [i + 1 for i, text in enumerate(open(__file__).read().splitlines())
             if "= tl.load(" in text and ("x = " in text or "w = " in text)
             and "row * N" in text]
    got = k.metadata["remarks"]
    assert len(got) == 2, got
    for line, text in zip(lines[:2], got):
        assert text.startswith(f"load at test_nv_stream_loads.py:{line} is not prefetched")
        assert "1 element(s) = 2 B" in text and "multiple of 16" in text


def test_aligned_streamed_loops_have_no_remark():
    assert _softmax().metadata["remarks"] == []


@naiad.jit
def wide_rows(out_ptr, a_ptr, b_ptr, n_rows, N: tl.constexpr):
    """Two 128 KiB rows per iteration: one stage needs more shared memory than sm_90 has."""
    cols = tl.arange(0, N)
    for row in tl.range(0, n_rows, 1, num_stages=2):
        s = tl.sum(tl.load(a_ptr + row * N + cols) + tl.load(b_ptr + row * N + cols), axis=0)
        tl.store(out_ptr + row, s)


def test_a_stage_over_the_shared_budget_says_why():
    k = naiad.compile(wide_rows, {"out_ptr": "*fp32", "a_ptr": "*fp32", "b_ptr": "*fp32",
                                  "n_rows": "i32"}, {"N": 32768}, target="nvidia:sm_90",
                      options={"num_warps": 32},
                      specialization={n: ALIGNED for n in ("out_ptr", "a_ptr", "b_ptr")})
    assert "stream_copy" not in k.asm["gpu"]
    (text,) = k.metadata["remarks"]
    assert "is not prefetched" in text and "needs 262144 B of shared memory" in text


def test_warmup_gives_the_tutorials_occupancy_inputs():
    """Tutorial 02 computes its grid from ``warmup(...).n_regs`` and ``.metadata.shared``: the
    registers are ptxas's (the same PTX linked again gives the same count) and the shared
    memory includes the ring the launch will request."""
    from naiad_nvidia.toolchain import parse_resource_report, ptx_to_cubin

    x = np.random.default_rng(2).standard_normal((64, 4096)).astype(np.float32)
    y = np.full_like(x, np.nan)
    k = row_softmax.warmup(y, x, 4096, 4096, 64, 4096, BLOCK=4096, STAGES=4, num_warps=8,
                           grid=(1,), target="nvidia:sm_90")
    _, log = ptx_to_cubin(k.asm["ptx"], "sm_90")
    assert k.n_regs == parse_resource_report(log, "row_softmax")["registers"] > 0
    scratch = max(int(s) for s in re.findall(r"scratch = (\d+)", k.asm["gpu"]))
    assert k.metadata.shared == (scratch + 15) // 16 * 16 + 3 * 4096 * 4
    assert np.isnan(y).all()          # warmup compiles, it does not launch


# -- on the device -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("n_rows,n_cols,programs,stages", [
    (1000, 781, 7, 4),      # masked columns, rows not a multiple of the programs
    (64, 4096, 64, 4),      # one row per program: only the prologue copies
    (300, 1024, 132, 3),
    (5, 100, 8, 2),         # more programs than rows: some run no iteration
])
def test_streamed_softmax_on_gpu(n_rows, n_cols, programs, stages):
    rng = np.random.default_rng(n_rows + n_cols)
    x = (rng.standard_normal((n_rows, n_cols)) * 4).astype(np.float32)
    y = naiad.to_device(np.full((n_rows, n_cols), np.nan, np.float32))
    block = 1 << (n_cols - 1).bit_length()
    kern = row_softmax[(programs,)](y, naiad.to_device(x), n_cols, n_cols, n_rows, n_cols,
                                    BLOCK=block, STAGES=stages, num_warps=8)
    assert "nvidia.stream_read" in kern.asm["gpu"]
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.gpu
def test_streamed_fp16_rows_on_gpu():
    rng = np.random.default_rng(7)
    n_rows, n = 777, 1024
    x = rng.standard_normal((n_rows, n)).astype(np.float16)
    w = rng.standard_normal((n_rows, n)).astype(np.float16)
    out = naiad.to_device(np.full((n_rows, n), np.nan, np.float16))
    row_scale[(1,)](out, naiad.to_device(x), naiad.to_device(w), n_rows, N=n, STAGES=3,
                    num_warps=4)
    want = (x.astype(np.float32) * w.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out.numpy(), want)


def test_streaming_keeps_the_registers_of_the_plain_loop():
    """The rows wait in shared memory, not registers (a row is 16 registers a thread here);
    the read selects ``other`` once per chunk (the mask is uniform over it). What remains is
    the copies' scalars (next row's offset, slot, predicate) and ptxas's allocation noise: 36 ->
    48 since ``/`` and ``tl.exp`` are Triton's fast sequences (56 -> 62 with the exact ones), below
    the 16 more that one row held in registers would take (48 for the three rows in flight)."""
    plain, streamed = _softmax(stages=1), _softmax(stages=4)
    assert "stream" not in plain.asm["gpu"]
    assert streamed.n_regs < plain.n_regs + 16
    body = _loop_ptx(streamed.asm["ptx"])
    assert body.count("setp.lt.s32") <= 8     # one mask compare per 16-byte chunk, not per element
