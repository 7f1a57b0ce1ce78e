"""Tensor cores (mma.sync) for tl.dot on NVIDIA: fragment layouts against the PTX ISA tables,
an emulation of the lowering's instruction plan, the accelerate-matmul pass, the generated PTX,
and (on a GPU only) numerics against numpy.

The PTX tables below are written from the PTX ISA ("Matrix Fragments for mma.m16n8k16 with
floating point type", "... for mma.m16n8k8", .tf32), independently of naiad_nvidia.ir.mma_layout.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import IRError, OptionError
from naiad.gpu.layouts import DotOperandLayout
from naiad_nvidia.passes.accelerate_matmul import choose_warps
from naiad_nvidia.ir.mma_layout import K_PER_INSTRUCTION, NvidiaMmaLayout
from naiad_nvidia.lowering.mma_lowering import mma_plan
from naiad_nvidia.options import NvidiaOptions
from nv_matmul_kernels import masked_matmul as matmul_kernel


# -- the PTX ISA's fragment tables: element i of lane l -> (row, col) in the instruction's tile --

def ptx_c(i, lane):
    g, t = lane >> 2, lane % 4
    row = g if i < 2 else g + 8
    return row, t * 2 + (i & 0x1)


def ptx_a16(i, lane):
    g, t = lane >> 2, lane % 4
    row = g if (0 <= i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 0x1) + (8 if i >= 4 else 0)
    return row, col


def ptx_b16(i, lane):
    g, t = lane >> 2, lane % 4
    row = t * 2 + (i & 0x1) + (8 if i >= 2 else 0)
    return row, g


def ptx_a_tf32(i, lane):
    g, t = lane >> 2, lane % 4
    row = g if i in (0, 2) else g + 8
    col = t if i in (0, 1) else t + 4
    return row, col


def ptx_b_tf32(i, lane):
    g, t = lane >> 2, lane % 4
    return (t if i == 0 else t + 4), g


def ptx_a8(i, lane):
    """m16n8k32 .s8 A: four .b32 registers of four bytes."""
    g, t = lane >> 2, lane % 4
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    return row, t * 4 + (i & 0x3) + (16 if i >= 8 else 0)


def ptx_b8(i, lane):
    g, t = lane >> 2, lane % 4
    return t * 4 + (i & 0x3) + (16 if i >= 4 else 0), g


#: kWidth -> (A table, elements, tile shape), (B table, elements, tile shape)
TABLES = {2: ((ptx_a16, 8, (16, 16)), (ptx_b16, 4, (16, 8))),
          1: ((ptx_a_tf32, 4, (16, 8)), (ptx_b_tf32, 2, (8, 8))),
          4: ((ptx_a8, 16, (16, 32)), (ptx_b8, 8, (32, 8)))}


# -- layouts ----------------------------------------------------------------------------------

def test_result_fragment_is_the_ptx_c_fragment():
    ll = NvidiaMmaLayout(2, (1, 1)).to_linear((16, 8))
    assert ll.in_size("register") == 4 and ll.in_size("lane") == 32
    for lane, i in itertools.product(range(32), range(4)):
        assert ll.apply(register=i, lane=lane) == ptx_c(i, lane), (lane, i)


@pytest.mark.parametrize("k_width", [2, 1, 4])
def test_operand_fragments_are_the_ptx_a_b_fragments(k_width):
    parent = NvidiaMmaLayout(2, (1, 1))
    for op_idx, (table, count, shape) in enumerate(TABLES[k_width]):
        ll = DotOperandLayout(op_idx, parent, k_width).to_linear(shape)
        assert ll.in_size("register") == count
        for lane, i in itertools.product(range(32), range(count)):
            assert ll.apply(register=i, lane=lane) == table(i, lane), (op_idx, lane, i)


@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (1, 4), (4, 2), (2, 4)])
def test_multi_warp_layouts_cover_their_tensors(warps):
    lay = NvidiaMmaLayout(2, warps)
    c = lay.to_linear((128, 64))
    assert c.is_bijective()   # every result element computed exactly once
    a = DotOperandLayout(0, lay, 2).to_linear((128, 32))
    b = DotOperandLayout(1, lay, 2).to_linear((32, 64))
    assert a.is_surjective() and b.is_surjective()
    # A is replicated over the warps of one row of warps, B over one column
    assert sum(1 for v in a.bases["warp"] if not any(v)) == warps[1].bit_length() - 1
    assert sum(1 for v in b.bases["warp"] if not any(v)) == warps[0].bit_length() - 1


def test_layout_rejects_bad_parameters_and_fma_operands():
    with pytest.raises(IRError, match="version 2"):
        NvidiaMmaLayout(3, (2, 2))
    with pytest.raises(IRError, match="powers of two"):
        NvidiaMmaLayout(2, (3, 1))
    with pytest.raises(IRError, match="instrShape"):
        NvidiaMmaLayout(2, (2, 2), (16, 16))
    with pytest.raises(IRError, match="kWidth"):   # the core's FMA dot asks for kWidth 0
        DotOperandLayout(0, NvidiaMmaLayout(2, (2, 2)), 0).to_linear((32, 32))


def test_layout_prints_and_parses_back():
    from naiad.gpu.layouts import parse_layout, register_layout

    register_layout(NvidiaMmaLayout)
    lay = DotOperandLayout(1, NvidiaMmaLayout(2, (2, 4)), 2)
    text = str(lay)
    assert "#nvidia_mma<version = 2, warpsPerCTA = [2, 4], instrShape = [16, 8]>" in text
    assert parse_layout(text) == lay


# -- the lowering's plan, emulated with the PTX tables --------------------------------------

def emulate(m, n, k, warps, k_width, rng):
    """Run the lowering's instruction plan on emulated warps: registers come from the layouts,
    each mma reads and writes its tiles through the PTX tables. Returns (got, want)."""
    lay = NvidiaMmaLayout(2, warps)
    a_ll = DotOperandLayout(0, lay, k_width).to_linear((m, k))
    b_ll = DotOperandLayout(1, lay, k_width).to_linear((k, n))
    c_ll = lay.to_linear((m, n))
    A, B, C = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n))
    (a_tab, _, a_shape), (b_tab, _, b_shape) = TABLES[k_width]
    plan = mma_plan(a_ll, b_ll, c_ll, k_width, warps)
    got = np.full((m, n), np.nan)
    nwarps = warps[0] * warps[1]
    for w in range(nwarps):
        regs = {name: [[X[ll.apply(r, lane, w)] for r in range(ll.in_size("register"))]
                       for lane in range(32)]
                for name, X, ll in (("a", A, a_ll), ("b", B, b_ll), ("c", C, c_ll))}
        for a_regs, b_regs, c_regs in plan:
            ta, tb, tc = np.full(a_shape, np.nan), np.full(b_shape, np.nan), np.full((16, 8), np.nan)
            for lane in range(32):
                for i, r in enumerate(a_regs):
                    ta[a_tab(i, lane)] = regs["a"][lane][r]
                for i, r in enumerate(b_regs):
                    tb[b_tab(i, lane)] = regs["b"][lane][r]
                for i, r in enumerate(c_regs):
                    tc[ptx_c(i, lane)] = regs["c"][lane][r]
            assert not (np.isnan(ta).any() or np.isnan(tb).any() or np.isnan(tc).any())
            d = ta @ tb + tc
            for lane in range(32):
                for i, r in enumerate(c_regs):
                    regs["c"][lane][r] = d[ptx_c(i, lane)]
        for lane in range(32):
            for r in range(c_ll.in_size("register")):
                got[c_ll.apply(r, lane, w)] = regs["c"][lane][r]
    return got, A @ B + C


@pytest.mark.parametrize("m,n,k,warps", [(16, 8, 16, (1, 1)), (32, 32, 32, (2, 2)),
                                         (64, 16, 32, (4, 1)), (16, 64, 64, (1, 4)),
                                         (128, 64, 32, (4, 2)), (64, 128, 16, (2, 4)),
                                         # replicated warps (the tile exceeds the result)
                                         (16, 16, 16, (2, 2)), (16, 8, 16, (2, 1)),
                                         (32, 32, 128, (4, 4))])
@pytest.mark.parametrize("k_width", [2, 1, 4])
def test_instruction_plan_computes_the_matrix_product(m, n, k, warps, k_width):
    if k % K_PER_INSTRUCTION[k_width]:
        pytest.skip(f"K={k} is not a multiple of kWidth {k_width}'s instruction K")
    got, want = emulate(m, n, k, warps, k_width, np.random.default_rng(m * n + k + k_width))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- the pass and the generated code ------------------------------------------------------------

@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               OUT: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=OUT, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


SIG_ELEM = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float64": "*fp64",
            "int8": "*i8"}
OUT = {"float32": tl.float32, "float16": tl.float16, "float64": tl.float64, "int32": tl.int32}


def compile_dot(dtype, m, n, k, out="float32", precision="ieee", **options):
    """The mma.sync path unless ``wgmma=True`` is passed (wgmma: test_nv_wgmma.py)."""
    options.setdefault("wgmma", False)
    sig = {"a_ptr": SIG_ELEM[dtype], "b_ptr": SIG_ELEM[dtype],
           "c_ptr": SIG_ELEM.get(out, "*i32") if out != "float16" else "*fp16"}
    return naiad.compile(dot_kernel, signature=sig,
                         constexprs=dict(M=m, N=n, K=k, OUT=OUT[out], PRECISION=precision),
                         target="nvidia:sm_90", options=options)


@pytest.mark.parametrize("dtype,out,precision,ptx", [
    ("float16", "float32", "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("bfloat16", "float32", "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("float16", "float16", "ieee", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    ("float32", "float32", "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("int8", "int32", "ieee", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
])
def test_eligible_dots_use_tensor_cores(dtype, out, precision, ptx):
    k = compile_dot(dtype, 64, 32, 32, out, precision)
    assert "nvidia.mma" in k.asm["gpu"] and " dot " not in k.asm["gpu"]
    lines = [ln.strip() for ln in k.asm["ptx"].splitlines() if "mma.sync" in ln]
    # 4 warps as 2x2 over 64x32: 2x2 tiles of 16x8 per warp, K/16 (tf32: K/8, int8: K/32)
    steps = 32 // {"tf32": 8, "int8": 32}.get(precision if dtype == "float32" else dtype, 16)
    assert len(lines) == 4 * steps and all(ln.startswith(ptx) for ln in lines)
    # f32 operands are rounded to tf32, not truncated
    assert ("cvt.rna.tf32.f32" in k.asm["ptx"]) == (precision == "tf32")


@pytest.mark.parametrize("dtype,out,precision,opts", [
    ("float32", "float32", "ieee", {}),            # exact FMA asked for
    ("float64", "float64", "ieee", {}),
    ("int8", "int32", "ieee", {"tensor_cores": False}),
    ("float16", "float32", "ieee", {"tensor_cores": False}),
    ("bfloat16", "float32", "ieee", {"num_warps": 8, "tensor_cores": False}),
])
def test_other_dots_stay_on_fma(dtype, out, precision, opts):
    k = compile_dot(dtype, 32, 32, 32, out, precision, **opts)
    assert "nvidia.mma" not in k.asm["gpu"] and " dot " in k.asm["gpu"]
    assert "mma.sync" not in k.asm["ptx"]


def test_small_dots_replicate_warps_on_tensor_cores():
    # 16x16 with 8 warps: no split tiles it exactly; as Triton, the surplus warps replicate
    assert choose_warps(16, 16, 8) == (4, 2)
    for num_warps in (8, 4, 2):
        k = compile_dot("float16", 16, 16, 16, num_warps=num_warps)
        assert "mma.sync.aligned.m16n8k16" in k.asm["ptx"]
        # ldmatrix plans tile exactly: replicated warps read fragments through convert_layout
        assert ("nvidia.mma_staged" in k.asm["gpu"]) == (num_warps == 2)
    assert choose_warps(8, 16, 4) is None                 # below one 16x8 tile: FMA
    assert "mma.sync" not in compile_dot("float16", 8, 16, 16).asm["ptx"]


def test_choose_warps_prefers_small_per_warp_operands():
    assert choose_warps(128, 128, 4) == (2, 2)
    assert choose_warps(128, 16, 4) == (4, 1)
    assert choose_warps(16, 128, 4) == (1, 4)
    assert choose_warps(64, 64, 8) == (4, 2)
    assert choose_warps(32, 8, 1) == (1, 1)
    # replicated: the most warps with distinct tiles (here 2 of 2, 4 of 16)
    assert choose_warps(16, 8, 2) == (2, 1)
    assert choose_warps(16, 16, 2) == (1, 2)
    assert choose_warps(32, 32, 16) == (4, 4)


def test_loop_carried_accumulator_stays_in_the_mma_layout():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32"}
    # the mma.sync path (sm_80/sm_89, and sm_90 with wgmma off; wgmma: test_nv_wgmma.py)
    k = naiad.compile(matmul_kernel, signature=sig, constexprs=dict(BM=64, BN=64, BK=32),
                      target="nvidia:sm_90", options={"num_warps": 4, "wgmma": False})
    gpu = k.asm["gpu"]
    loop = gpu[gpu.index(" = for "):gpu.index("yield")]
    header = loop.splitlines()[0]
    assert "#nvidia_mma<version = 2, warpsPerCTA = [2, 2]" in header
    # A and B reach their fragments through the staged mma (ldmatrix); nothing converts,
    # in particular not the accumulator
    assert "convert_layout" not in loop and "nvidia.mma_staged" in loop
    assert k.asm["ptx"].count("mma.sync.aligned.m16n8k16") == 2 * 4 * 2
    assert k.metadata["spill_bytes"] == 0


def test_gpu_ir_with_mma_parses_back_and_verifies():
    from naiad.ir.parser import parse_module
    from naiad.ir.printer import print_module
    from naiad.ir.verifier import verify

    text = compile_dot("bfloat16", 32, 64, 32).asm["gpu"]
    module = parse_module(text)
    verify(module)
    assert print_module(module) == text


def test_verifier_rejects_mismatched_mma_operands():
    from naiad.ir.parser import parse_module
    from naiad.ir.verifier import verify

    text = compile_dot("float16", 32, 32, 32).asm["gpu"]
    bad = text.replace('kind = "f16"', 'kind = "bf16"')
    assert bad != text
    with pytest.raises(IRError, match="kind bf16 takes bf16 operands"):
        verify(parse_module(bad))


def test_tensor_cores_option_is_validated():
    assert NvidiaOptions().tensor_cores is True
    assert NvidiaOptions(tensor_cores=False).as_dict()["tensor_cores"] is False
    with pytest.raises(OptionError, match="tensor_cores"):
        NvidiaOptions(tensor_cores=1)


# -- on the device ------------------------------------------------------------------------------

def _host(dtype, shape, rng):
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("mnk", [(16, 16, 16), (32, 64, 16), (64, 32, 32), (128, 64, 64),
                                 (64, 128, 32), (16, 128, 64)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_dot_on_gpu(dtype, mnk, num_warps):
    m, n, k = mnk
    rng = np.random.default_rng(m * 7 + n * 3 + k + num_warps)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    dot_kernel[(1,)](naiad.to_device(a), naiad.to_device(b), c, M=m, N=n, K=k,
                     OUT=tl.float32, PRECISION="ieee", num_warps=num_warps,
                     tensor_cores=True)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,out", [("float16", "float16"), ("float32", "float32")])
def test_mma_f16_accumulator_and_tf32_on_gpu(dtype, out):
    m, n, k = 64, 64, 32
    rng = np.random.default_rng(5)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.dtype(out)))
    dot_kernel[(1,)](naiad.to_device(a), naiad.to_device(b), c, M=m, N=n, K=k,
                     OUT=OUT[out], PRECISION="tf32" if dtype == "float32" else "ieee",
                     num_warps=4)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mnk,blocks,num_warps", [((200, 136, 96), (64, 64, 32), 4),
                                                  ((128, 256, 64), (128, 128, 32), 8),
                                                  ((70, 90, 48), (32, 32, 16), 2)])
def test_mma_tiled_matmul_on_gpu(dtype, mnk, blocks, num_warps):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + n + k)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    matmul_kernel[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=bm, BN=bn, BK=bk,
        num_warps=num_warps, tensor_cores=True)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * k ** 0.5)


@naiad.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, M: tl.constexpr, D: tl.constexpr,
                     BN: tl.constexpr):
    """Two chained dots with row reductions between them (flash attention's inner loop)."""
    rm = tl.arange(0, M)
    rd = tl.arange(0, D)
    rn = tl.arange(0, BN)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((M,), -1e30, tl.float32)
    l_i = tl.zeros((M,), dtype=tl.float32)
    acc = tl.zeros((M, D), dtype=tl.float32)
    for start in range(0, L, BN):
        kt = tl.load(k_ptr + (start + rn)[None, :] * D + rd[:, None])
        s = tl.dot(q, kt)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + (start + rn)[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


ATTN_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "L": "i32"}


def test_chained_dots_with_reductions_compile_to_mma():
    k = naiad.compile(attention_kernel, signature=ATTN_SIG, constexprs=dict(M=64, D=32, BN=32),
                      target="nvidia:sm_90", options={"num_warps": 4, "wgmma": False})
    assert k.asm["gpu"].count("nvidia.mma") == 2
    assert k.asm["ptx"].count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [2, 4])
