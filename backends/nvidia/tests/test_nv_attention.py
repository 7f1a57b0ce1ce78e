"""Attention on the NVIDIA matrix path: which operand source each wgmma takes, no spills on
sm_90 (compile tier, no GPU), and forward/backward against numpy (execute tier)."""
import re

import numpy as np
import pytest

import naiad
from naiad.backend import DotOperandLayout, linear_of
from naiad.ir import TensorType, f16, f32

from nv_attention_kernels import (DKDV_SIG, DQ_SIG, FWD_SIG, aligned, attn_bwd_dkdv, attn_bwd_dq,
                                  attn_fwd, attn_fwd_parts, chained_dots, reference,
                                  reference_chained, reference_parts)
from naiad_nvidia.ir.mma_layout import NvidiaMmaLayout
from naiad_nvidia.lowering.mma_lowering import register_of
from naiad_nvidia.lowering.wgmma import a_in_registers_layout, plan

FWD = dict(BM=128, BN=64)
DKDV = dict(BM=32, BN=128)
DQ = dict(BM=128, BN=32)
#: a wgmma whose A operand is four 32-bit registers
REGISTER_A = re.compile(r"wgmma\.mma_async\S+ \{[^}]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd")


def compile_sm90(fn, sig, num_warps=4, **constexprs):
    return naiad.compile(fn, sig, constexprs, target="nvidia:sm_90",
                         options={"num_warps": num_warps}, specialization=aligned(sig))


# -- the register-A fragment ---------------------------------------------------------------------
@pytest.mark.parametrize("m,k,warps", [(64, 16, 4), (128, 64, 4), (128, 32, 8), (256, 64, 8)])
def test_register_a_fragment_is_the_isa_fragment(m, k, warps):
    """Each lane's four A registers of every m64nNk16 hold the elements the PTX ISA assigns it
    (warp w%4 of warpgroup w/4: rows 16 (w%4) + lane/4 (+8), columns 2 (lane%4) (+1, +8, +9)),
    computed here from the ISA's table, not from the lowering's offsets."""
    acc = NvidiaMmaLayout(2, (warps, 1))
    ll = linear_of(DotOperandLayout(0, acc, 2), (m, k))
    index = register_of(ll)
    from naiad_nvidia.lowering.mma_lowering import A_OFFSETS

    seen = set()
    for ins in plan(m, 64, k, warps):
        regs = [index[(ins.row0 + dr, ins.kk + dc)] for dr, dc in A_OFFSETS[2]]
        for warp in range(warps):
            for lane in range(32):
                for i, r in enumerate(regs):
                    got = ll.apply(register=r, lane=lane, warp=warp)
                    row = (ins.row0 + 64 * (warp // 4) + 16 * (warp % 4) + lane // 4
                           + 8 * ((i >> 1) & 1))
                    col = ins.kk + 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)
                    assert tuple(got) == (row, col), (ins, warp, lane, i)
                    seen.add((row, col))
    assert len(seen) == m * k   # every element of A is fed exactly by its owner


def test_a_in_registers_layout_needs_the_fragment_and_16_bits():
    acc = TensorType((128, 64), f32, NvidiaMmaLayout(2, (4, 1)))
    frag = DotOperandLayout(0, acc.layout, 2)
    assert a_in_registers_layout(TensorType((128, 64), f16, frag), acc)
    # for 16-bit elements the accumulator layout is the same linear layout as the fragment
    assert a_in_registers_layout(TensorType((128, 64), f16, acc.layout), acc)
    assert not a_in_registers_layout(TensorType((128, 64), f32, frag), acc)
    other = DotOperandLayout(0, NvidiaMmaLayout(2, (2, 2)), 2)
    assert not a_in_registers_layout(TensorType((128, 64), f16, other), acc)


