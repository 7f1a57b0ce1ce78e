"""Cross-lane XOR moves: the DPP / ds_swizzle / permlanex16 encodings checked by executing the
ISA's documented lane semantics on the host, and the instructions the reductions compile to."""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad_amd.lowering import cross_lane as X


@pytest.mark.parametrize("wave, gfx10", [(64, False), (32, True), (32, False)])
def test_every_xor_mask_moves_the_right_lanes(wave, gfx10):
    lanes = list(range(wave))
    for mask in range(1, wave):
        plan = X.xor_plan(mask, wave, gfx10)
        assert X.model(plan, lanes) == [i ^ mask for i in lanes], (mask, plan)


def test_plans_avoid_bpermute_below_32():
    for mask in (1, 2, 4, 8):
        assert {k for k, _ in X.xor_plan(mask, 64, False)} == {"dpp"}
        assert {k for k, _ in X.xor_plan(mask, 32, True)} == {"dpp"}
    assert X.xor_plan(16, 64, False) == [("swizzle", 0x401F)]
    assert X.xor_plan(16, 32, True) == [("permlanex16", 0)]
    assert X.xor_plan(32, 64, False) == [("bpermute", 32)]
    with pytest.raises(ValueError):
        X.xor_plan(32, 32, True)


def test_encodings_are_the_isa_ones():
    assert X.quad_perm(1, 0, 3, 2) == 0xB1 and X.quad_perm(2, 3, 0, 1) == 0x4E
    assert X.quad_perm(3, 2, 1, 0) == 0x1B


def test_model_rejects_the_unmodelled():
    with pytest.raises(ValueError):
        X.model([("dpp", 0x130)], list(range(64)))  # wave_shl: not used, not modelled


@naiad.jit
def _row_max_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.max(x, axis=0) + tl.sum(x, axis=0))


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_reductions_compile_to_dpp(arch):
    k = naiad.compile(_row_max_sum, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      constexprs={"BLOCK": 1024}, target=f"amd:{arch}")
    asm = k.asm["amdgcn"]
    assert re.search(r"quad_perm:\[1,0,3,2\]", asm) and re.search(r"quad_perm:\[2,3,0,1\]", asm)
    if arch == "gfx942":
        assert "row_half_mirror" in asm and "row_ror:8" in asm
        assert asm.count("ds_swizzle") == 2 and asm.count("ds_bpermute") == 2  # xor 16, xor 32
    else:
        assert "row_xmask:4" in asm and "row_xmask:8" in asm and "v_permlanex16" in asm
        assert "ds_bpermute" not in asm and "ds_swizzle" not in asm


@naiad.jit
def _row_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs), axis=0))


@pytest.mark.parametrize("arch, folded, moves", [("gfx942", 4, 1), ("gfx1100", 4, 0)])
def test_dpp_moves_fold_into_the_combining_add(arch, folded, moves):
    """Every DPP source lane of the butterfly is valid, so the moves set ``bound_ctrl`` and LLVM's
    DPP combiner folds each into its ``v_add_f32`` (as in Triton's reductions). gfx942's xor 4 is
    two moves (``quad_perm`` then ``row_half_mirror``): only the second can fold."""
    k = naiad.compile(_row_sum, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      constexprs={"BLOCK": 1024}, target=f"amd:{arch}")
    assert re.search(r"update\.dpp\.i32\"\(i32 undef, .*, i1 1\)", k.asm["llir"])
    asm = k.asm["amdgcn"]
    assert len(re.findall(r"^\s*v_add_f32_dpp", asm, re.M)) == folded
    assert len(re.findall(r"^\s*v_mov_b32_dpp", asm, re.M)) == moves
