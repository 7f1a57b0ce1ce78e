"""The matmul tutorial's source shape (grouped ids, tl.assume, % M / % N wraps, K masks, strides
as arguments) on Hopper's fast path: pipelined cp.async ring into wgmma, 16-byte copies, no
spills -- checked from the compiled kernel without a GPU; numerics against numpy on the H200."""
from __future__ import annotations

import collections
import re

import numpy as np
import pytest

import naiad
from nv_matmul_kernels import grouped_matmul, persistent_matmul, pointer_table_matmul

SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
       "stride_cm": "i32", "stride_cn": "i32"}
#: What naiad's JIT derives for contiguous row-major operands with sizes divisible by 16.
SPEC = {**{n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K",
                                               "stride_am", "stride_bk", "stride_cm")},
        **{n: {"equal_to": 1} for n in ("stride_ak", "stride_bn", "stride_cn")}}


def compile_grouped(bm, bn, bk, warps, stages, assume=True, sig=SIG):
    return naiad.compile(grouped_matmul, signature=sig, target="nvidia:sm_90",
                         constexprs=dict(BM=bm, BN=bn, BK=bk, GROUP=8, ASSUME=assume),
                         options={"num_warps": warps, "num_stages": stages},
                         specialization=SPEC)


# the tutorial's first autotune configurations for CUDA (BM, BN, BK, warps, stages), with the
# registers Triton 3.9 gives the tutorial's kernel for sm_90 (bench/nv_static.py)
CONFIGS = [((128, 256, 64, 8, 3), 208), ((64, 256, 32, 4, 4), 212), ((128, 128, 32, 4, 4), 196),
           ((128, 64, 32, 4, 4), 113), ((64, 128, 32, 4, 4), 117), ((128, 32, 32, 4, 4), 72)]


@pytest.mark.parametrize("config,triton_regs", CONFIGS)
def test_assumed_ids_reach_the_pipelined_wgmma(config, triton_regs):
    k = compile_grouped(*config)
    assert k.metadata["registers"] <= triton_regs + 8
    ptx, gpu = k.asm["ptx"], k.asm["gpu"]
    assert k.metadata["remarks"] == []
    assert "nvidia.wgmma_ring" in gpu and "wgmma.mma_async" in ptx
    copies = re.findall(r"cp\.async\.\w+\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)", ptx)
    assert copies and set(copies) == {"16"}  # every copy moves 16 bytes
    assert k.metadata["spill_bytes"] == 0 and "ld.local" not in ptx


def _op_counts(gpu_ir: str) -> collections.Counter:
    """How many of each op the GPU IR has (``%x = name ...`` and result-less ``name ...``)."""
    return collections.Counter(re.findall(r"= ([a-z_][\w.]*)[ (]", gpu_ir)
                               + re.findall(r"^\s+([a-z_][\w.]*)\b", gpu_ir, re.M))


def _ptx_instructions(ptx: str) -> collections.Counter:
    return collections.Counter(re.findall(r"^\s+(?:@!?%p\d+ )?([a-z][\w.]*)", ptx, re.M))


