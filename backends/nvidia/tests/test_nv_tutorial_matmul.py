"""The matmul tutorial's source shape (grouped ids, tl.assume, % M / % N wraps, K masks, strides
as arguments) on Hopper's fast path: pipelined cp.async ring into wgmma, 16-byte copies, no
spills -- checked from the compiled kernel without a GPU; numerics against numpy on the H200."""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
from nv_matmul_kernels import grouped_matmul

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


# the tutorial's first autotune configurations for CUDA (BM, BN, BK, warps, stages)
CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
           (64, 128, 32, 4, 4), (128, 32, 32, 4, 4)]


@pytest.mark.parametrize("bm,bn,bk,warps,stages", CONFIGS)
def test_assumed_ids_reach_the_pipelined_wgmma(bm, bn, bk, warps, stages):
    k = compile_grouped(bm, bn, bk, warps, stages)
    ptx, gpu = k.asm["ptx"], k.asm["gpu"]
    assert k.metadata["remarks"] == []
    assert "nvidia.wgmma_ring" in gpu and "wgmma.mma_async" in ptx
    copies = re.findall(r"cp\.async\.\w+\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)", ptx)
    assert copies and set(copies) == {"16"}  # every copy moves 16 bytes
    assert k.metadata["spill_bytes"] == 0 and "ld.local" not in ptx


def test_without_assume_the_remark_names_the_reason():
    k = compile_grouped(128, 128, 32, 4, 4, assume=False)
    remarks = k.metadata["remarks"]
    assert len(remarks) == 1 and "load of B moves 2-byte vectors" in remarks[0], remarks
    assert "wgmma_ring" not in k.asm["gpu"]


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
