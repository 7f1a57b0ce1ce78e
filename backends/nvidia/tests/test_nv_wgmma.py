"""Hopper wgmma path (naiad_nvidia.ir.wgmma_smem, lowering.wgmma, the ring's wgmma mode).

Without a GPU: (1) the addresses ``wgmma.mma_async`` reads, computed by an independent model
of the PTX ISA's canonical shared-memory layouts from the descriptors the lowering builds, hold
exactly the elements the cp.async copies wrote there; (2) the accumulator fragment order of
the model covers the #nvidia_mma registers once; (3) compiled kernels use wgmma for sm_90a with
no local memory and no serialisation warning from ptxas; (4) the remarks name the line and the
reason when a dot stays off wgmma. On the H200 (``gpu`` tests): numerics against numpy.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.gpu.linear_layout import LinearLayout
from naiad_nvidia.ir.wgmma_smem import OperandTile, WgmmaStage
from naiad_nvidia.lowering.wgmma import plan
from naiad_nvidia.ir.mma_layout import NvidiaMmaLayout
from nv_matmul_kernels import pointer_matmul
from naiad_nvidia.lowering.mma_lowering import register_of
from nv_matmul_kernels import masked_matmul

# -- an independent model of what wgmma reads (PTX ISA, "Shared Memory Matrix Layout") --------


def _decode(desc: int) -> tuple[int, int, int, int]:
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    width = {1: 128, 2: 64, 3: 32}[desc >> 62]
    return start, lbo, sbo, width


def _swizzle(addr: int, width: int) -> int:
    """Swizzle<B, 4, 3>: bits 4.. XOR bits 7.. (B = 3, 2, 1 for 128, 64, 32 bytes)."""
    bits = {128: 3, 64: 2, 32: 1}[width]
    mask = (1 << bits) - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def k_major_address(desc: int, i: int, j: int, elem: int = 2) -> int:
    """Byte address of element (row i, k j) of a K-major operand of ``elem``-byte elements:
    ((8, m), (T, 2k)) : ((W / elem, SBO), (1, T)) elements, then the swizzle."""
    start, _, sbo, width = _decode(desc)
    linear = start + (i % 8) * width + j * elem + (i // 8) * sbo
    return _swizzle(linear, width)


def mn_major_address(desc: int, k: int, n: int) -> int:
    """Byte address of element (k, n) of an MN-major 16-bit operand:
    ((T, W / 16, m), (8, k)) : ((1, T, LBO), (W / 2, SBO)) elements, then the swizzle."""
    start, lbo, sbo, width = _decode(desc)
    per_atom = width // 2
    linear = (start + 2 * (n % per_atom) + (n // per_atom) * lbo
              + 2 * (k % 8) * per_atom + (k // 8) * sbo)
    return _swizzle(linear, width)


SHAPES = [(64, 16, 16, 4), (64, 32, 32, 4), (128, 128, 64, 4), (128, 256, 64, 8),
          (128, 64, 128, 4), (256, 128, 32, 8), (64, 256, 16, 4)]
KINDS = [(s, "f16") for s in SHAPES] + [((64, 16, 8, 4), "tf32"), ((64, 64, 32, 4), "tf32"),
                                        ((128, 128, 64, 8), "tf32"), ((64, 32, 16, 4), "tf32"),
                                        ((64, 64, 32, 4), "s8"), ((128, 128, 128, 8), "s8"),
                                        ((64, 32, 256, 4), "s8")]
ELEM = {"f16": 2, "tf32": 4, "s8": 1}


@pytest.mark.parametrize("shape,kind", KINDS)
def test_descriptors_address_the_stored_elements(shape, kind):
    m, n, k, warps = shape
    stage = WgmmaStage(m, n, k, kind)
    elem = ELEM[kind]
    base = 3 * stage.bytes  # a ring slot other than 0: slots are 1024-byte aligned
    assert stage.bytes % 1024 == 0 and stage.b_offset % 1024 == 0
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    k_step = 16 * 2 // elem
    for group in range(warps // 4):
        a_base = base + stage.a.start_byte(64 * group, 0)
        for ins in plan(m, n, k, warps, kind):
            da = stage.a.descriptor_bits() | (((a_base + ins.a_byte) & 0x3FFFF) >> 4)
            db = stage.b.descriptor_bits() | (((base + stage.b_offset + ins.b_byte)
                                                & 0x3FFFF) >> 4)
            row0 = ins.row0 + 64 * group
            for i, j in zip(rng.integers(0, 64, 40), rng.integers(0, k_step, 40)):
                want = base + elem * stage.a.offset_of((row0 + i, ins.kk + j))
                assert k_major_address(da, int(i), int(j), elem) == want
            for kb, nb in zip(rng.integers(0, k_step, 40), rng.integers(0, ins.n, 40)):
                kb, nb = int(kb), int(nb)
                if kind != "f16":  # B stored transposed (N x K), K-major
                    want = stage.b.offset_of((ins.n0 + nb, ins.kk + kb))
                    got = k_major_address(db, nb, kb, elem)
                else:
                    want = stage.b.offset_of((ins.kk + kb, ins.n0 + nb))
                    got = mn_major_address(db, kb, nb)
                assert got == base + stage.b_offset + elem * want


@pytest.mark.parametrize("m,n,k,warps", SHAPES)
def test_wgmma_fragments_cover_the_accumulator_once(m, n, k, warps):
    """Every register of the #nvidia_mma accumulator is written by exactly one instruction
    per K step, at the element the ISA's D fragment puts there."""
    ll = NvidiaMmaLayout(2, (warps, 1)).to_linear((m, n))
    index = register_of(ll)
    for kk in range(0, k, 16):
        written = [index[c] for ins in plan(m, n, k, warps) if ins.kk == kk for c in ins.coords]
        assert sorted(written) == list(range(ll.in_size("register")))