# -- compile tier: the path each dot takes, and no spills ----------------------------------------
def _loop_body(gpu: str) -> str:
    start = gpu.index(" = for ")
    return gpu[start:gpu.index("yield", start)]


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_reads_p_from_registers_and_q_once(d, causal):
    num_warps = 4 if d == 64 else 8   # hd128 with 4 warps holds 128 + 64 accumulator registers
    k = compile_sm90(attn_fwd, FWD_SIG, num_warps, D=d, CAUSAL=causal, **FWD)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert gpu.count("nvidia.wgmma_resident") == 1           # q, stored once before the loop
    assert gpu.count("a_regs = true") == 1                    # p, straight from registers
    body = _loop_body(gpu)
    assert "nvidia.wgmma_resident" not in body
    # no tile of the accumulator's size goes through shared memory in the loop
    assert not re.search(r"convert_layout [^\n]*scratch[^\n]*tensor<128x\d+xf32", body)
    # per warpgroup: its 64-row blocks of the 128 rows, k16 steps of p's 64 columns, one m64nD
    assert len(REGISTER_A.findall(ptx)) == (128 // (16 * num_warps)) * (64 // 16)
    assert k.metadata["spill_bytes"] == 0
    assert "mma.sync" not in ptx
    # k.T runs along K in registers: stored K-major (imm-trans-b = 0) with 16-byte stores;
    # v is stored N-major (imm-trans-b = 1) under the register-A wgmma
    assert re.search(r"wgmma\.mma_async[^;]*%rd\d+, %rd\d+, p, 1, 1, 0, 0;", ptx)
    assert re.search(r"wgmma\.mma_async[^;]*\}, %rd\d+, p, 1, 1, 1;", ptx)
    assert "st.shared.b16" not in ptx and "st.shared.v2.b16" not in ptx


def test_attention_forward_remarks_name_the_lines():
    import inspect

    k = compile_sm90(attn_fwd, FWD_SIG, 4, D=64, CAUSAL=False, **FWD)
    src, first = inspect.getsourcelines(attn_fwd.fn)
    line = {key: first + next(i for i, s in enumerate(src) if key in s)
            for key in ("s = tl.dot(", "acc = tl.dot(", "tl.math.log2(l_i)")}
    # both dots read K and V from the multi-dot cp.async ring: no remark for them
    assert not [r for r in k.metadata["remarks"] if r.startswith("dot at")], k.metadata["remarks"]
    # log2's reduction divides correctly rounded (a call); `acc / l_i` is div.full.f32 (none)
    want = [f"log2 at nv_attention_kernels.py:{line['tl.math.log2(l_i)']} (f32) compiles to a "
            "subroutine call (the slow path of a division rounded to nearest): ptxas may then "
            "serialize every wgmma.mma_async of the kernel (nvJitLink 13.5's does)"]
    for w in want:
        assert w in k.metadata["remarks"], k.metadata["remarks"]
    assert not [r for r in k.metadata["remarks"] if r.startswith("division")], \
        k.metadata["remarks"]
    assert "div.full.f32" in k.asm["ptx"]
    # what the division remark says is what this ptxas reports (the H200 machine's nvJitLink,
    # an older one, does not serialize these wgmmas)
    from cuda.bindings import nvjitlink
    if nvjitlink.version() >= (13, 5):
        assert "serialized due to the presence of Extern calls" in k.metadata["jit_log"]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kernel,sig,blocks,op,dots,in_registers", [
    # k, v stay in shared memory; pT, dsT registers; qT and dO come through the ring
    (attn_bwd_dkdv, DKDV_SIG, DKDV, "wgmma_ring", 4, 2),
    # q, dO stay in shared memory; ds registers; kT and vT come through the ring
    (attn_bwd_dq, DQ_SIG, DQ, "wgmma_ring", 3, 1),
])
def test_attention_backward_does_not_spill(kernel, sig, blocks, op, dots, in_registers, causal):
    k = compile_sm90(kernel, sig, 4, D=64, CAUSAL=causal, **blocks)
    gpu = k.asm["gpu"]
    assert gpu.count("= nvidia.wgmma_resident ") == 2
    assert gpu.count(f"= nvidia.{op} ") == dots
    assert gpu.count("a_regs = true") == in_registers
    assert k.metadata["spill_bytes"] == 0, k.metadata["jit_log"]


