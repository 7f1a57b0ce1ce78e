"""The K-loop prefetch of staged tensor-core matmuls (naiad_nvidia.passes.prefetch_loads).

Semantics are checked without a GPU: the same rewrite is applied to tile IR whose loads feed a
plain ``dot`` and the result is run by the bounds-checked reference executor (an unmasked
prefetch past the last tile raises OutOfBoundsError there) against numpy. The generated code
for the NVIDIA target is checked by its GPU IR and PTX; numerics on the device by the ``gpu``
tests (run on the H200).
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad_nvidia.passes.prefetch_loads import pipeline_loop, prefetch_staged_loads
from nv_matmul_kernels import masked_matmul, pointer_matmul


@naiad.jit
def store_in_loop(a_ptr, b_ptr, c_ptr, K, BK: tl.constexpr):
    """A loop that writes memory: prefetching would be observable, so it is not rewritten."""
    r = tl.arange(0, BK)
    acc = tl.zeros((BK, BK), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :])
        tl.store(b_ptr + r[:, None] * K + (k + r)[None, :], a)
        acc = tl.dot(a, tl.load(b_ptr + r[:, None] * K + (k + r)[None, :]), acc)
    tl.store(c_ptr + r[:, None] * BK + r[None, :], acc)


@naiad.jit
def indirect_in_loop(a_ptr, idx_ptr, c_ptr, K, BK: tl.constexpr):
    """The A tile's address comes from another load: not rewritten."""
    r = tl.arange(0, BK)
    acc = tl.zeros((BK, BK), dtype=tl.float32)
    for k in range(0, K, BK):
        off = tl.load(idx_ptr + k // BK)
        a = tl.load(a_ptr + off + r[:, None] * BK + r[None, :])
        acc = tl.dot(a, a, acc)
    tl.store(c_ptr + r[:, None] * BK + r[None, :], acc)


@naiad.jit
def runtime_step(a_ptr, c_ptr, K, S, BK: tl.constexpr):
    """A step known only at run time (its sign decides the exit test): not rewritten."""
    r = tl.arange(0, BK)
    acc = tl.zeros((BK, BK), dtype=tl.float32)
    for k in range(0, K, S):
        a = tl.load(a_ptr + r[:, None] * BK + r[None, :] + k)
        acc = tl.dot(a, a, acc)
    tl.store(c_ptr + r[:, None] * BK + r[None, :], acc)


MASKED_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
              "K": "i32"}
POINTER_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
               "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def tile_module(fn, sig, **constexprs):
    k = naiad.compile(fn, signature=sig, constexprs=constexprs, target="reference")
    return parse_module(k.asm["tile"])


def loops(module):
    return [op for fn in module.functions.values() for op in fn.walk() if op.name == "for"]


def pipelined(fn, sig, **constexprs):
    module = tile_module(fn, sig, **constexprs)
    assert prefetch_staged_loads(module, consumers=("dot",))
    verify(module)
    return module


def run_ref(module, name, grid, args):
    from naiad_reference import execute

    execute(module, name, grid, args)


def _f16(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float16)


# -- the rewrite, executed by the reference executor --------------------------------------------

def test_rewrite_shape_loads_next_tile_before_the_dot():
    module = pipelined(pointer_matmul, POINTER_SIG, BM=32, BN=32, BK=16)
    (loop,) = loops(module)
    body = loop.regions[0].block
    names = [op.name for op in body.ops]
    dot = names.index("dot")
    # two prefetching loads, both before the dot, both masked by "next iteration exists"
    loads = [op for op in body.ops if op.name == "load"]
    assert len(loads) == 2 and all(body.ops.index(ld) < dot for ld in loads)
    assert all(len(ld.operands) == 2 for ld in loads)
    # the dot reads the carried tiles (block arguments), which the yield replaces by the loads
    dot_op = body.ops[dot]
    assert all(v.is_block_arg and v.owner is body for v in dot_op.operands[:2])
    assert [v.defining_op for v in body.terminator.operands[-2:]] == loads
    # two more loop operands/results; the prologue loads sit right before the loop
    assert len(loop.operands) == 3 + 3 + 2 and len(loop.results) == 3 + 2
    before = loop.parent.ops[:loop.parent.ops.index(loop)]
    assert [op.name for op in before].count("load") == 2


