"""The core matrix pipeline's passes as IR text in -> text out (with the AMD plugin's table as
the instruction table), its layouts' linear forms and print/parse round trip, and the issue
planner's checks."""
import re

import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError, IRError
from naiad.frontend import generate
from naiad.gpu.layouts import DotOperandLayout, linear_of, register_layout
from naiad.gpu.matrix.accelerate import accelerate_matmul, choose_warps, stage_matrix_operands
from naiad.gpu.matrix.budget import check_shared_memory
from naiad.gpu.matrix.plan import issue_plan
from naiad.gpu.passes import GPUPassContext
from naiad.gpu.passes.allocate_shared import allocate_shared_memory
from naiad.gpu.passes.assign_layouts import assign_layouts
from naiad.gpu.passes.remove_conversions import remove_redundant_conversions
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.passes import run_generic_pipeline
from naiad_amd.ir.matrix_layouts import LAYOUTS, AmdMfmaLayout, AmdWmmaLayout
from naiad_amd.ir.matrix_table import instruction_table

for _cls in LAYOUTS:
    register_layout(_cls)


@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               P: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=P))


def tile_text(dtype="fp16", m=64, n=64, k=32, precision="ieee"):
    module = generate(dot_kernel, {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32"},
                      dict(M=m, N=n, K=k, P=precision), {})
    run_generic_pipeline(module)
    return print_module(module)


def ctx_for(arch, num_warps=4, nonkdim=0, kpack=1, **extra):
    ctx = GPUPassContext(num_warps=num_warps, warp_size=32 if arch.startswith("gfx1") else 64,
                         **extra)
    ctx.matrix_instructions = instruction_table(arch, nonkdim, kpack)
    return ctx


def run_passes(text, ctx, passes):
    module = parse_module(text)
    for p in passes:
        p(module, ctx)
    return print_module(module)


@pytest.mark.parametrize("arch, dtype, precision, nonkdim, kpack, want", [
    ("gfx942", "fp16", "ieee", 0, 1,
     'instruction = "v_mfma_f32_32x32x8_f16", k_width = 4'),
    ("gfx942", "fp16", "ieee", 16, 1,
     'instruction = "v_mfma_f32_16x16x16_f16", k_width = 4'),
    ("gfx942", "fp16", "ieee", 0, 2,
     'instruction = "v_mfma_f32_32x32x8_f16", k_width = 8'),
    ("gfx942", "fp32", "tf32", 0, 1, 'instruction = "v_mfma_f32_32x32x4_xf32", k_width = 2'),
    ("gfx942", "fp32", "ieee", 0, 1, 'instruction = "v_mfma_f32_32x32x2_f32", k_width = 1'),
    ("gfx90a", "fp32", "tf32", 0, 1, 'instruction = "v_mfma_f32_32x32x2_f32", k_width = 1'),
    ("gfx942", "int8", "ieee", 0, 1, 'instruction = "v_mfma_i32_32x32x16_i8", k_width = 8'),
    ("gfx1100", "bf16", "ieee", 0, 1, 'instruction = "v_wmma_f32_16x16x16_bf16", k_width = 16'),
    ("gfx1200", "fp16", "ieee", 0, 1,
     'instruction = "v_wmma_f32_16x16x16_f16_gfx12", k_width = 8'),
])
def test_accelerate_matmul_picks_from_the_table(arch, dtype, precision, nonkdim, kpack, want):
    text = tile_text(dtype, precision=precision)
    if dtype == "int8":
        text = text.replace("tensor<64x64xf32>", "tensor<64x64xi32>")  # an i32 accumulator
        text = re.sub(r"%(\w+) = constant \{value = 0.0\} : tensor<64x64xi32>",
                      r"%\1 = constant {value = 0} : tensor<64x64xi32>", text)
    out = run_passes(text, ctx_for(arch, nonkdim=nonkdim, kpack=kpack), [accelerate_matmul])
    assert " dot " not in out and want in out
    mnemonic = "#amd_wmma" if arch.startswith("gfx1") else "#amd_mfma"
    assert re.search(rf"convert_layout %a : tensor<64x32x\w+, #dot_operand<opIdx = 0, "
                     rf"parent = {mnemonic}<", out), out


def test_accelerate_matmul_leaves_untiled_and_f64_dots_on_fma():
    ctx = ctx_for("gfx942", nonkdim=32)
    out = run_passes(tile_text("fp16", m=16, n=16, k=16), ctx, [accelerate_matmul])
    assert " dot " in out and "matrix_mma" not in out
    f64 = tile_text("fp64", m=32, n=32, k=16)
    assert " dot " in f64 and "matrix_mma" not in run_passes(f64, ctx_for("gfx942"),
                                                             [accelerate_matmul])
    # no table (a backend without matrix instructions): nothing changes
    plain = GPUPassContext(num_warps=4, warp_size=64)
    assert " dot " in run_passes(tile_text(), plain, [accelerate_matmul])


def test_stage_matrix_operands_hands_over_unconverted_operands():
    ctx = ctx_for("gfx942")
    out = run_passes(tile_text(), ctx, [accelerate_matmul, assign_layouts,
                                        remove_redundant_conversions, stage_matrix_operands])
    line = next(ln for ln in out.splitlines() if "matrix_mma" in ln)
    assert re.search(r"matrix_mma %a, %b,", line), line  # loaded tiles go straight in
    assert "#dot_operand" not in out
    out = run_passes(out, ctx, [allocate_shared_memory])
    # A 64x32 and B 32x64 halves staged together: 8 KiB
    assert re.search(r"matrix_mma .*scratch = 8192", out)


def test_check_shared_memory_names_kernel_need_and_limit():
    text = tile_text(m=128, n=128, k=128)
    ctx = ctx_for("gfx942")

    class TI:
        shared_memory_bytes = 49152

    ctx.target_info = TI()
    module = parse_module(text)
    for p in (accelerate_matmul, assign_layouts, remove_redundant_conversions,
              stage_matrix_operands, allocate_shared_memory):
        p(module, ctx)
    with pytest.raises(CompilationError, match=r"kernel dot_kernel needs 65536 bytes of shared "
                                               r"memory but the target has 49152 bytes"):
        check_shared_memory(module, ctx)
    TI.shared_memory_bytes = 65536
    check_shared_memory(module, ctx)  # fits exactly


def test_choose_warps_prefers_own_tiles_then_square():
    assert choose_warps(128, 128, (32, 32), 4) == (2, 2)
    assert choose_warps(128, 32, (32, 32), 4) == (4, 1)
    assert choose_warps(32, 128, (32, 32), 4) == (1, 4)
    assert choose_warps(32, 32, (32, 32), 4)[0] * choose_warps(32, 32, (32, 32), 4)[1] == 4


@pytest.mark.parametrize("layout", [AmdMfmaLayout(3, (2, 2), (32, 32, 8)),
                                    AmdMfmaLayout(2, (4, 1), (16, 16, 16)),
                                    AmdWmmaLayout(1, (2, 2)), AmdWmmaLayout(2, (1, 4))])
def test_layouts_round_trip_and_are_bijective_on_their_tile(layout):
    from naiad.gpu.layouts import parse_layout

    assert parse_layout(str(layout)) == layout
    wm, wn = layout.warps_per_cta
    m, n = layout.instr_tile
    ll = linear_of(layout, (m * wm * 2, n * wn))
    assert ll.is_bijective()
    for i in (0, 1):
        shape = (m * wm, 64) if i == 0 else (64, n * wn)
        assert linear_of(DotOperandLayout(i, layout, 8 if layout.mnemonic == "amd_wmma" and
                                          layout.version == 2 else 16 if
                                          layout.mnemonic == "amd_wmma" else 4), shape).is_surjective()


def test_bad_layout_parameters_are_errors():
    with pytest.raises(IRError, match="instrShape"):
        AmdMfmaLayout(3, (2, 2), (32, 16, 8))
    with pytest.raises(IRError, match="version"):
        AmdWmmaLayout(3, (2, 2))
    with pytest.raises(IRError, match="kWidth"):
        DotOperandLayout(0, AmdMfmaLayout(3, (1, 1), (32, 32, 8)), 2).to_linear((32, 16))


@pytest.mark.parametrize("transposed", [True, False])
def test_issue_plan_rejects_layouts_that_disagree_with_the_instruction(transposed):
    [entry] = [e for e in instruction_table("gfx942") if e.name == "v_mfma_f32_32x32x8_f16"]
    if transposed:
        entry = entry.transposed()
    layout = AmdMfmaLayout(3, (1, 1), (32, 32, 8), transposed)
    a = linear_of(DotOperandLayout(0, layout, 4), (32, 16))
    b = linear_of(DotOperandLayout(1, layout, 4), (16, 32))
    c = linear_of(layout, (32, 32))
    # a transposed accumulator holds 4 consecutive columns per lane, a plain one 4 rows
    assert c.bases["register"][0] == ((0, 1) if transposed else (1, 0))
    plan = issue_plan(entry, a, b, c)
    assert len(plan) == 2 and all(len(x) == 4 and len(y) == 4 and len(z) == 16
                                  for x, y, z in plan)
    # B spread with kpack 2 while A is not: K elements would not match
    b2 = linear_of(DotOperandLayout(1, layout, 8), (16, 32))
    with pytest.raises(IRError, match="spread K differently"):
        issue_plan(entry, a, b2, c)
    # the other orientation's accumulator, or a 16x16 instruction's, is not this one's
    for other in (AmdMfmaLayout(3, (1, 1), (32, 32, 8), not transposed),
                  AmdMfmaLayout(3, (1, 1), (16, 16, 16), transposed)):
        with pytest.raises(IRError, match="accumulator layout"):
            issue_plan(entry, a, b, linear_of(other, (32, 32)))


def test_gpu_ir_text_with_matrix_mma_lowers_to_the_intrinsic():
    """GPU IR printed after the passes parses back (layouts, instruction name) and lowers to the
    MFMA intrinsic through the AMD TargetInfo, with operands staged through shared memory."""
    from naiad.gpu.lower import emit_llvm
    from naiad_amd.ir.matrix_table import register_all
    from naiad_amd.target_info import AmdTargetInfo

    register_all()
    ctx = ctx_for("gfx942")
    text = run_passes(tile_text(), ctx, [accelerate_matmul, assign_layouts,
                                         remove_redundant_conversions, stage_matrix_operands,
                                         allocate_shared_memory])
    module = parse_module(text)
    assert print_module(module) == text
    fn = module.functions["dot_kernel"]
    llvm_ir = emit_llvm(fn, AmdTargetInfo("gfx942"), 4, int(fn.attrs["shared"]))
    # 64x64 result, 2x2 waves: one 32x32 tile per wave, 4 K steps of 8
    assert llvm_ir.count("call <16 x float> @\"llvm.amdgcn.mfma.f32.32x32x8f16\"") == 4
    assert "addrspace(3)" in llvm_ir  # staged operands go through LDS