def test_resident_buffers_follow_the_scratch_buffer():
    """Each resident tile has its own 1024-byte aligned buffer after the common scratch, and the
    kernel's shared memory covers them all."""
    k = compile_sm90(attn_bwd_dq, DQ_SIG, 4, D=64, CAUSAL=False, **DQ)
    gpu = k.asm["gpu"]
    scratch = max(int(s) for s in re.findall(r"scratch = (\d+)", gpu))
    offsets = sorted(int(s) for s in re.findall(r"wgmma_resident [^\n]*smem_offset = (\d+)", gpu))
    tile = 128 * 64 * 2
    assert offsets == [(scratch + 1023) // 1024 * 1024 + i * tile for i in range(2)]
    assert k.metadata["shared"] == offsets[-1] + tile


def test_shared_stores_share_their_base_address():
    """A staged tile's stores use one base register with immediate offsets (not one 64-bit
    address register per store kept live across the loop)."""
    k = compile_sm90(attn_fwd, FWD_SIG, 4, D=64, CAUSAL=False, **FWD)
    stores = re.findall(r"st\.shared\.v4\.b32 \t\[(%rd\d+)(?:\+\d+)?\]", k.asm["ptx"])
    assert len(stores) >= 8 and len(set(stores)) <= len(stores) // 4


# -- execute tier ----------------------------------------------------------------------------
def _inputs(heads, length, d, seed):
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal((heads, length, d)).astype(np.float16) * 0.5
                   for _ in range(4))
    return q, k, v, do


def _poisoned(shape, dtype):
    return naiad.to_device(np.full(shape, np.nan, dtype))


def test_mma_sync_reads_p_from_registers():
    """Without wgmma (sm_80, or the option off) the second dot's A still stays in registers:
    only B is staged and read with ldmatrix."""
    k = naiad.compile(attn_fwd, FWD_SIG, dict(D=64, CAUSAL=False, **FWD), target="nvidia:sm_80",
                      options={"num_warps": 4}, specialization=aligned(FWD_SIG))
    gpu = k.asm["gpu"]
    staged = [line for line in gpu.splitlines() if "= nvidia.mma_staged " in line]
    assert len(staged) == 2 and sum("a_regs = true" in line for line in staged) == 1
    # B of 64x64 f16 alone: 8 KiB of staging for the second dot
    assert any("a_regs = true" in line and "scratch = 8192" in line for line in staged)


