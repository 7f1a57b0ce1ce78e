"""The AMD stream pipeliner (pass ``stream_pipeline``) executed on the SIMT simulator: a K loop
of MFMAs with num_stages 1..4, K a multiple of the block and not, compared with numpy; the
GPU IR shows the LDS ring it built."""
import numpy as np
import pytest

import naiad
import naiad.language as tl

import simt_backend


@pytest.fixture(scope="module", autouse=True)
def simt_plugin():
    simt_backend.ensure_registered()


@naiad.jit
def k_loop_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("k", [96, 72, 16])
def test_pipelined_k_loop_matches_numpy(stages, k):
    rng = np.random.default_rng(stages * 100 + k)
    m, n = 64, 32
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        k_loop_matmul[(2,)](a, b, c, m, n, k, BM=32, BN=32, BK=32, num_warps=2,
                            num_stages=stages)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.parametrize("stages, slots", [(2, 1), (3, 2), (4, 3)])
def test_ring_ops_in_gpu_ir(stages, slots):
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=32, BN=32, BK=32),
                        target="simt:gfx942",
                        options={"num_warps": 2, "num_stages": stages}).asm["gpu"]
    assert gpu.count("matrix_ring_store") == 1
    assert gpu.count("matrix_mma_ring") == 1 and "matrix_mma " not in gpu
    ring = 2 * 32 * 32 * 2  # A and B tiles of 32x32 fp16 per slot
    assert f"scratch = {ring * slots}, slots = {slots}" in gpu


def test_one_stage_leaves_the_loop_alone():
    """num_stages 1: no ring; A and B staged one after the other through one 2 KiB buffer (the
    execution above, stages 1, checks that B never overwrites A before every wave read it)."""
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=32, BN=32, BK=32),
                        target="simt:gfx942", options={"num_warps": 2, "num_stages": 1}).asm["gpu"]
    assert "matrix_ring" not in gpu and "matrix_mma " in gpu
    assert "one_buffer = true, scratch = 2048" in gpu


@pytest.mark.parametrize("stages", [2, 3])
def test_ping_pong_on_eight_warps_matches_numpy(stages):
    """gfx942, 8 warps: block ping-pong (the upper half of the waves one phase behind, barriers
    counted as the hardware counts them) still reads every tile after all its writes."""
    rng = np.random.default_rng(11 + stages)
    m, n, k = 64, 64, 80
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        k_loop_matmul[(1,)](a, b, c, m, n, k, BM=64, BN=64, BK=16, num_warps=8,
                            num_stages=stages)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=64, BN=64, BK=16),
                        target="simt:gfx942",
                        options={"num_warps": 8, "num_stages": stages}).asm["gpu"]
    assert "ping_pong = true" in gpu and "slots = 2" in gpu
    assert gpu.index("amd.cond_barrier {group = 1}") < gpu.index(" for ") < \
        gpu.index("amd.cond_barrier {group = 0}")


def test_ping_pong_with_a_one_slot_ring_matches_numpy():
    """Two 64 KiB slots do not fit the simulated gfx942's LDS: one slot, four phases."""
    rng = np.random.default_rng(5)
    m, n, k = 128, 128, 256
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        k_loop_matmul[(1,)](a, b, c, m, n, k, BM=128, BN=128, BK=128, num_warps=8,
                            num_stages=2)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=128, BN=128, BK=128),
                        target="simt:gfx942",
                        options={"num_warps": 8, "num_stages": 2}).asm["gpu"]
    assert "ping_pong = true" in gpu and "slots = 1" in gpu and "scratch = 65536" in gpu


@pytest.mark.parametrize("bm, bn, bk, k, slots", [(64, 64, 32, 80, 2), (128, 64, 128, 384, 1)])
def test_ping_pong_a_k_range_at_a_time_matches_numpy(monkeypatch, tmp_path, bm, bn, bk, k,
                                                     slots):
    """A register budget too small for a whole tile's fragments: the memory phases read one K
    range each (``k_groups``), alternating with that range's MFMAs; the upper half of the waves
    one phase behind still reads every tile after all its writes."""
    from naiad_amd.passes import block_ping_pong as pp

    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path))
    real = pp.fitting_k_groups
    monkeypatch.setattr(pp, "fitting_k_groups", lambda ring, budget:
                        real(ring, pp.registers_held(ring, 2)))
    rng = np.random.default_rng(bk + k)
    m, n = bm, bn
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        k_loop_matmul[(1,)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, num_warps=8, num_stages=2)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=bm, BN=bn, BK=bk),
                        target="simt:gfx942",
                        options={"num_warps": 8, "num_stages": 2}).asm["gpu"]
    assert "ping_pong = true" in gpu and "k_groups = 2" in gpu and f"slots = {slots}" in gpu


@naiad.jit
def ranged_matmul(a_ptr, b_ptr, c_ptr, K, N: tl.constexpr, BK: tl.constexpr,
                  STAGES: tl.constexpr):
    rm, rn, rk = tl.arange(0, 32), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.zeros((32, N), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("loop_stages, slots", [(1, None), (2, 1), (3, 2)])
def test_tl_range_num_stages_overrides_the_option(loop_stages, slots):
    rng = np.random.default_rng(loop_stages)
    a = rng.uniform(-1, 1, (32, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
    c = np.full((32, 32), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        ranged_matmul[(1,)](a, b, c, 64, N=32, BK=16, STAGES=loop_stages, num_warps=1,
                            num_stages=4)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(ranged_matmul, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                  "c_ptr": "*fp32", "K": "i32"},
                        constexprs=dict(N=32, BK=16, STAGES=loop_stages), target="simt:gfx942",
                        options={"num_warps": 1, "num_stages": 4}).asm["gpu"]
    if slots is None:
        assert "matrix_ring" not in gpu
    else:
        assert f"slots = {slots}" in gpu


@pytest.mark.parametrize("arch, options", [("gfx942", {"kpack": 2}),
                                           ("gfx942", {"matrix_instr_nonkdim": 16}),
                                           ("gfx1100", {}), ("gfx950", {})])
def test_pipelined_loop_with_other_instructions(arch, options):
    rng = np.random.default_rng(17)
    m, n, k = 32, 32, 112
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        k_loop_matmul[(1,)](a, b, c, m, n, k, BM=32, BN=32, BK=32, num_warps=2, num_stages=3,
                            **options)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(k_loop_matmul, signature=SIG, constexprs=dict(BM=32, BN=32, BK=32),
                        target=f"simt:{arch}",
                        options={"num_warps": 2, "num_stages": 3, **options}).asm["gpu"]
    assert "matrix_mma_ring" in gpu and "slots = 2" in gpu