@pytest.mark.parametrize("elem", [1, 2, 4])
def test_operand_offsets_are_a_permutation(elem):
    for rows, cols in ((64, 16), (64, 32), (128, 64), (64, 128), (16, 256)):
        if cols * elem < 32:
            continue
        tile = OperandTile(rows, cols, "K", elem)
        offs = {tile.offset_of((r, c)) for r in range(rows) for c in range(cols)}
        assert offs == set(range(rows * cols))
        ll = LinearLayout({"register": [(0, 1 << b) for b in range(cols.bit_length() - 1)]
                           + [(1 << b, 0) for b in range(rows.bit_length() - 1)]},
                          (rows, cols))
        lin = tile.offsets(ll)
        for r in (0, 1, 5, rows - 1):
            for c in (0, 3, 8, cols - 1):
                assert lin.apply_flat(register=c + r * cols) == tile.offset_of((r, c))
        # 16-byte chunks stay whole: a run of 16 / elem elements is contiguous
        run = 16 // elem
        assert all(tile.offset_of((r, c + 1)) == tile.offset_of((r, c)) + 1
                   for r in range(rows) for c in range(cols) if (c + 1) % run)


# -- compiled kernels (no GPU needed: nvJitLink assembles for sm_90a) ------------------------


@naiad.jit
def plus_equals_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """``acc += tl.dot(a, b)`` with masked edges and a scaled f32 epilogue."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc * 0.5,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@naiad.jit
def int8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    """int8 x int8 -> int32 with masked edges."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


