"""A TMA ring carried across the tiles of a persistent loop (naiad_nvidia.passes.tma_persistent).

Without a GPU: the compiled kernel's GPU IR puts the mbarriers' init/release outside the tile
loop, carries the ring's slot and phase through it, issues the next tile's first copies
before this tile's epilogue (after every warp is done with the slots), and keeps the ring in
a buffer of its own, away from the epilogue's store buffer; where it cannot, a remark at the
tile loop says why. On the H200 (``gpu`` tests): numerics against numpy with poisoned outputs,
for M, N not multiples of the block, tile counts not multiples of the program count, more
programs than tiles, and K < BK.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl

from test_nv_tma import _desc, _host, compile_companion, matmul_blocks, persistent_tma_matmul


@naiad.jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP: tl.constexpr):
    """Grouped tile order (GROUP rows of tiles at a time), as tutorial 09 walks them."""
    per_group = GROUP * tiles_n
    first_m = (tile // per_group) * GROUP
    rows = min(tiles_m - first_m, GROUP)
    return first_m + (tile % rows), (tile % per_group) // rows


@naiad.jit
def grouped_persistent_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                              SUBTILE: tl.constexpr, PROGRAMS: tl.constexpr):
    """Tutorial 09's TMA persistent matmul in shape: constant program count, a flattened tile
    loop, grouped tile order, the epilogue optionally split into two half-width stores."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        if SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BM, pid_n * BN], left.to(tl.float16))
            c_desc.store([pid_m * BM, pid_n * BN + BN // 2], right.to(tl.float16))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@naiad.jit
def listed_tiles_matmul(a_desc, b_desc, c_desc, order_ptr, count, K, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr):
    """Tiles taken from a list in memory: the next tile's addresses need a load."""
    for i in range(tl.program_id(0), count, tl.num_programs(0)):
        tile = tl.load(order_ptr + i)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K, BK)):
            a = a_desc.load([(tile // 8) * BM, k * BK])
            b = b_desc.load([(tile % 8) * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([(tile // 8) * BM, (tile % 8) * BN], acc.to(tl.float16))


@naiad.jit
def while_tiles_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """The tile loop as a ``while``."""
    tiles_n = tl.cdiv(N, BN)
    tile = tl.program_id(0)
    while tile < tl.cdiv(M, BM) * tiles_n:
        row = (tile // tiles_n) * BM
        col = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K, BK)):
            a = a_desc.load([row, k * BK])
            b = b_desc.load([col, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([row, col], acc.to(tl.float16))
        tile += tl.num_programs(0)


@naiad.jit
def pointer_persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr):
    """A persistent matmul on pointers (tutorial 09's matmul_persistent in shape)."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        rm = (tile // tiles_n) * BM + tl.arange(0, BM)
        rn = (tile % tiles_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def _grouped(bm, bn, bk, subtile, warps=4, stages=3, programs=132):
    blocks = matmul_blocks(bm, bn, bk)
    blocks["c_desc"] = (bm, bn // 2 if subtile else bn)
    return compile_companion(grouped_persistent_matmul, blocks,
                             dict(BM=bm, BN=bn, BK=bk, GROUP=8, SUBTILE=subtile,
                                  PROGRAMS=programs),
                             options={"num_warps": warps, "num_stages": stages})


def _tile_loop(gpu: str) -> str:
    """The GPU IR from the tile loop (the first ``for`` holding another) to its end."""
    start = [m.start() for m in re.finditer(r"= for |\n\s+for ", gpu)][0]
    return gpu[start:]


def _slices(gpu: str):
    """(before the tile loop, the tile body up to the K loop, the K loop, after the K loop)."""
    start = gpu.index(_tile_loop(gpu))
    before, rest = gpu[:start], gpu[start:]
    k_at = rest.index("for ", 10)
    k_end = rest.index("yield", k_at)
    return before, rest[:k_at], rest[k_at:k_end], rest[k_end:]


@pytest.mark.parametrize("kernel", ["num_programs step", "grouped", "grouped+subtile"])
def test_ring_runs_across_tiles(kernel):
    if kernel == "num_programs step":
        k = compile_companion(persistent_tma_matmul, matmul_blocks(128, 128, 64),
                              dict(BM=128, BN=128, BK=64))
    else:
        k = _grouped(128, 128, 64, kernel.endswith("subtile"))
    assert k.metadata["remarks"] == []
    gpu = k.asm["gpu"]
    before, head, kloop, after = _slices(gpu)
    # mbarriers once per program; the first tile's two slots filled before the tile loop
    assert gpu.count("nvidia.tma_init") == 1 and "nvidia.tma_init" in before
    assert gpu.count("nvidia.tma_release") == 1 and "nvidia.tma_release" in \
        gpu[gpu.rindex("yield"):]
    assert before.count("nvidia.tma_expect") == 2 and before.count("nvidia.tma_copy") == 4
    # the tile body starts no ring: its K loop begins at the carried slot and phase
    assert "nvidia.tma_expect" not in head and "nvidia.tma_init" not in head
    tile_args = re.search(r"\^\(%tile\w*: i32(.*?)\):", head).group(1)
    assert tile_args.endswith("%slot: i32, %phase: i32")
    k_for = kloop[:kloop.index("{")]
    assert k_for.rstrip(" :i32,").split(", ")[-2:] in (["%slot", "%phase"],) or \
        re.search(r"%slot, %phase : ", k_for), k_for
    # after the K loop: wait for the accumulator, a barrier, the next tile's copies, then
    # the epilogue's TMA store(s); the tile loop yields the K loop's slot and phase
    assert after.index("nvidia.wgmma_wait") < after.index("barrier") \
        < after.index("nvidia.tma_expect") < after.index("nvidia.tma_copy") \
        < after.index("nvidia.tma_store")
    assert after.count("nvidia.tma_expect") == 2
    last_yield = after[:after.rindex("nvidia.tma_release")].rstrip().rsplit("yield", 1)[1]
    assert len(last_yield.split(",")) == 2
    # the ring and each epilogue store buffer are buffers of their own: no two overlap
    (base,) = set(re.findall(r"ring_base = (\d+)", gpu))
    ring_bytes = int(re.search(r"nvidia.tma_init \{.*?resident_bytes = (\d+)", gpu).group(1))
    buffers = [(int(base), ring_bytes)] + [
        (int(off), int(size)) for size, off in
        re.findall(r"nvidia.tma_store .*?resident_bytes = (\d+).*?smem_offset = (\d+)", gpu)]
    assert len(buffers) == 1 + after.count("nvidia.tma_store ")
    buffers.sort()
    assert all(a + n <= b for (a, n), (b, _) in zip(buffers, buffers[1:]))
    assert all(a % 1024 == 0 for a, _ in buffers)
    assert k.metadata["shared"] >= buffers[-1][0] + buffers[-1][1]
    # deferred stores: each waits for the previous copy out of shared memory before writing
    # it, none at its end; one drain after the tile loop
    tail = gpu[gpu.rindex("yield"):]
    assert tail.index("nvidia.tma_store_drain") < tail.index("nvidia.tma_release")
    ptx = k.asm["ptx"]
    stores = after.count("nvidia.tma_store ")
    assert ptx.count("cp.async.bulk.wait_group.read 0;") == stores
    assert ptx.count("cp.async.bulk.wait_group 0;") == 1
    assert ptx.count("mbarrier.init.shared::cta.b64") == 3
    assert "ld.local" not in ptx and k.metadata["spill_bytes"] == 0


def test_stores_that_do_not_fit_beside_the_ring_stay_synchronous():
    """128x256x64 at 3 stages, subtiled: 4 ring slots of 48 KiB and two 32 KiB store buffers
    of their own would not fit; the stores keep the common buffer and wait at their end."""
    k = _grouped(128, 256, 64, True, warps=8, stages=3)
    gpu = k.asm["gpu"]
    assert k.metadata["remarks"] == [] and "ring_base" in gpu
    assert "nvidia.tma_store_drain" not in gpu
    assert re.findall(r"nvidia.tma_store .*?scratch_bytes = (\d+)", gpu) == ["32768"] * 2
    assert k.asm["ptx"].count("cp.async.bulk.wait_group.read 0;") == 2


def test_next_tile_divisions_cannot_trap():
    """The next tile's (pid_m, pid_n) divide by 1 where that tile does not exist."""
    gpu = _grouped(128, 128, 64, False).asm["gpu"]
    after = _slices(gpu)[3]
    nxt = after[after.index("barrier"):after.index("nvidia.tma_store")]
    divisions = re.findall(r"= (?:div|rem) %\w+, (%\w+)", nxt)
    assert divisions
    for divisor in divisions:
        assert re.search(rf"{divisor} = select %\w+, %\w+, %\w+ : i32", nxt), divisor


def test_tile_loop_needing_a_load_restarts_with_a_remark():
    blocks = matmul_blocks(128, 128, 64)
    kernel = listed_tiles_matmul
    from naiad.runtime.descriptor_args import _companion_class

    companion = _companion_class()(kernel, {d: 2 for d in blocks}, {d: True for d in blocks})
    sig, ce = {"order_ptr": "*i32", "count": "i32", "K": "i32"}, dict(BM=128, BN=128, BK=64)
    spec = {}
    for d, block in blocks.items():
        sig.update({f"{d}__base": "*fp16", f"{d}__shape_0": "i32", f"{d}__shape_1": "i32",
                    f"{d}__stride_0": "i64", f"{d}__stride_1": "i64",
                    f"{d}__tensor_map": "*u8"})
        spec[f"{d}__stride_1"] = {"equal_to": 1}
        ce.update({f"{d}__block": tuple(block), f"{d}__padding": "zero",
                   f"{d}__block_gcd": tuple(block)})
    k = naiad.compile(companion, signature=sig, constexprs=ce, target="nvidia:sm_90",
                      specialization=spec, options={"num_warps": 4, "num_stages": 3})
    (remark,) = k.metadata["remarks"]
    assert remark.startswith("loop at test_nv_tma_persistent.py:")
    line = int(remark.split(":")[1].split()[0])
    assert "for i in range" in open(__file__).read().splitlines()[line - 1]
    assert "restarts its TMA ring at every tile" in remark and "`load`" in remark
    # still the per-tile ring, correct as before
    tile = _tile_loop(k.asm["gpu"])
    assert tile.index("nvidia.tma_init") < tile.index("nvidia.tma_release")


def test_ring_and_epilogue_that_do_not_fit_together_restart_with_a_remark():
    # 4 slots of 48 KiB (late copies) + a 64 KiB store buffer > 227 KiB
    k = _grouped(128, 256, 64, False, warps=8, stages=4)
    (remark,) = k.metadata["remarks"]
    assert "restarts its TMA ring at every tile" in remark and "do not fit together" in remark
    assert "ring_base" not in k.asm["gpu"]


def test_while_tile_loop_restarts_with_a_remark():
    k = compile_companion(while_tiles_matmul, matmul_blocks(128, 128, 64),
                          dict(BM=128, BN=128, BK=64))
    (remark,) = k.metadata["remarks"]
    line = int(remark.split(":")[1].split()[0])
    assert "while tile <" in open(__file__).read().splitlines()[line - 1]
    assert "restarts its TMA ring at every tile" in remark and "`while` loop" in remark
    assert "ring_base" not in k.asm["gpu"]


def test_cp_async_ring_in_a_tile_loop_says_it_restarts():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32"}
    spec = {n: {"divisibility": 16} for n in sig}
    k = naiad.compile(pointer_persistent_matmul, signature=sig, specialization=spec,
                      constexprs=dict(BM=128, BN=128, BK=64), target="nvidia:sm_90",
                      options={"num_warps": 4, "num_stages": 3})
    assert "nvidia.cp_async" in k.asm["gpu"]
    (remark,) = k.metadata["remarks"]
    line = int(remark.split(":")[1].split()[0])
    assert "for tile in range" in open(__file__).read().splitlines()[line - 1]
    assert "restarts its cp.async ring at every tile" in remark and "only TMA rings" in remark


# -- on the H200 ----------------------------------------------------------------------------------


# TMA needs 16-byte-aligned row strides: N and K are multiples of 8 (fp16), M, N and K are
# not multiples of the blocks.


def _check(c, a, b, k):
    got = c.numpy().astype(np.float64)
    assert not np.isnan(got).any(), "unwritten elements"
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * max(k, 1) ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,blocks,warps,stages,subtile,programs", [
    ((520, 392, 200), (128, 128, 64), 4, 3, False, 7),     # 20 tiles over 7 programs, edges
    ((520, 392, 200), (128, 128, 64), 4, 3, True, 7),
    ((300, 264, 40), (128, 128, 64), 4, 3, False, 5),      # K < BK: one K step per tile
    ((1000, 1000, 512), (128, 256, 64), 8, 3, True, 11),   # tutorial 09's block, subtiled
    ((256, 256, 512), (128, 128, 64), 4, 4, False, 9),     # more programs than tiles
    ((1000, 712, 1000), (128, 128, 64), 8, 2, False, 13),  # two stages
])
def test_grouped_persistent_matmul_on_gpu(mnk, blocks, warps, stages, subtile, programs):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m * 3 + n + k + programs)
    a, b = _host("float16", (m, k), rng), _host("float16", (n, k), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    kern = grouped_persistent_matmul[(programs,)](
        _desc(naiad.to_device(a), (bm, bk)), _desc(naiad.to_device(b), (bn, bk)),
        _desc(c, (bm, bn // 2 if subtile else bn)), m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8,
        SUBTILE=subtile, PROGRAMS=programs, num_warps=warps, num_stages=stages)
    assert "ring_base" in kern.asm["gpu"], kern.metadata["remarks"]
    _check(c, a, b, k)


@pytest.mark.gpu
@pytest.mark.parametrize("programs", [1, 3, 40])
def test_num_programs_step_persistent_matmul_on_gpu(programs):
    m, n, k = 390, 272, 328
    rng = np.random.default_rng(programs)
    a, b = _host("float16", (m, k), rng), _host("float16", (n, k), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    kern = persistent_tma_matmul[(programs,)](
        _desc(naiad.to_device(a), (128, 64)), _desc(naiad.to_device(b), (128, 64)),
        _desc(c, (128, 128)), m, n, k, BM=128, BN=128, BK=64, num_warps=4, num_stages=3)
    assert "ring_base" in kern.asm["gpu"], kern.metadata["remarks"]
    _check(c, a, b, k)
