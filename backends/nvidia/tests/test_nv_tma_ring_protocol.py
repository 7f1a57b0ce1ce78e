"""The single-dot TMA ring's mbarrier protocol (``passes/async_copy_pipeline.py``,
``passes/tma_persistent.py``) checked by the executable model (:mod:`mbarrier_model`) without a
GPU: two ring loops one after the other in a block (the same misplaced init as issue 9's
attention hang: the second loop used mbarriers the first had invalidated), and the ring carried
across a persistent loop's tiles (phases carried from tile to tile).
"""
from __future__ import annotations

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad_nvidia.runtime.tensor_map import tensor_map_args

import mbarrier_model as model
from test_nv_tma import (_desc, _host, compile_companion, matmul_blocks,
                         persistent_tma_matmul)


@naiad.jit
def two_loop_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
    """C = A @ B.T with K split over two loops in one block (each a TMA ring)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    half = tl.cdiv(K, BK) // 2
    for k in range(0, half):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    for k in range(half, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


def matmul_args(m, n, k, blocks) -> dict:
    """Scalar arguments and host maps of a launch of the descriptor matmuls."""
    args = dict(M=m, N=n, K=k)
    shapes = {"a_desc": (m, k), "b_desc": (n, k), "c_desc": (m, n)}
    for d, block in blocks.items():
        rows, cols = shapes[d]
        t = tensor_map_args("fp16", 0, [rows, cols], [cols, 1], list(block))
        args[f"{d}__tensor_map"] = model.MapInfo(t.box_dims, 2)
        args.update({f"{d}__shape_0": rows, f"{d}__shape_1": cols, f"{d}__stride_0": cols,
                     f"{d}__stride_1": 1})
    return args


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_two_ring_loops_each_initialise_their_mbarriers(stages):
    blocks = matmul_blocks(128, 128, 64)
    k = compile_companion(two_loop_matmul, blocks, dict(BM=128, BN=128, BK=64),
                          options={"num_warps": 4, "num_stages": stages})
    fn = model.kernel_function(k)
    top = [o.name for o in fn.body.block.ops]
    loops = [i for i, name in enumerate(top) if name == "for"]
    assert len(loops) == 2
    # init, loop, release, init, loop, release
    marks = [n for n in top if n in ("nvidia.tma_init", "for", "nvidia.tma_release")]
    assert marks == ["nvidia.tma_init", "for", "nvidia.tma_release"] * 2
    # K = 1040: 17 blocks (the last partial), 8 then 9; one mbarrier phase per iteration
    trace = model.run_programs(fn, matmul_args(512, 256, 1040, blocks), (4, 2),
                               [(0, 0, 0), (3, 1, 0)], k.metadata["shared"])
    assert trace.phases == trace.waits == 2 * 17 and trace.copies == 2 * trace.phases
    assert trace.inits == 2 * 2


@pytest.mark.parametrize("stages", [3, 4])
def test_persistent_ring_carries_its_phases_across_tiles(stages):
    """Tutorial 09's shape: 7 programs over 6 x 4 output tiles, K = 1000 (16 blocks)."""
    blocks = matmul_blocks(128, 128, 64)
    k = compile_companion(persistent_tma_matmul, blocks, dict(BM=128, BN=128, BK=64),
                          options={"num_warps": 4, "num_stages": stages})
    assert "resident_ring" in k.asm["gpu"]
    fn = model.kernel_function(k)
    trace = model.run_programs(fn, matmul_args(768, 512, 1000, blocks), (7,),
                               [(p, 0, 0) for p in range(7)], k.metadata["shared"])
    assert trace.inits == 7 and trace.phases == 24 * 16


# -- on the H200 ----------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
def test_two_loop_matmul_on_gpu(stages):
    """Passed on the H200 from the seventh session on (bench/RESULTS.md); skips without a GPU."""
    m, n, k = 300, 200, 1040
    rng = np.random.default_rng(stages + 31)
    a, b = _host("float16", (m, k), rng), _host("float16", (n, k), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    da, db = naiad.to_device(a), naiad.to_device(b)
    kern = two_loop_matmul[(naiad.cdiv(m, 128), naiad.cdiv(n, 128))](
        _desc(da, (128, 64)), _desc(db, (128, 64)), _desc(c, (128, 128)), m, n, k, BM=128,
        BN=128, BK=64, num_warps=4, num_stages=stages)
    assert kern.asm["gpu"].count("nvidia.tma_init") == 2, kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * k ** 0.5)