def test_attention_on_gpu(num_warps):
    m, d, bn, length = 64, 32, 32, 96
    rng = np.random.default_rng(11)
    q, k, v = (_host("float16", shape, rng) for shape in ((m, d), (length, d), (length, d)))
    o = naiad.to_device(np.full((m, d), np.nan, np.float32))
    attention_kernel[(1,)](naiad.to_device(q), naiad.to_device(k), naiad.to_device(v), o,
                           length, M=m, D=d, BN=bn, num_warps=num_warps)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(o.numpy(), want, rtol=1e-2, atol=1e-2)


# -- operands staged in shared memory and read with ldmatrix (f16/bf16) -------------------------

from naiad.gpu.layouts import BlockedLayout  # noqa: E402
from naiad_nvidia.ir.ldmatrix_plan import plan as ldmatrix_plan, to_offsets  # noqa: E402


def ldmatrix_isa(rows_of, lane, j, trans):
    """Register j of ``lane`` per the PTX ISA (ldmatrix .m8n8 .b16): ``rows_of(j)`` is matrix
    j as its 8 rows of 8 elements (row i read from the address lane 8j+i gave)."""
    mat = rows_of(j)
    g, t = lane >> 2, lane % 4
    if trans:
        return mat[2 * t][g], mat[2 * t + 1][g]
    return mat[g][2 * t], mat[g][2 * t + 1]


