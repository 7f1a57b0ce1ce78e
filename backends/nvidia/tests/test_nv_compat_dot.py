"""The PTX that Triton's own dot tests (test_core.py) assert on, for naiad's sm_90 compile:
tl.dot_scaled runs its upcast operands on tensor cores with 128-bit loads and stores, and the
small / split-precision dots use mma as Triton's do. Compiled ahead of time: no GPU needed."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl

#: the regex test_scaled_dot applies to the PTX
TENSOR_CORE_16BIT = re.compile(
    r"(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.(f|bf)16.(f|bf)16")


@naiad.jit
def scaled_dot_kernel(a_base, stride_a0, stride_a1, a_scale, b_base, stride_b0, stride_b1,
                      b_scale, out, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, type_a: tl.constexpr, type_b: tl.constexpr):
    """test_core.py's dot_scale_kernel: one operand microscaled, the other not."""
    KA: tl.constexpr = BLOCK_K // 2 if type_a == "e2m1" else BLOCK_K
    KB: tl.constexpr = BLOCK_K // 2 if type_b == "e2m1" else BLOCK_K
    a = tl.load(a_base + tl.arange(0, BLOCK_M)[:, None] * stride_a0
                + tl.arange(0, KA)[None, :] * stride_a1)
    b = tl.load(b_base + tl.arange(0, KB)[:, None] * stride_b0
                + tl.arange(0, BLOCK_N)[None, :] * stride_b1)
    GROUPS: tl.constexpr = BLOCK_K // 32
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, BLOCK_M)[:, None] * GROUPS
                          + tl.arange(0, GROUPS)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, BLOCK_N)[:, None] * GROUPS
                          + tl.arange(0, GROUPS)[None, :])
    c = tl.dot_scaled(a, a_scale, type_a, b, b_scale, type_b)
    tl.store(out + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :],
             c.to(tl.bfloat16))


def _pointer(fmt):
    return {"bf16": "*bf16", "fp16": "*fp16"}.get(fmt, "*u8")


def _stride_fact(v):
    return {"equal_to": 1} if v == 1 else {"divisibility": 16}


def compile_scaled_dot(M, N, K, col_a, col_b, rhs_scale, mxfp, normal, num_warps=4):
    """Compile as the runtime would specialize test_scaled_dot's arguments."""
    ta, tb = (normal, mxfp) if rhs_scale else (mxfp, normal)
    ka = K // 2 if ta == "e2m1" else K
    kb = K // 2 if tb == "e2m1" else K
    sa = (1, M) if col_a else (ka, 1)
    sb = (1, kb) if col_b else (N, 1)
    scaled = "b_scale" if rhs_scale else "a_scale"
    sig = {"a_base": _pointer(ta), "stride_a0": "i32", "stride_a1": "i32", "b_base": _pointer(tb),
           "stride_b0": "i32", "stride_b1": "i32", "out": "*bf16", scaled: "*u8"}
    spec = {p: {"divisibility": 16} for p in ("a_base", "b_base", "out", scaled)}
    for name, v in zip(("stride_a0", "stride_a1", "stride_b0", "stride_b1"), sa + sb):
        spec[name] = _stride_fact(v)
    const = dict(BLOCK_M=M, BLOCK_N=N, BLOCK_K=K, type_a=ta, type_b=tb)
    const["a_scale" if rhs_scale else "b_scale"] = None
    return naiad.compile(scaled_dot_kernel, signature=sig, constexprs=const,
                         target="nvidia:sm_90", options={"num_warps": num_warps},
                         specialization=spec)


@pytest.mark.parametrize("M,N,K,col_a,col_b,rhs_scale,mxfp,normal", [
    (64, 64, 128, False, False, False, "e4m3", "bf16"),     # wgmma
    (32, 32, 64, True, False, False, "e2m1", "fp16"),       # mma.sync, fp16 compute
    (128, 32, 64, False, True, True, "e5m2", "e4m3"),       # both fp8: bf16 compute
    (32, 128, 128, True, True, False, "e2m1", "bf16"),
])
def test_scaled_dot_uses_tensor_cores_and_vector_memory(M, N, K, col_a, col_b, rhs_scale, mxfp,
                                                        normal):
    ptx = compile_scaled_dot(M, N, K, col_a, col_b, rhs_scale, mxfp, normal).asm["ptx"]
    assert TENSOR_CORE_16BIT.search(ptx)
    assert "ld.global.v4" in ptx
    assert "st.global.v4" in ptx


@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PRECISION))