@pytest.mark.parametrize("config", [(128, 256, 64, 8, 3), (128, 128, 32, 4, 4)])
def test_without_assume_the_kernel_takes_the_assumed_path(config):
    """Without the tutorial's tl.assume the grouped ids are still taken to be non-negative for
    the addresses (a run-time divisor is positive: naiad.gpu.axis), so B keeps its 16-byte
    vectors and the kernel is the assumed one: the same GPU IR ops but the assumes (and the
    comparisons they test), the same PTX instructions, registers, no remark."""
    with_assume = compile_grouped(*config, assume=True)
    without = compile_grouped(*config, assume=False)
    assert without.metadata["remarks"] == []
    ops_with, ops_without = _op_counts(with_assume.asm["gpu"]), _op_counts(without.asm["gpu"])
    assert ops_with["assume"] == 4 and ops_without["assume"] == 0
    assert ops_with["cmp"] - ops_without["cmp"] == 4
    for name in set(ops_with) | set(ops_without):
        if name not in ("assume", "cmp"):
            assert ops_with[name] == ops_without[name], name
    assert "nvidia.wgmma_ring" in without.asm["gpu"]
    assert _ptx_instructions(without.asm["ptx"]) == _ptx_instructions(with_assume.asm["ptx"])
    assert without.metadata["registers"] == with_assume.metadata["registers"]
    assert without.metadata["spill_bytes"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,config", [
    ((200, 136, 72), (64, 128, 32, 4, 4)),    # M, N, K not multiples of the tile: wraps, masks
    ((512, 512, 256), (128, 256, 64, 8, 3)),
    ((384, 256, 160), (128, 128, 32, 4, 4)),
    ((96, 48, 40), (128, 32, 32, 4, 4)),
])
def test_grouped_matmul_on_gpu(mnk, config):
    m, n, k = mnk
    bm, bn, bk, warps, stages = config
    rng = np.random.default_rng(m + 7 * n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    kern = grouped_matmul[(naiad.cdiv(m, bm) * naiad.cdiv(n, bn),)](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, k, 1, n, 1, n, 1,
        BM=bm, BN=bn, BK=bk, GROUP=8, ASSUME=True, num_warps=warps, num_stages=stages)
    assert "wgmma.mma_async" in kern.asm["ptx"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)


# -- float8 on wgmma ------------------------------------------------------------------------------
def float8_sig(fmt):
    return {**SIG, "a_ptr": f"*{fmt}", "b_ptr": f"*{fmt}"}


#: B passed as a transposed view (K contiguous), as the tutorial's float8 part does
SPEC_BT = {**{n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K",
                                                  "stride_am", "stride_bn", "stride_cm")},
           **{n: {"equal_to": 1} for n in ("stride_ak", "stride_bk", "stride_cn")}}


def compile_float8(fmt, bm, bn, bk, warps, stages, spec=SPEC_BT):
    return naiad.compile(grouped_matmul, signature=float8_sig(fmt), target="nvidia:sm_90",
                         constexprs=dict(BM=bm, BN=bn, BK=bk, GROUP=8, ASSUME=True),
                         options={"num_warps": warps, "num_stages": stages},
                         specialization=spec)


PTX_KIND = {"fp8e5": "e5m2", "fp8e4nv": "e4m3"}


@pytest.mark.parametrize("fmt", ["fp8e5", "fp8e4nv"])
@pytest.mark.parametrize("bm,bn,bk,warps,stages,n_instr,per_iter", [
    (128, 256, 128, 8, 3, 256, 4),   # the tutorial's float8 configurations
    (128, 128, 32, 4, 4, 128, 2),
    (64, 256, 128, 4, 4, 256, 4),
    (128, 64, 64, 4, 4, 64, 4),
])
def test_float8_dot_multiplies_float8_on_wgmma(fmt, bm, bn, bk, warps, stages, n_instr,
                                               per_iter):
    k = compile_float8(fmt, bm, bn, bk, warps, stages)
    ptx, gpu = k.asm["ptx"], k.asm["gpu"]
    assert k.metadata["remarks"] == []
    kind = PTX_KIND[fmt]
    assert f'kind = "{kind}"' in gpu and "nvidia.wgmma_ring" in gpu
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n_instr}k32.f32.{kind}.{kind}") \
        == per_iter
    assert f"{kind}x2" not in ptx and "k16.f32.f16" not in ptx  # no widening to f16
    copies = re.findall(r"cp\.async\.\w+\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)", ptx)
    assert copies and set(copies) == {"16"}
    assert k.metadata["spill_bytes"] == 0 and "ld.local" not in ptx