def emulate_staged(m, n, k, warps, a_layout, b_layout, rng):
    """Run the staged plan on emulated warps: stores through the staging layouts, ldmatrix and
    mma through the ISA tables, bank groups checked per 8-lane phase. Returns (got, want)."""
    fp = ldmatrix_plan(m, n, k, warps)
    nwarps = warps[0] * warps[1]
    A, B, C = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n))
    smem = np.full(fp.scratch // 2, np.nan)
    base = {"A": 0, "B": fp.b_offset // 2}
    for X, lay, which, size in ((A, a_layout, "A", m * k), (B, b_layout, "B", k * n)):
        ll = lay.to_linear(X.shape)
        staged = to_offsets(ll, fp.a_swizzle if which == "A" else fp.b_swizzle)
        for w, lane, r in itertools.product(range(nwarps), range(32), range(ll.in_size("register"))):
            off = staged.apply_flat(register=r, lane=lane, warp=w)
            assert 0 <= off < size
            slot = base[which] + off
            value = X[ll.apply(r, lane, w)]
            assert np.isnan(smem[slot]) or smem[slot] == value, "two elements in one slot"
            smem[slot] = value
    assert not np.isnan(smem[:m * k]).any() and not np.isnan(smem[base["B"]:base["B"] + k * n]).any()
    lanes = {"A": fp.a_lanes, "B": fp.b_lanes}
    c_ll = NvidiaMmaLayout(2, warps).to_linear((m, n))
    got = np.full((m, n), np.nan)
    for w in range(nwarps):
        acc = {}
        origin = c_ll.apply(0, 0, w)   # the warp's first result element (lane 0, register 0)
        for loads, mmas in fp.steps:
            words = {}
            for load in loads:
                count = 4 if load.x4 else 2
                addr = [base[load.which] + (lanes[load.which].apply_flat(lane=lane, warp=w)
                                            ^ load.const) for lane in range(32)]
                for j in range(count):
                    phase = addr[8 * j:8 * j + 8]
                    assert all(a % 8 == 0 for a in phase), "ldmatrix rows must be 16-byte aligned"
                    assert len({(a * 2 // 16) % 8 for a in phase}) == 8, "bank conflict"
                rows_of = lambda j: [smem[addr[8 * j + i]:addr[8 * j + i] + 8] for i in range(8)]
                for lane in range(32):
                    for j, key in enumerate(load.registers):
                        words[(load.which,) + key + (lane,)] = ldmatrix_isa(
                            rows_of, lane, j, load.which == "B")
            for mma in mmas:
                ta, tb = np.full((16, 16), np.nan), np.full((16, 8), np.nan)
                for lane in range(32):
                    for i in range(8):
                        ta[ptx_a16(i, lane)] = words[("A", mma.a, i // 2, lane)][i % 2]
                    for i in range(4):
                        tb[ptx_b16(i, lane)] = words[("B", mma.b, i // 2, lane)][i % 2]
                assert not (np.isnan(ta).any() or np.isnan(tb).any())
                r0, c0 = origin[0] + mma.c[0], origin[1] + mma.c[1]
                prev = acc.get(mma.c, C[r0:r0 + 16, c0:c0 + 8])
                acc[mma.c] = ta @ tb + prev
        for (tr, tc), tile in acc.items():
            r0, c0 = origin[0] + tr, origin[1] + tc
            assert np.isnan(got[r0:r0 + 16, c0:c0 + 8]).all(), "two warps wrote one tile"
            got[r0:r0 + 16, c0:c0 + 8] = tile
    return got, A @ B + C


STAGED_SHAPES = [(16, 8, 16, (1, 1)), (32, 32, 32, (2, 2)), (64, 16, 32, (4, 1)),
                 (16, 64, 64, (1, 4)), (128, 128, 32, (4, 2)), (64, 128, 16, (2, 4)),
                 (32, 16, 128, (2, 1)), (128, 64, 64, (2, 2))]


@pytest.mark.parametrize("m,n,k,warps", STAGED_SHAPES)
def test_staged_ldmatrix_plan_computes_the_matrix_product(m, n, k, warps):
    from naiad.gpu.layouts import blocked_for

    nw = warps[0] * warps[1]
    rng = np.random.default_rng(m + 3 * n + 7 * k)
    # as loads give them (8 contiguous elements per thread), and a column-major odd one
    vec_a = blocked_for((m, k), nw, 32, size_per_thread=(1, 8))
    vec_b = blocked_for((k, n), nw, 32, size_per_thread=(1, 8))
    got, want = emulate_staged(m, n, k, warps, vec_a, vec_b, rng)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    odd_a = blocked_for((m, k), nw, 32, order=(0, 1), size_per_thread=(2, 1))
    odd_b = BlockedLayout((1, 1), (32, 1), (1, nw), (0, 1))
    got, want = emulate_staged(m, n, k, warps, odd_a, odd_b, rng)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_staged_plan_detects_a_wrong_ldmatrix_table():
    """The emulation is not vacuous: a non-transposed read of B gives a wrong product."""
    global ldmatrix_isa
    real = ldmatrix_isa
    try:
        ldmatrix_isa = lambda rows_of, lane, j, trans: real(rows_of, lane, j, False)
        from naiad.gpu.layouts import blocked_for
        got, want = emulate_staged(32, 32, 32, (2, 2), blocked_for((32, 32), 4, 32),
                                   blocked_for((32, 32), 4, 32), np.random.default_rng(5))
        assert not np.allclose(got, want)
    finally:
        ldmatrix_isa = real


def test_tiled_f16_matmul_reads_fragments_with_ldmatrix():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32"}
    k = naiad.compile(matmul_kernel, signature=sig, constexprs=dict(BM=128, BN=128, BK=32),
                      target="nvidia:sm_90", options={"num_warps": 8, "wgmma": False})
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    loop = gpu[gpu.index(" = for "):gpu.index("yield")]
    assert "nvidia.mma_staged" in loop and "convert_layout" not in loop
    # one barrier before the stores (the previous iteration's reads) in the loop body
    assert loop.count("barrier") == 1
    # 4 warps x 2: per warp 32x64 -> per K step 2 A loads (x4) and 4 B loads (x4.trans)
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * 2
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4 * 2
    assert ptx.count("mma.sync.aligned.m16n8k16") == 16 * 2
    assert "ld.shared.b16" not in ptx and "ld.shared.u16" not in ptx
    assert k.metadata["spill_bytes"] == 0


@pytest.mark.parametrize("dtype,out", [("float16", "float32"), ("bfloat16", "float32"),
                                       ("float16", "float16")])
def test_single_dot_f16_bf16_use_ldmatrix_and_tf32_does_not(dtype, out):
    k = compile_dot(dtype, 64, 32, 32, out)
    assert "nvidia.mma_staged" in k.asm["gpu"] and "ldmatrix" in k.asm["ptx"]
    t = compile_dot("float32", 64, 32, 32, "float32", "tf32")
    assert "nvidia.mma_staged" not in t.asm["gpu"] and "ldmatrix" not in t.asm["ptx"]
