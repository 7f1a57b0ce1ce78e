"""Every math function on every type it is defined for compiles to hsaco on every arch."""
from __future__ import annotations

import pytest
from llvmlite import ir

from naiad.errors import CodegenError

import amd_irkernels as K
from amd_testkit import REPRESENTATIVE_ARCHS, amd_target, attrs_for
from naiad_amd.codegen import AmdCodegen
from naiad_amd.lowering.irutil import I16
from naiad_amd.lowering.mathlib import FUNCTIONS
from naiad_amd.target_info import AmdTargetInfo

FLOAT_FUNCS = [f for f in FUNCTIONS if f != "umulhi"]
CASES = ([(f, e) for f in FLOAT_FUNCS for e in ("f16", "bf16", "f32", "f64")]
         + [("abs", e) for e in ("i32", "i64", "u32")]
         + [("umulhi", e) for e in ("i32", "i64", "u32", "u64")])


@pytest.fixture(scope="module", params=REPRESENTATIVE_ARCHS)
def cg(request):
    return AmdCodegen(amd_target(request.param))


@pytest.mark.parametrize("fname, elem", CASES, ids=[f"{f}-{e}" for f, e in CASES])
def test_math_compiles_to_hsaco(cg, fname, elem):
    t = cg.target
    o, attrs = attrs_for(t)
    arity = {"fma": 3, "umulhi": 2}.get(fname, 1)
    src = K.unary_math(cg.target_info, attrs, fname, elem, 4 * t.warp_size, arity)
    res = cg.compile_llvm(src, "mathk", o)
    assert res.stages["hsaco"][:4] == b"\x7fELF"
    assert res.metadata["spill_registers"] == 0 and res.metadata["scratch"] == 0
    asm = res.stages["amdgcn"]
    assert "s_swappc" not in asm and "s_setpc" not in asm  # no calls left


def test_bf16_as_i16_bits_compiles():
    t = amd_target("gfx942")
    cg = AmdCodegen(t)
    ti = cg.target_info
    o, attrs = attrs_for(t)
    m = K.new_module(ti, attrs)
    fn, b = K.new_kernel(m, ti, "bf", [K.GPTR], attrs)
    (p,) = fn.args
    i = ti.thread_id(b, 0)
    v = b.load(b.gep(p, [i], source_etype=I16), typ=I16)
    r = ti.math(b, "exp", [v], "bf16")
    assert r.type == I16
    b.store(r, b.gep(p, [i], source_etype=I16))
    b.ret_void()
    cg.compile_llvm(str(m), "bf", o)


@pytest.mark.parametrize("fname, elem, match", [
    ("tanh", "f32", "unknown math function"),
    ("exp", "i32", "not defined on integer"),
    ("umulhi", "f32", "needs integer"),
    ("exp", "f8", "unsupported element type"),
])
def test_unsupported_math_is_a_codegen_error(fname, elem, match):
    ti = AmdTargetInfo("gfx942")
    b = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f").append_basic_block())
    with pytest.raises(CodegenError, match=match):
        ti.math(b, fname, [ir.Constant(ir.FloatType(), 1.0)] * (2 if fname == "umulhi" else 1), elem)


@pytest.mark.parametrize("fname, sequence", [
    # exp: one multiply by log2(e), then LLVM's exp2 with the IEEE-denormal range scaling
    ("exp", ["v_mul_f32", "v_cmp_gt_f32", "v_cndmask_b32", "v_add_f32", "v_exp_f32", "v_ldexp_f32"]),
    # exp2: the bare instruction (Triton's tl.math.exp2)
    ("exp2", ["v_exp_f32"]),
])
def test_f32_exp_instructions_are_tritons(fname, sequence):
    t = amd_target("gfx942")
    cg = AmdCodegen(t)
    o, attrs = attrs_for(t)
    res = cg.compile_llvm(K.unary_math(cg.target_info, attrs, fname, "f32", 4 * t.warp_size, 1),
                          "mathk", o)
    ops = [ln.split()[0] for ln in res.stages["amdgcn"].splitlines()
           if ln.startswith("\tv_") and not ln.startswith("\tv_mov")]
    found = {s for s in sequence if any(op.startswith(s) for op in ops)}
    assert found == set(sequence), ops
    assert sum(op.startswith("v_exp_f32") for op in ops) == 1
    if fname == "exp2":
        assert not any(op.startswith(("v_ldexp", "v_cndmask", "v_rndne", "v_cvt_i32")) for op in ops)
    else:
        assert not any(op.startswith(("v_rndne", "v_cvt_i32")) for op in ops)  # not llvm.exp's