INT8_SIG = {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32"}


@naiad.jit
def scaled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    """``acc = dot(a, b, acc) * 0.5``: the accumulator is read again inside the loop."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc) * 0.5
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


POINTER_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
               "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
MASKED_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
              "K": "i32"}


def compile_sm90(fn, sig, options, aligned=True, target="nvidia:sm_90", **constexprs):
    spec = {name: {"divisibility": 16} for name in sig} if aligned else {}
    return naiad.compile(fn, signature=sig, constexprs=constexprs, target=target,
                         options=options, specialization=spec)


def _loop(gpu):
    return gpu[gpu.index(" = for "):gpu.index("yield")]


# slots: num_stages + 1 with the copies before the wgmma (one barrier), num_stages with the
# copies after it (two barriers) when the extra slot does not fit or costs a CTA per SM
@pytest.mark.parametrize("bm,bn,bk,warps,stages,per_iter,n_instr,slots", [
    (128, 128, 64, 4, 3, 2 * 4, 128, 3),  # two 64-row blocks per warpgroup, 128B swizzle;
                                          # 3 slots keep 2 CTAs per SM, 4 would not
    (128, 256, 64, 8, 3, 4, 256, 4),      # two warpgroups, the widest N; 1 CTA per SM anyway
    (128, 256, 64, 8, 4, 4, 256, 4),      # 5 slots of 48 KiB do not fit
    (64, 64, 32, 4, 2, 2, 64, 3),         # 64B swizzle
    (64, 64, 16, 4, 4, 1, 64, 5),         # 32B swizzle on A
    (128, 128, 128, 8, 2, 8, 128, 3),     # K over two 128-byte panels
])
def test_pipelined_kernel_uses_wgmma(bm, bn, bk, warps, stages, per_iter, n_instr, slots):
    k = compile_sm90(pointer_matmul, POINTER_SIG, {"num_warps": warps, "num_stages": stages},
                     BM=bm, BN=bn, BK=bk)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    loop = _loop(gpu)
    # fence the copies for the async proxy before the barrier; the wgmma of this iteration
    # stays in flight (pending = 1) and one wait after the loop finishes it
    ring = loop.index("nvidia.wgmma_ring")
    assert loop.index("nvidia.cp_async_wait") < loop.index("nvidia.fence_async_shared") \
        < loop.index("barrier") < ring
    assert "pending = 1" in loop[ring:]
    copies = loop.index("nvidia.cp_async ")
    if slots == stages:  # late copies: after a second barrier that follows the wgmma
        assert loop.count("barrier") == 2 and ring < loop.index("barrier", ring) < copies
    else:                # early copies: before the wgmma, one barrier
        assert loop.count("barrier") == 1 and copies < ring and slots == stages + 1
    assert "nvidia.wgmma_wait" in gpu[gpu.index("yield"):]
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert ".target sm_90a" in ptx and k.metadata["arch"] == "sm_90a"
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n_instr}k16.f32.f16.f16") == per_iter
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert "fence.proxy.async.shared::cta;" in ptx
    # resources: no local memory, and ptxas kept the wgmmas asynchronous
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert k.metadata["spill_bytes"] == 0 and k.metadata["stack"] == 0
    assert "serialized" not in k.metadata["jit_log"]
    assert k.metadata["shared"] == slots * WgmmaStage(bm, bn, bk).bytes
    assert k.metadata["remarks"] == []


def test_plus_equals_dot_accumulates_in_place():
    """``acc += tl.dot(a, b)`` becomes ``dot(a, b, acc)``: the wgmma stays in flight."""
    k = compile_sm90(plus_equals_matmul, MASKED_SIG, {"num_warps": 4, "num_stages": 3},
                     BM=64, BN=64, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    loop = _loop(gpu)
    assert "pending = 1" in loop and "nvidia.wgmma_wait" in gpu
    assert not re.search(r"= add %acc\w*, ", loop)
    assert ptx.count("wgmma.mma_async") == 2 and "ld.local" not in ptx


def test_touched_accumulator_waits_inside_the_loop():
    """An accumulator used again in the body: each iteration waits for its own wgmma
    (pending = 0) and nothing is waited for after the loop."""
    k = compile_sm90(scaled_matmul, MASKED_SIG, {"num_warps": 4, "num_stages": 3},
                     BM=64, BN=64, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert "nvidia.wgmma_ring" in _loop(gpu) and "pending = 0" in _loop(gpu)
    assert "nvidia.wgmma_wait" not in gpu
    assert ptx.count("wgmma.mma_async") == 2 and "ld.local" not in ptx
    assert "serialized" not in k.metadata["jit_log"]


def test_chained_dots_of_attention_use_wgmma():
    """Both dots of an attention loop (B transposed, A computed in registers) store their
    tiles and run on wgmma."""
    from test_nv_mma import ATTN_SIG, attention_kernel

    k = naiad.compile(attention_kernel, signature=ATTN_SIG, constexprs=dict(M=64, D=32, BN=32),
                      target="nvidia:sm_90", options={"num_warps": 4})
    assert k.asm["gpu"].count("nvidia.wgmma_staged") == 2
    assert k.asm["ptx"].count("wgmma.mma_async") == 2 + 2
    assert "mma.sync" not in k.asm["ptx"] and k.metadata["spill_bytes"] == 0


F32_MASKED_SIG = dict(MASKED_SIG, a_ptr="*fp32", b_ptr="*fp32")
F32_POINTER_SIG = dict(POINTER_SIG, a_ptr="*fp32", b_ptr="*fp32")
ELEMENT_COPY = re.compile(r"cp\.async\.ca\.shared\.global \[[^]]*\], \[[^]]*\], 4, ")
CHUNK_COPY = re.compile(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, ")


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(64, 64, 32, 4, 3), (128, 128, 32, 8, 3),
                                                   (128, 128, 32, 4, 3), (128, 64, 32, 4, 4)])
def test_tf32_dot_copies_b_per_element_into_the_ring(bm, bn, bk, warps, stages):
    """tf32 with a row-major (N-contiguous) B, as Triton does it on Hopper: B goes through the
    cp.async ring one 4-byte element per copy into its K-major panel (wgmma reads a 32-bit B
    only K-major), A in 16-byte chunks; no B stored from registers, no spills."""
    k = compile_sm90(pointer_matmul, F32_POINTER_SIG, {"num_warps": warps,
                                                         "num_stages": stages},
                     BM=bm, BN=bn, BK=bk)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert "nvidia.wgmma_ring" in _loop(gpu) and 'kind = "tf32"' in gpu
    assert "nvidia.wgmma_staged" not in gpu
    threads = 32 * warps
    copies = stages - 1 + 1   # the prologue's tiles and the loop's
    assert len(ELEMENT_COPY.findall(ptx)) == copies * bk * bn // threads
    assert len(CHUNK_COPY.findall(ptx)) == copies * bm * bk // (4 * threads)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k8.f32.tf32.tf32") == \
        bk // 8 * bm // (64 * warps // 4)
    assert k.metadata["spill_bytes"] == 0 and k.metadata["remarks"] == []


def test_tf32_dot_with_masked_edges_uses_the_ring():
    f32 = F32_MASKED_SIG
    k = compile_sm90(masked_matmul, f32, {"num_warps": 4}, BM=64, BN=64, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert "nvidia.wgmma_ring" in _loop(gpu) and 'kind = "tf32"' in gpu
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32") == 4
    # masked: each element's copy has its own source size (4, or 0 to zero-fill)
    assert ELEMENT_COPY.search(ptx) and "mma.sync" not in ptx
    assert k.metadata["spill_bytes"] == 0 and k.metadata["remarks"] == []


def test_tf32_dot_without_16_byte_a_rows_stores_b_transposed():
    """A whose row stride is not known to be a multiple of 4 moves 4-byte vectors: the ring
    declines (the remark says why) and the dot stores both tiles for wgmma each iteration."""
    k = compile_sm90(masked_matmul, F32_MASKED_SIG, {"num_warps": 4}, aligned=False,
                     BM=64, BN=64, BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert 'nvidia.wgmma_staged' in gpu and 'kind = "tf32"' in gpu
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32") == 4
    assert "cp.async" not in ptx and k.metadata["spill_bytes"] == 0
    assert f"scratch = {WgmmaStage(64, 64, 32, 'tf32').bytes}" in gpu
    assert k.metadata["remarks"] == [
        f"dot at nv_matmul_kernels.py:{_dot_line(masked_matmul)} does not pipeline its A/B "
        f"tiles through a cp.async ring (stores them to shared memory each iteration) because "
        f"the load of A moves 4-byte vectors, not 16-byte ones (its row stride is not known to "
        f"be a multiple of 4, or a thread holds fewer than 4 consecutive elements along its "
        f"rows)"]


def test_int8_dot_uses_wgmma_or_mma_sync():
    k = compile_sm90(int8_matmul, INT8_SIG, {"num_warps": 8}, BM=128, BN=128, BK=64)
    ptx = k.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8") == 2
    assert k.metadata["spill_bytes"] == 0
    assert [r.split(": wgmma")[1] for r in k.metadata["remarks"]] == [
        " reads a s8 B only K-major, so B is stored transposed from registers each iteration"]
    small = compile_sm90(int8_matmul, INT8_SIG, {"num_warps": 2}, BM=64, BN=64, BK=32)
    assert "wgmma" not in small.asm["ptx"]
    assert "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32" in small.asm["ptx"]
    assert small.metadata["remarks"] == [
        f"dot at test_nv_wgmma.py:{_dot_line(int8_matmul)} uses mma.sync instead of wgmma: "
        f"num_warps=2 is not a multiple of 4 (one warpgroup)"]


def test_sm80_and_option_off_keep_mma_sync():
    for target, options in (("nvidia:sm_80", {"num_warps": 4}),
                            ("nvidia:sm_90", {"num_warps": 4, "wgmma": False})):
        k = compile_sm90(pointer_matmul, POINTER_SIG, options, target=target, BM=64, BN=64, BK=32)
        assert "wgmma" not in k.asm["ptx"] and "mma.sync.aligned" in k.asm["ptx"]
        assert k.metadata["arch"] == target.split(":")[1]
    off = [r for r in k.metadata["remarks"] if "option wgmma is off" in r]
    assert off and off[0].startswith(f"dot at nv_matmul_kernels.py:{_dot_line(pointer_matmul)} ")


def test_wgmma_option_is_validated():
    with pytest.raises(naiad.errors.OptionError, match="option 'wgmma' must be a bool"):
        compile_sm90(pointer_matmul, POINTER_SIG, {"wgmma": "yes"}, BM=64, BN=64, BK=32)


# -- performance remarks ------------------------------------------------------------------------



def _dot_line(fn) -> int:
    import inspect

    src, first = inspect.getsourcelines(getattr(fn, "fn", fn))
    return first + next(i for i, line in enumerate(src) if "tl.dot(" in line)


@pytest.mark.parametrize("options,aligned,reason,uses_wgmma", [
    ({"num_warps": 4}, False, "does not pipeline its A/B tiles through a cp.async ring (stores "
                              "them to shared memory each iteration) because the load of A "
                              "moves 2-byte vectors, not 16-byte ones", True),
    ({"num_warps": 2}, True, "uses mma.sync instead of wgmma: num_warps=2 is not a multiple "
                             "of 4", False),
    ({"num_warps": 8}, True, "uses mma.sync instead of wgmma: M=64 is not a multiple of 128",
     False),
    ({"num_warps": 4, "num_stages": 1}, True, "does not pipeline its A/B tiles through a "
                                              "cp.async ring (stores them to shared memory "
                                              "each iteration) because num_stages=1 leaves no "
                                              "tile to prefetch", True),
    ({"num_warps": 4, "tensor_cores": False}, True, "uses FMA instead of tensor cores: option "
                                                    "tensor_cores is off", False),
])
def test_remarks_name_the_line_and_the_reason(options, aligned, reason, uses_wgmma):
    k = compile_sm90(masked_matmul, MASKED_SIG, options, aligned=aligned, BM=64, BN=64, BK=32)
    want = f"dot at nv_matmul_kernels.py:{_dot_line(masked_matmul)} {reason}"
    assert any(r.startswith(want) for r in k.metadata["remarks"]), k.metadata["remarks"]
    assert ("wgmma.mma_async" in k.asm["ptx"]) == uses_wgmma


def test_unpipelined_dot_stores_its_tiles_for_wgmma():
    """A dot the ring cannot pipeline still runs on wgmma: its (register-prefetched) tiles are
    stored in wgmma's layout, fenced, a barrier, the wgmmas, and a wait for all of them."""
    k = compile_sm90(masked_matmul, MASKED_SIG, {"num_warps": 4}, aligned=False, BM=64, BN=64,
                     BK=32)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert "nvidia.wgmma_staged" in _loop(gpu) and "cp_async" not in gpu
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") == 2
    assert "fence.proxy.async.shared::cta;" in ptx
    assert "wgmma.wait_group.sync.aligned 0;" in ptx and "wait_group.sync.aligned 1" not in ptx
    assert k.metadata["spill_bytes"] == 0 and "serialized" not in k.metadata["jit_log"]
    assert f"scratch = {WgmmaStage(64, 64, 32).bytes}" in _loop(gpu)


def test_remarks_for_f32_dots():
    f32 = dict(MASKED_SIG, a_ptr="*fp32", b_ptr="*fp32")
    k = compile_sm90(masked_matmul, f32, {"num_warps": 2}, BM=64, BN=64, BK=32)
    assert any("uses mma.sync instead of wgmma: num_warps=2" in r for r in k.metadata["remarks"])
    from test_nv_mma import compile_dot, dot_kernel

    k = compile_dot("float32", 64, 32, 32, "float32", "ieee")
    assert k.metadata["remarks"] == [
        f"dot at test_nv_mma.py:{_dot_line(dot_kernel)} uses FMA instead of tensor "
        f"cores: input_precision='ieee' asks for exact f32 products"]


def test_naiad_remarks_prints_them(monkeypatch, capfd):
    monkeypatch.setenv("NAIAD_REMARKS", "1")
    compile_sm90(masked_matmul, MASKED_SIG, {"num_warps": 2}, BM=64, BN=64, BK=32)
    err = capfd.readouterr().err
    assert "naiad remark (masked_matmul): dot at nv_matmul_kernels.py:" in err
    monkeypatch.setenv("NAIAD_REMARKS", "0")
    compile_sm90(masked_matmul, MASKED_SIG, {"num_warps": 2}, BM=64, BN=64, BK=32)
    assert "naiad remark" not in capfd.readouterr().err


# -- on the device ------------------------------------------------------------------------------

def _host(dtype, shape, rng):
    import ml_dtypes

    x = rng.uniform(-1, 1, shape).astype(np.float32)
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mnk,blocks,warps,stages", [
    ((200, 144, 48), (64, 64, 32), 4, 3),       # masked M/N edges, K % BK != 0
    ((256, 256, 512), (128, 128, 64), 4, 3),
    ((256, 512, 256), (128, 256, 64), 8, 4),
    ((300, 208, 160), (64, 64, 16), 4, 4),      # 32B swizzle, many iterations
    ((128, 128, 384), (128, 128, 128), 8, 2),   # two K panels
    ((64, 64, 16), (64, 64, 32), 4, 3),         # K < BK
    ((64, 64, 0), (64, 64, 32), 4, 3),          # no iteration
])
def test_wgmma_masked_matmul_on_gpu(dtype, mnk, blocks, warps, stages):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m * 3 + n + k)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    kern = masked_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=warps, num_stages=stages)
    assert "wgmma.mma_async" in kern.asm["ptx"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * max(k, 1) ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("s,k,blocks,warps", [(512, 1024, (128, 128, 64), 4),
                                              (256, 512, (128, 256, 64), 8),
                                              (256, 64, (64, 64, 64), 4)])
def test_wgmma_pointer_matmul_on_gpu(s, k, blocks, warps):
    bm, bn, bk = blocks
    rng = np.random.default_rng(s + k)
    a, b = _host("float16", (s, k), rng), _host("float16", (k, s), rng)
    c = naiad.to_device(np.full((s, s), np.nan, np.float16))
    kern = pointer_matmul[((s // bm) * (s // bn),)](
        naiad.to_device(a), naiad.to_device(b), c, s, s, k, k, s, s, BM=bm, BN=bn, BK=bk,
        num_warps=warps, num_stages=3)
    assert "wgmma.mma_async" in kern.asm["ptx"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(100, 80, 96), (128, 128, 512)])
def test_wgmma_plus_equals_on_gpu(m, n, k):
    rng = np.random.default_rng(m + n + k)
    a, b = _host("float16", (m, k), rng), _host("float16", (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    kern = plus_equals_matmul[(naiad.cdiv(m, 64), naiad.cdiv(n, 64))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=64, BN=64, BK=32, num_warps=4,
        num_stages=3)
    assert "wgmma.mma_async" in kern.asm["ptx"]
    want = 0.5 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(100, 80, 96), (64, 128, 320)])
def test_wgmma_touched_accumulator_on_gpu(m, n, k):
    rng = np.random.default_rng(m + n + k)
    a, b = _host("float16", (m, k), rng), _host("float16", (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    kern = scaled_matmul[(naiad.cdiv(m, 64), naiad.cdiv(n, 64))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=64, BN=64, BK=32, num_warps=4,
        num_stages=3)
    assert "wgmma.mma_async" in kern.asm["ptx"]
    want = np.zeros((m, n))
    for k0 in range(0, k, 32):
        want = (want + a[:, k0:k0 + 32].astype(np.float64) @ b[k0:k0 + 32].astype(np.float64)) * 0.5
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3)


@naiad.jit
def dot_used_twice(a_ptr, b_ptr, c_ptr, BM: tl.constexpr):
    r = tl.arange(0, BM)
    a = tl.load(a_ptr + r[:, None] * BM + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BM + r[None, :])
    acc = tl.load(c_ptr + r[:, None] * BM + r[None, :])
    d = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * BM + r[None, :], acc + d + d)


def _dots(fn, sig, **constexprs):
    from naiad.ir.parser import parse_module

    k = naiad.compile(fn, signature=sig, constexprs=constexprs, target="reference")
    module = parse_module(k.asm["tile"])
    return [op for f in module.functions.values() for op in f.walk() if op.name == "dot"]


def test_fold_accumulating_add_only_when_exact_pattern():
    from naiad.gpu.matrix.accelerate import fold_accumulating_add

    (dot,) = _dots(plus_equals_matmul, MASKED_SIG, BM=64, BN=64, BK=32)
    add_user = dot.results[0].uses[0][0]
    assert add_user.name == "add" and fold_accumulating_add(dot)
    assert dot.operands[2].is_block_arg  # the loop's accumulator
    assert all(u.name != "add" for u, _ in dot.results[0].uses)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    (twice,) = _dots(dot_used_twice, sig, BM=64)
    assert not fold_accumulating_add(twice)        # two users of the product
    (scaled,) = _dots(scaled_matmul, MASKED_SIG, BM=64, BN=64, BK=32)
    assert not fold_accumulating_add(scaled)       # the accumulator is not zero


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,blocks,warps", [((200, 144, 96), (64, 64, 32), 4),
                                              ((256, 256, 256), (128, 128, 32), 8),
                                              ((64, 48, 40), (64, 16, 16), 4)])
