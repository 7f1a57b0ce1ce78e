"""The cp.async ring of dots left on FMAs (naiad_nvidia.passes.fma_ring).

Without a GPU: the GPU IR (the dot becomes ``nvidia.fma_ring`` fed by row-major
``nvidia.cp_async`` copies; loops that do not qualify keep their dot and say why), the PTX (the
operands' shared loads are 16-byte vectors, the copies are cp.async) and ptxas's register count
(no more than the 128 a thread that keep four 128-thread CTAs on an SM). Numerics on the device
are the ``gpu`` tests: ragged shapes with masked edges, outputs poisoned with NaN first.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module


@naiad.jit
def ieee_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """bench's matmul_kernel shape: carried pointers, a K mask, masked store."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@naiad.jit
def other_one(a_ptr, b_ptr, c_ptr, K, BK: tl.constexpr):
    """Masked-off A elements read as 1: a zero-filling copy cannot reproduce them."""
    r = tl.arange(0, BK)
    acc = tl.zeros((BK, BK), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :], mask=(k + r)[None, :] < K,
                    other=1.0)
        b = tl.load(b_ptr + (k + r)[:, None] * BK + r[None, :])
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * BK + r[None, :], acc)


SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32",
       "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")


def compile_matmul(blocks=(64, 64, 32), num_warps=4, num_stages=3, dtype="fp32", **options):
    bm, bn, bk = blocks
    sig = dict(SIG, a_ptr=f"*{dtype}", b_ptr=f"*{dtype}")
    spec = {p: {"divisibility": 16} for p in DIVISIBLE}
    return naiad.compile(ieee_matmul, signature=sig, target="nvidia:sm_90",
                         constexprs=dict(BM=bm, BN=bn, BK=bk), specialization=spec,
                         options=dict(num_warps=num_warps, num_stages=num_stages, **options))


def op_names(k) -> list[str]:
    module = parse_module(k.asm["gpu"])
    return [op.name for fn in module.functions.values() for op in fn.walk()]


def shared_loads(ptx: str) -> dict[str, int]:
    """ld.shared count by vector width (1, 2, 4)."""
    out = {1: 0, 2: 0, 4: 0}
    for m in re.finditer(r"\bld\.shared(?:\.v(\d))?\.[bfu]\d+", ptx):
        out[int(m.group(1) or 1)] += 1
    return out


@pytest.mark.parametrize("blocks,num_warps", [((64, 64, 32), 4), ((128, 64, 32), 8),
                                              ((32, 32, 16), 2)])
@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_ieee_dot_loop_copies_through_a_ring(blocks, num_warps, num_stages):
    k = compile_matmul(blocks, num_warps, num_stages)
    names = op_names(k)
    assert "dot" not in names and names.count("nvidia.fma_ring") == 1
    # prologue: num_stages - 1 tiles of A and B; loop: one tile of each
    assert names.count("nvidia.cp_async") == 2 * (num_stages - 1) + 2
    module = parse_module(k.asm["gpu"])
    copies = [op for fn in module.functions.values() for op in fn.walk()
              if op.name == "nvidia.cp_async"]
    assert all(op.attrs.get("row_major") for op in copies)
    ring = [op for fn in module.functions.values() for op in fn.walk()
            if op.name == "nvidia.fma_ring"][0]
    bm, bn, bk = blocks
    assert ring.attrs["stage_bytes"] >= (bm + bn) * bk * 4
    # the whole ring: num_stages slots of both tiles
    assert k.metadata["shared"] >= num_stages * (bm + bn) * bk * 4
    ptx = k.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    loads = shared_loads(ptx)
    # A's rows and B's columns in 16-byte runs: every operand load is a 4-wide vector
    assert loads[4] > 0 and loads[1] == loads[2] == 0, loads


def test_ring_keeps_the_register_count_of_four_ctas():
    """64x64x32, 4 warps: 128 registers a thread keep 4 CTAs per SM (Triton 3.9: 122);
    the ring holds no tile in registers, so it costs only the copies' addresses."""
    k = compile_matmul((64, 64, 32), 4, 3)
    assert 0 < k.n_regs <= 128, k.n_regs


def test_fp16_on_fma_gets_the_ring():
    """f16 operands on the FMA path (tensor cores off): 16-byte chunks of 8 halves."""
    k = compile_matmul((64, 64, 32), 4, 3, dtype="fp16", tensor_cores=False)
    names = op_names(k)
    assert "dot" not in names and "nvidia.fma_ring" in names


def test_one_stage_leaves_the_loop_as_written():
    names = op_names(compile_matmul((64, 64, 32), 4, 1))
    assert "dot" in names and "nvidia.fma_ring" not in names and "nvidia.cp_async" not in names


def test_nonzero_other_is_not_pipelined_and_says_why():
    k = naiad.compile(other_one, signature={"a_ptr": "*fp32", "b_ptr": "*fp32",
                                            "c_ptr": "*fp32", "K": "i32"},
                      target="nvidia:sm_90", constexprs={"BK": 32},
                      options={"num_warps": 4, "num_stages": 3})
    names = op_names(k)
    assert "dot" in names and "nvidia.fma_ring" not in names
    said = [r for r in k.metadata["remarks"] if "cp.async ring" in str(r)]
    assert said and "`other` value that is not 0" in str(said[0]), k.metadata["remarks"]


def _host(dtype, shape, rng):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("mnk,blocks,num_warps", [
    ((200, 136, 100), (64, 64, 32), 4),     # ragged M, N; K % BK != 0 (masked last tile)
    ((128, 64, 1024), (128, 64, 32), 8),    # many iterations
    ((64, 64, 16), (64, 64, 32), 4),        # K < BK: one masked tile
    ((96, 80, 48), (32, 32, 16), 2),
    ((64, 64, 0), (64, 64, 32), 4),         # no iteration
])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fma_ring_matmul_on_gpu(dtype, mnk, blocks, num_warps, num_stages):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + n + k + num_stages)
    kp = -(-max(k, 1) // 16) * 16   # row strides that keep 16-byte rows
    a = np.zeros((m, kp), dtype)
    b = np.zeros((k, -(-n // 16) * 16), dtype)
    a[:, :k] = _host(dtype, (m, k), rng)
    b[:, :n] = _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    options = {} if dtype == "float32" else {"tensor_cores": False}
    ieee_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, a.shape[1], b.shape[1], n,
        BM=bm, BN=bn, BK=bk, num_warps=num_warps, num_stages=num_stages, **options)
    want = a[:, :k].astype(np.float64) @ b[:, :n].astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-4, atol=1e-4 * max(k, 1) ** 0.5)