def compile_dot(dtype, m, n, k, precision="ieee", num_warps=4):
    ptr = {"float16": "*fp16", "float32": "*fp32"}[dtype]
    return naiad.compile(dot_kernel, signature={"a_ptr": ptr, "b_ptr": ptr, "c_ptr": "*fp32"},
                         constexprs=dict(M=m, N=n, K=k, PRECISION=precision),
                         target="nvidia:sm_90", options={"num_warps": num_warps})


@pytest.mark.parametrize("precision,instruction,count", [
    ("tf32x3", r"(wgmma.mma_async|mma).sync.aligned.m\d+n\d+k8(.row.col)?.f32.tf32.tf32", 3),
    ("bf16x3", r"(wgmma.mma_async|mma).sync.aligned.m\d+n\d+k16(.row.col)?.f32.bf16.bf16", 3),
    ("bf16x6", r"(wgmma.mma_async|mma).sync.aligned.m\d+n\d+k16(.row.col)?.f32.bf16.bf16", 6),
])
@pytest.mark.parametrize("mnk", [(16, 16, 16), (64, 64, 64)])
def test_split_precision_dots_run_their_parts_on_tensor_cores(precision, instruction, count,
                                                               mnk):
    k = compile_dot("float32", *mnk, precision=precision)
    assert re.search(instruction, k.asm["ptx"])
    # the split happens in the tile IR: one tensor-core dot per part product
    assert k.asm["tile"].count(" dot ") == count
    assert "tf32x3" not in k.asm["tile"] and "bf16x" not in k.asm["tile"]


@pytest.mark.parametrize("num_warps,mnk", [(4, (16, 16, 16)), (16, (32, 32, 128))])
@pytest.mark.parametrize("dtype,precision,instruction", [
    ("float16", "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("float32", "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
])
def test_dots_smaller_than_the_warps_tile_use_mma(num_warps, mnk, dtype, precision,
                                                  instruction):
    assert instruction in compile_dot(dtype, *mnk, precision, num_warps).asm["ptx"]


@naiad.jit
def int8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("mnk,num_warps,instruction", [
    ((32, 128, 64), 4, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    ((128, 128, 64), 2, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    ((32, 32, 128), 16, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    ((64, 128, 128), 4, "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8"),
])
def test_int8_dots_use_tensor_cores(mnk, num_warps, instruction):
    """Where warpgroups cannot take an int8 dot (M below 64 per warpgroup, 2 warps), it runs
    on mma.sync m16n8k32 as Triton's does, not on FMAs."""
    m, n, k = mnk
    kern = naiad.compile(int8_dot_kernel, signature={"a_ptr": "*i8", "b_ptr": "*i8",
                                                     "c_ptr": "*i32"},
                         constexprs=dict(M=m, N=n, K=k), target="nvidia:sm_90",
                         options={"num_warps": num_warps})
    assert instruction in kern.asm["ptx"]


@naiad.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               IMPRECISE: tl.constexpr):
    """test_dot_max_num_imprecise_acc's kernel: a K loop of float8 dots into an f32 acc."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(K, BK), num_stages=3):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc=acc, max_num_imprecise_acc=IMPRECISE)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("fp8,every", [("*fp8e5", 32), ("*fp8e4nv", 64), ("*fp8e4nv", 128),
                                       ("*fp8e5", None)])
def test_max_num_imprecise_acc_promotes_fp8_wgmma_sums(fp8, every):
    """Triton's count: one add.f32 per accumulator register and per ``every`` K elements."""
    BM, BN, BK, warps = 128, 256, 128, 8
    kern = naiad.compile(fp8_matmul, signature={"a_ptr": fp8, "b_ptr": fp8, "c_ptr": "*fp32",
                                                "K": "i32"},
                         constexprs=dict(BM=BM, BN=BN, BK=BK, IMPRECISE=every),
                         target="nvidia:sm_90", options={"num_warps": warps})
    ptx = kern.asm["ptx"]
    assert re.search(r"wgmma.mma_async.sync.aligned.m64n256k32.f32.e(5m2|4m3)", ptx)
    want = BM * BN // (32 * warps) * (BK // every) if every else 0
    assert ptx.count("add.f32") == want


def test_max_num_imprecise_acc_on_a_staged_fp8_wgmma():
    """A single dot (no loop: nvidia.wgmma_staged) promotes the same way."""
    kern = naiad.compile(fp8_matmul, signature={"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv",
                                                "c_ptr": "*fp32", "K": "i32"},
                         constexprs=dict(BM=64, BN=64, BK=64, IMPRECISE=32),
                         target="nvidia:sm_90", options={"num_warps": 4},
                         specialization={"K": {"equal_to": 1}})
    assert kern.asm["ptx"].count("add.f32") == 64 * 64 // 128 * 2