def test_wgmma_tf32_on_gpu(mnk, blocks, warps):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + 2 * n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    kern = masked_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=warps)
    assert "wgmma.mma_async.sync.aligned" in kern.asm["ptx"] and "tf32" in kern.asm["ptx"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=5e-3, atol=5e-3 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,blocks,warps,stages", [
    ((200, 144, 96), (64, 64, 32), 4, 2),
    ((256, 256, 256), (128, 128, 32), 8, 3),     # bench's tf32 config
    ((130, 90, 160), (128, 128, 32), 4, 4),      # masked rows, N not a multiple of 4
    ((256, 130, 512), (128, 64, 32), 4, 5),
    ((64, 64, 16), (64, 64, 32), 4, 3)])         # K < BK: one masked tile
def test_tf32_ring_on_gpu(mnk, blocks, warps, stages):
    """tf32 through the cp.async ring (B one 4-byte element per copy, K-major) against numpy
    in float64, masked edges, output poisoned with NaN."""
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + 5 * n + k + stages)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    kern = masked_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=warps, num_stages=stages)
    assert ELEMENT_COPY.search(kern.asm["ptx"]) and "nvidia.wgmma_ring" in kern.asm["gpu"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=5e-3, atol=5e-3 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,blocks,warps", [((200, 144, 96), (64, 64, 32), 4),
                                              ((256, 256, 512), (128, 128, 64), 8),
                                              ((70, 40, 300), (64, 32, 128), 4)])
def test_wgmma_int8_on_gpu(mnk, blocks, warps):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + 3 * n + k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = naiad.to_device(np.full((m, n), -(2 ** 31), np.int32))
    kern = int8_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=warps)
    assert "s32.s8.s8" in kern.asm["ptx"]
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int64) @ b.astype(np.int64))