def test_float8_row_major_b_is_transposed_from_registers():
    """wgmma reads a float8 B only K-major: a row-major B cannot be copied by cp.async into
    that panel, so it is stored transposed from registers (and the remark says why)."""
    k = compile_float8("fp8e5", 128, 128, 64, 4, 3, spec=SPEC)
    (remark,) = k.metadata["remarks"]
    assert "16-byte chunks along K" in remark and "1-byte B only K-major" in remark
    assert 'nvidia.wgmma_staged' in k.asm["gpu"] and 'kind = "e5m2"' in k.asm["gpu"]
    assert "m64n128k32.f32.e5m2.e5m2" in k.asm["ptx"]


def test_float8_off_wgmma_widens_to_f16():
    """Two warps are no warpgroup: the float8 tiles are widened to f16 for mma.sync."""
    k = compile_float8("fp8e5", 64, 64, 32, 2, 3)
    assert "mma.sync.aligned.m16n8k16" in k.asm["ptx"] and "wgmma" not in k.asm["ptx"]
    assert any("num_warps=2" in r for r in k.metadata["remarks"])


def test_k_major_b_copies_land_where_wgmma_reads():
    """A K-contiguous (k x n) B tile copied by cp.async into its transposed, K-major panel: each
    register goes to the element ``OperandTile(n, k).offset_of((n, k))``, 16-byte chunks whole."""
    from naiad.gpu.linear_layout import LinearLayout
    from naiad_nvidia.ir.wgmma_smem import OperandTile
    from naiad_nvidia.passes.async_copy_pipeline import tile_offsets

    k, n = 64, 32
    ll = LinearLayout({"register": [(1 << b, 0) for b in range(6)]
                       + [(0, 1 << b) for b in range(5)]}, (k, n))
    offs = tile_offsets(ll, True, 1, k_major_b=True)
    tile = OperandTile(n, k, "K", 1)
    for r in range(k * n):
        kk, nn = r % k, r // k
        assert offs.apply_flat(register=r) == tile.offset_of((nn, kk))
    assert all(offs.apply_flat(register=r + 1) == offs.apply_flat(register=r) + 1
               for r in range(k * n) if (r + 1) % 16)


def _float8(fmt, shape, rng):
    import ml_dtypes

    x = rng.uniform(-2, 2, shape).astype(np.float32)
    return x.astype(ml_dtypes.float8_e5m2 if fmt == "fp8e5" else ml_dtypes.float8_e4m3fn)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["fp8e5", "fp8e4nv"])