@pytest.mark.parametrize("m,n,k,blocks", [
    (40, 24, 50, (16, 16, 16)),    # masked M, N; K not a multiple of BK
    (16, 16, 7, (16, 16, 16)),     # K < BK: one partial iteration
    (32, 16, 16, (16, 16, 16)),    # exactly one iteration
    (16, 32, 160, (16, 16, 16)),   # many iterations
    (16, 16, 0, (16, 16, 16)),     # no iteration: the prologue load is masked off
])
def test_masked_matmul_keeps_its_result(m, n, k, blocks):
    bm, bn, bk = blocks
    module = pipelined(masked_matmul, MASKED_SIG, BM=bm, BN=bn, BK=bk)
    rng = np.random.default_rng(m + 3 * n + 7 * k)
    a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
    c = np.full((m, n), np.nan, np.float32)
    run_ref(module, "masked_matmul", (-(-m // bm), -(-n // bn)), [a, b, c, m, n, k])
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * max(k, 1) ** 0.5)


@pytest.mark.parametrize("k", [16, 32, 128])
def test_pointer_matmul_never_reads_past_the_last_tile(k):
    # the buffers end exactly at the last tile: an unmasked prefetch would raise
    m = n = 32
    module = pipelined(pointer_matmul, POINTER_SIG, BM=16, BN=16, BK=16)
    rng = np.random.default_rng(k)
    a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
    c = np.full((m, n), np.nan, np.float16)
    run_ref(module, "pointer_matmul", (4,), [a, b, c, m, n, k, k, n, n])
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=1e-2 * k ** 0.5)


def test_unmasked_prefetch_would_be_caught():
    """The out-of-bounds check above is not vacuous: drop the 'next exists' mask and the
    reference executor reports the read past the end."""
    module = pipelined(pointer_matmul, POINTER_SIG, BM=16, BN=16, BK=16)
    (loop,) = loops(module)
    body = loop.regions[0].block
    for ld in [op for op in body.ops if op.name == "load"]:
        ld.set_operands(ld.operands[:1])
    rng = np.random.default_rng(1)
    a, b = _f16(rng, (32, 32)), _f16(rng, (32, 32))
    c = np.zeros((32, 32), np.float16)
    with pytest.raises(naiad.OutOfBoundsError):
        run_ref(module, "pointer_matmul", (4,), [a, b, c, 32, 32, 32, 32, 32, 32])


@pytest.mark.parametrize("fn,sig,constexprs", [
    (store_in_loop, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"},
     dict(BK=16)),
    (indirect_in_loop, {"a_ptr": "*fp16", "idx_ptr": "*i32", "c_ptr": "*fp32", "K": "i32"},
     dict(BK=16)),
    (runtime_step, {"a_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32", "S": "i32"}, dict(BK=16)),
])
def test_ineligible_loops_are_left_unchanged(fn, sig, constexprs):
    module = tile_module(fn, sig, **constexprs)
    before = print_module(module)
    assert not any(pipeline_loop(lp, ("dot",)) for lp in loops(module))
    assert print_module(module) == before


def test_loops_without_staged_mma_are_left_unchanged():
    # the pass proper looks for nvidia.mma_staged only: on tile IR (plain dots) it does nothing
    module = tile_module(masked_matmul, MASKED_SIG, BM=16, BN=16, BK=16)
    before = print_module(module)
    assert not prefetch_staged_loads(module)
    assert print_module(module) == before


# -- the NVIDIA target ---------------------------------------------------------------------------

def compile_nv(fn, sig, options=None, **constexprs):
    spec = {name: {"divisibility": 16} for name in sig}
    return naiad.compile(fn, signature=sig, constexprs=constexprs, target="nvidia:sm_90",
                         options=options or {"num_warps": 8}, specialization=spec)


def _loop_text(gpu):
    return gpu[gpu.index(" = for "):gpu.index("yield")]


def test_bench_kernel_prefetches_next_tiles_before_the_mma():
    # num_stages 1: the register prefetch (with more stages the cp.async ring replaces it)
    k = compile_nv(pointer_matmul, POINTER_SIG, {"num_warps": 8, "num_stages": 1,
                                                 "wgmma": False}, BM=128, BN=128, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    verify(parse_module(gpu))
    loop = _loop_text(gpu)
    body = loop[loop.index("\n"):]
    assert body.count(" load ") == 2
    assert body.rindex(" load ") < body.index("nvidia.mma_staged")
    # the mma reads the carried tiles, not a load result of this iteration
    mma_line = next(ln for ln in body.splitlines() if "nvidia.mma_staged" in ln)
    loaded = re.findall(r"(%\w+) = load", body)
    assert not any(v + "," in mma_line for v in loaded)
    # 16-byte global loads: 2 per tile per thread, in the prologue and in the loop
    assert ptx.count("ld.global.v4.b32") == 2 * 2 * 2
    assert ptx.count("mma.sync.aligned.m16n8k16") == 32
    assert k.metadata["spill_bytes"] == 0


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_bench_kernel_copies_tiles_into_a_ring_with_cp_async(stages):
    """S-stage cp.async ring: S-1 commit groups before the loop, one per iteration, waits for
    all but S-2 at the top of the body, one barrier per iteration, no A/B global loads."""
    k = compile_nv(pointer_matmul, POINTER_SIG, {"num_warps": 8, "num_stages": stages,
                                                 "wgmma": False}, BM=128, BN=128, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    verify(parse_module(gpu))
    loop = _loop_text(gpu)
    assert " load " not in loop and "mma_staged" not in loop
    assert loop.count("nvidia.cp_async ") == 2 and loop.count("nvidia.mma_ring") == 1
    assert loop.index("cp_async_wait") < loop.index("barrier") < loop.index("nvidia.cp_async ")
    assert loop.index("nvidia.cp_async_commit") < loop.index("nvidia.mma_ring")
    assert "ld.global" not in ptx and "st.shared" not in _ptx_loop(ptx)
    assert ptx.count("cp.async.commit_group;") == stages
    assert f"cp.async.wait_group {stages - 2};" in _ptx_loop(ptx)
    assert ptx.count("cp.async.wait_group") == 2      # in the loop, and 0 after it
    # 2 chunks of 16 bytes per tile per thread, per group
    assert len(re.findall(r"@%p\d+ cp\.async\.cg\.shared\.global \[%rd\d+\], \[%rd\d+\], 16, "
                          r"%r\d+;", ptx)) == 4 * stages
    assert _ptx_loop(ptx).count("bar.sync") == 1
    assert _ptx_loop(ptx).count("ldmatrix") == 12 and ptx.count("mma.sync") == 32
    assert k.metadata["shared"] == stages * 16384
    assert k.metadata["spill_bytes"] == 0


def _ptx_loop(ptx):
    """The PTX of the K loop: from the label the loop's back edge jumps to, to that jump."""
    back = [m for m in re.finditer(r"@%p\d+ bra\s+(\$L__BB0_\d+);", ptx)
            if ptx.index(m.group(1) + ":") < m.start()]
    m = back[0]
    return ptx[ptx.index(m.group(1) + ":"):m.end()]


def test_masked_loop_uses_the_ring_only_with_16_byte_rows():
    ring = compile_nv(masked_matmul, MASKED_SIG, {"num_warps": 4, "wgmma": False}, BM=64, BN=64,
                      BK=32)
    assert "nvidia.mma_ring" in ring.asm["gpu"] and "ld.global" not in ring.asm["ptx"]
    sig = {n: {"divisibility": 16} for n in MASKED_SIG if n != "K"}
    odd = naiad.compile(masked_matmul, signature=MASKED_SIG, constexprs=dict(BM=64, BN=64, BK=32),
                        target="nvidia:sm_90", options={"num_warps": 4, "wgmma": False},
                        specialization=sig)
    assert "nvidia.mma_ring" not in odd.asm["gpu"] and "cp.async" not in odd.asm["ptx"]
    assert "nvidia.mma_staged" in odd.asm["gpu"]


def test_tensor_cores_off_or_tf32_loops_are_not_prefetched():
    f32 = dict(MASKED_SIG, a_ptr="*fp32", b_ptr="*fp32")
    k = compile_nv(masked_matmul, f32, {"num_warps": 4, "wgmma": False}, BM=64, BN=64, BK=32)
    loop = _loop_text(k.asm["gpu"])
    assert "nvidia.mma " in loop and "mma_staged" not in loop
    # the loop carries the accumulator only; both loads stay in the body
    assert re.match(r" = for %\w+, %\w+, %\w+, %\w+ :", loop)
    assert loop.count(" load ") == 2
    # with tensor cores off the dot stays on FMAs, pipelined by its own cp.async ring
    # (naiad_nvidia.passes.fma_ring, tests in test_nv_fma_ring.py), not the register prefetch
    k = compile_nv(masked_matmul, MASKED_SIG, {"num_warps": 4, "tensor_cores": False},
                   BM=64, BN=64, BK=32)
    loop = _loop_text(k.asm["gpu"])
    assert "nvidia.fma_ring" in loop and "mma_staged" not in loop
    assert loop.count(" load ") == 0 and loop.count("nvidia.cp_async ") == 2


# -- on the device -------------------------------------------------------------------------------

def _host(dtype, shape, rng):
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mnk,blocks,num_warps", [
    ((200, 136, 100), (64, 64, 32), 4),     # masked edges, K % BK != 0 (no 16-byte rows)
    ((200, 136, 48), (64, 64, 32), 4),      # masked edges, K % BK != 0, cp.async eligible
    ((64, 64, 16), (64, 64, 32), 4),        # K < BK, cp.async eligible
    ((96, 64, 160), (32, 64, 32), 4),       # more iterations than stages, masked M edge
    ((64, 64, 20), (64, 64, 32), 4),        # K < BK
    ((128, 128, 32), (128, 128, 32), 8),    # one iteration
    ((128, 256, 1024), (128, 128, 32), 8),  # many iterations
    ((70, 90, 48), (32, 32, 16), 2),
    ((64, 64, 0), (64, 64, 32), 4),         # no iteration
])
def test_prefetched_masked_matmul_on_gpu(dtype, mnk, blocks, num_warps, num_stages):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + n + k)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    masked_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=num_warps, num_stages=num_stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * max(k, 1) ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3])
@pytest.mark.parametrize("s,k", [(256, 0), (256, 32), (256, 64), (256, 512)])
def test_prefetched_pointer_matmul_on_gpu(s, k, num_stages):
    rng = np.random.default_rng(s + k)
    a, b = _host("float16", (s, k), rng), _host("float16", (k, s), rng)
    c = naiad.to_device(np.full((s, s), np.nan, np.float16))
    pointer_matmul[((s // 128) ** 2,)](naiad.to_device(a), naiad.to_device(b), c, s, s, k, k, s,
                                       s, BM=128, BN=128, BK=32, num_warps=8,
                                       num_stages=num_stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)