@pytest.mark.gpu
@pytest.mark.parametrize("length", [200, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("num_warps,wgmma", [(4, True), (8, True), (4, False)])
def test_attention_forward_on_gpu(length, causal, num_warps, wgmma):
    heads, d, scale = 3, 64, 0.3
    q, k, v, do = _inputs(heads, length, d, 7)
    o = _poisoned((heads, length, d), np.float16)
    m = _poisoned((heads, length), np.float32)
    grid = (-(-length // FWD["BM"]), heads)
    attn_fwd[grid](*(naiad.to_device(x) for x in (q, k, v)), o, m, length, scale, D=d,
                   CAUSAL=causal, num_warps=num_warps, wgmma=wgmma, **FWD)
    want_o, want_m, *_ = reference(q, k, v, do, scale, causal)
    np.testing.assert_allclose(o.numpy().astype(np.float64), want_o, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(m.numpy(), want_m, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("num_stages,d,num_warps", [(2, 64, 4), (4, 64, 4), (3, 128, 8)])
def test_attention_forward_ring_depths_on_gpu(causal, num_stages, d, num_warps):
    """The multi-dot ring at other depths and head dim 128 (two warpgroups); 328 rows: a
    partial last block, and more iterations than slots."""
    heads, length, scale = 2, 328, 0.25
    q, k, v, do = _inputs(heads, length, d, 11)
    o = _poisoned((heads, length, d), np.float16)
    m = _poisoned((heads, length), np.float32)
    grid = (-(-length // FWD["BM"]), heads)
    attn_fwd[grid](*(naiad.to_device(x) for x in (q, k, v)), o, m, length, scale, D=d,
                   CAUSAL=causal, num_warps=num_warps, num_stages=num_stages, **FWD)
    want_o, want_m, *_ = reference(q, k, v, do, scale, causal)
    np.testing.assert_allclose(o.numpy().astype(np.float64), want_o, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(m.numpy(), want_m, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("length", [200, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_on_gpu(length, causal):
    heads, d, scale = 2, 64, 0.3
    q, k, v, do = _inputs(heads, length, d, 8)
    _, m2, delta, want_dq, want_dk, want_dv = reference(q, k, v, do, scale, causal)
    args = [naiad.to_device(x) for x in (q, k, v, do)]
    args += [naiad.to_device(m2.astype(np.float32)), naiad.to_device(delta.astype(np.float32))]
    dk, dv, dq = (_poisoned((heads, length, d), np.float16) for _ in range(3))
    attn_bwd_dkdv[(-(-length // DKDV["BN"]), heads)](*args, dk, dv, length, scale, D=d,
                                                      CAUSAL=causal, num_warps=4, **DKDV)
    attn_bwd_dq[(-(-length // DQ["BM"]), heads)](*args, dq, length, scale, D=d, CAUSAL=causal,
                                                  num_warps=4, **DQ)
    for got, want in ((dk, want_dk), (dv, want_dv), (dq, want_dq)):
        np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=3e-2, atol=3e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d,num_warps,num_stages", [(64, 4, 2), (64, 4, 4), (64, 8, 3),
                                                    (128, 8, 2), (128, 4, 3)])
def test_attention_loop_in_flight_on_gpu(causal, d, num_warps, num_stages):
    """The forward's loop with p @ v in flight (hd128 with 4 warps: synchronous, over the
    register budget), its raw state checked: the running max, the row sums and the
    unnormalised accumulator. 328 rows: a partial last block, more iterations than slots."""
    heads, length, scale = 2, 328, 0.25
    q, k, v, _ = _inputs(heads, length, d, 13)
    acc = _poisoned((heads, length, d), np.float32)
    m, l_sum = (_poisoned((heads, length), np.float32) for _ in range(2))
    grid = (-(-length // FWD["BM"]), heads)
    attn_fwd_parts[grid](*(naiad.to_device(x) for x in (q, k, v)), acc, m, l_sum, length,
                         scale, D=d, CAUSAL=causal, num_warps=num_warps,
                         num_stages=num_stages, **FWD)
    want_acc, want_m, want_l = reference_parts(q, k, v, scale, causal)
    np.testing.assert_allclose(m.numpy(), want_m, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(l_sum.numpy(), want_l, rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(acc.numpy(), want_acc, rtol=1e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps,num_stages", [(4, 2), (4, 4), (8, 3)])
def test_chained_in_flight_dots_on_gpu(num_warps, num_stages):
    """acc = dot(p, v, acc) chained on in-flight registers across iterations, 200 rows."""
    heads, length, d, scale = 2, 200, 64, 0.125
    q, k, v, _ = _inputs(heads, length, d, 17)
    out = _poisoned((heads, length, d), np.float32)
    dummy = naiad.to_device(np.zeros(1, np.float32))
    chained_dots[(-(-length // FWD["BM"]), heads)](
        *(naiad.to_device(x) for x in (q, k, v)), out, dummy, length, scale, D=d, READ=False,
        num_warps=num_warps, num_stages=num_stages, **FWD)
    want = reference_chained(q, k, v, scale)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-2, atol=2e-2)


def test_resident_tiles_stay_within_their_budget(monkeypatch):
    """Past the resident budget a loop-invariant A is staged each time again (correct, slower)
    rather than asking for more shared memory than a block has."""
    from naiad_nvidia.passes import wgmma_operands

    monkeypatch.setattr(wgmma_operands, "RESIDENT_BUDGET", 128 * 64 * 2)   # one 128x64 tile
    k = compile_sm90(attn_bwd_dq, DQ_SIG, 4, D=64, CAUSAL=False, **DQ)
    gpu = k.asm["gpu"]
    assert gpu.count("= nvidia.wgmma_resident ") == 1
    staged = [line for line in gpu.splitlines() if "= nvidia.wgmma_staged " in line]
    assert sum("scratch = 4096" in line for line in staged) == 2   # B alone
    assert any(f"scratch = {128 * 64 * 2 + 4096}" in line for line in staged)   # A and B
    assert k.metadata["shared"] <= 227 * 1024