@pytest.mark.parametrize("mnk,config,b_transposed", [
    ((200, 136, 96), (128, 128, 32, 4, 4), True),   # M, N, K not multiples of the tile
    ((512, 512, 512), (128, 256, 128, 8, 3), True),
    ((256, 192, 160), (64, 64, 64, 4, 4), True),
    ((200, 136, 96), (128, 128, 64, 4, 3), False),  # row-major B: staged from registers
])
def test_float8_grouped_matmul_on_gpu(fmt, mnk, config, b_transposed):
    m, n, k = mnk
    bm, bn, bk, warps, stages = config
    rng = np.random.default_rng(m + 3 * n + k)
    a, b = _float8(fmt, (m, k), rng), _float8(fmt, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    # a transposed B: an (n, k) row-major buffer, B[kk, nn] at nn * k + kk
    b_dev = naiad.to_device(np.ascontiguousarray(b.T) if b_transposed else b)
    strides_b = (1, k) if b_transposed else (n, 1)
    kern = grouped_matmul[(naiad.cdiv(m, bm) * naiad.cdiv(n, bn),)](
        naiad.to_device(a), b_dev, c, m, n, k, k, 1, *strides_b, n, 1,
        BM=bm, BN=bn, BK=bk, GROUP=8, ASSUME=True, num_warps=warps, num_stages=stages)
    assert f".{PTX_KIND[fmt]}.{PTX_KIND[fmt]}" in kern.asm["ptx"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    # the products are exact; the tensor cores' float8 accumulation and the f16 output round
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=2e-2,
                               atol=2e-2 * k ** 0.5)


# -- any loop whose loads feed a dot -------------------------------------------------------------
PERSISTENT_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                  "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
TABLE_SIG = {"ptrs": "*i64", "sizes": "*i32"}


@pytest.mark.parametrize("loop_stages,option_stages", [(2, 4), (4, 2), (3, 3)])
def test_persistent_k_loop_is_pipelined_with_its_own_num_stages(loop_stages, option_stages):
    k = naiad.compile(persistent_matmul, signature=PERSISTENT_SIG, target="nvidia:sm_90",
                      constexprs=dict(BM=128, BN=128, BK=64, PROGRAMS=132, STAGES=loop_stages),
                      options={"num_warps": 4, "num_stages": option_stages},
                      specialization={n: {"divisibility": 16} for n in PERSISTENT_SIG})
    gpu = k.asm["gpu"]
    # the only remark: the cp.async ring restarts per tile (only TMA rings cross tiles)
    (remark,) = k.metadata["remarks"]
    assert remark.startswith("loop at nv_matmul_kernels.py:") and "restarts its cp.async ring" \
        in remark
    assert "nvidia.wgmma_ring" in gpu and "pending = 1" in gpu
    ring = gpu.index("nvidia.wgmma_ring")
    inner_for = gpu.rindex(" = for ", 0, ring)
    outer_for = gpu.index("  for ")   # the tile loop carries nothing
    assert outer_for < inner_for
    # tl.range(num_stages=...) wins over the option: num_stages - 1 tiles in flight
    assert gpu[outer_for:inner_for].count("nvidia.cp_async_commit") == loop_stages - 1
    # (registers: 255 with a few spilled bytes at this tile -- the epilogue's per-thread
    # offsets stay live across the tile loop; see bench/RESULTS.md)


def test_statement_hints_put_a_pointer_table_kernel_on_the_ring():
    k = naiad.compile(pointer_table_matmul, signature=TABLE_SIG, target="nvidia:sm_90",
                      constexprs=dict(BM=128, BN=128, BK=32), specialization={
                          n: {"divisibility": 16} for n in TABLE_SIG},
                      options={"num_warps": 4, "num_stages": 3})
    assert k.metadata["remarks"] == []
    assert "nvidia.wgmma_ring" in k.asm["gpu"] and k.metadata["spill_bytes"] == 0


@pytest.mark.gpu
# row strides (K, N) multiples of 16, as the launcher's specialisation needs for the ring;
# M, N, K still not multiples of the tile
@pytest.mark.parametrize("mnk,blocks,stages", [((300, 208, 144), (128, 128, 64), 3),
                                               ((512, 384, 256), (128, 128, 64), 2),
                                               ((64, 64, 48), (64, 64, 32), 4)])
def test_persistent_matmul_on_gpu(mnk, blocks, stages):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    kern = persistent_matmul[(4,)](naiad.to_device(a), naiad.to_device(b), c, m, n, k, k, n, n,
                                   BM=bm, BN=bn, BK=bk, PROGRAMS=4, STAGES=stages, num_warps=4)
    assert "nvidia.wgmma_ring" in kern.asm["gpu"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)


@pytest.mark.gpu
def test_pointer_table_matmul_on_gpu():
    m, n, k = 256, 384, 160
    rng = np.random.default_rng(7)
    a = naiad.to_device(rng.uniform(-1, 1, (m, k)).astype(np.float16))
    b = naiad.to_device(rng.uniform(-1, 1, (k, n)).astype(np.float16))
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    table = naiad.to_device(np.array([a.ptr, b.ptr, c.ptr], np.int64))  # DeviceArray.ptr
    sizes = naiad.to_device(np.array([m, n, k], np.int32))
    kern = pointer_table_matmul[(m // 128, n // 128)](table, sizes, BM=128, BN=128, BK=32,
                                                      num_warps=4, num_stages=3)
    assert "nvidia.wgmma_ring" in kern.asm["gpu"], kern.metadata["remarks"]
    want = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)
