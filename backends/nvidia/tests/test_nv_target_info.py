"""NvidiaTargetInfo: ids, barrier, shuffles and every math function compile to a cubin."""
from __future__ import annotations

import re

import pytest
from llvmlite import ir

from naiad.errors import CodegenError
from naiad.plugins import Target, TargetInfo
from naiad_nvidia import toolchain
from naiad_nvidia.target_info import NvidiaTargetInfo

from nv_kernels import attrs_for, math_kernel, new_module, warp_ops_kernel

TARGET = Target("nvidia", "sm_90", 32)
FLOAT_FUNCS = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor",
               "ceil", "abs", "fma"]
FLOAT_ELEMS = ["f16", "bf16", "bf16_as_i16", "f32", "f64"]


def _body(ptx: str) -> str:
    return ptx.split(".entry", 1)[1]


def test_is_a_target_info():
    ti = NvidiaTargetInfo()
    assert isinstance(ti, TargetInfo)
    assert ti.triple == "nvptx64-nvidia-cuda" and ti.warp_size == 32
    assert ti.global_address_space == 1 and ti.shared_address_space == 3
    assert ti.kernel_calling_convention == "ptx_kernel"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("elem", FLOAT_ELEMS)
@pytest.mark.parametrize("name", FLOAT_FUNCS)
def test_float_math_compiles_to_cubin(name, elem, arch):
    target = Target("nvidia", arch, 32)
    nargs = 3 if name == "fma" else 1
    src = math_kernel(NvidiaTargetInfo(arch), attrs_for(target), name, elem, nargs)
    ptx, cubin, meta = toolchain.compile_llvm_to_cubin(src, arch, "kern")
    assert cubin[:4] == b"\x7fELF"
    body = _body(ptx)
    assert not re.search(r"\bcall\b", body), f"{name}/{elem} left a call:\n{body}"
    assert meta["spill_bytes"] == 0


@pytest.mark.parametrize("elem", ["i32", "u32", "i64", "u64"])
@pytest.mark.parametrize("name", ["abs", "umulhi"])
def test_int_math_compiles_to_cubin(name, elem):
    src = math_kernel(NvidiaTargetInfo(), attrs_for(TARGET), name, elem,
                      2 if name == "umulhi" else 1)
    ptx, cubin, _ = toolchain.compile_llvm_to_cubin(src, "sm_90", "kern")
    assert cubin[:4] == b"\x7fELF"
    body = _body(ptx)
    if name == "umulhi":
        assert "mul.hi.u" in body
    elif elem.startswith("i"):
        assert "abs.s" in body


def test_selected_instructions():
    """The fast paths really use the hardware instruction we document."""
    ti = NvidiaTargetInfo()

    def body(name, elem):
        return _body(toolchain.llvm_to_ptx(math_kernel(ti, attrs_for(TARGET), name, elem,
                                                       3 if name == "fma" else 1), "sm_90"))

    assert "ex2.approx.ftz.f32" in body("exp2", "f32")     # as Triton emits tl.math.exp2
    assert "ex2.approx.f32" in body("exp", "f32") and "ftz" not in body("exp", "f32")
    assert "rsqrt.approx.f32" in body("rsqrt", "f32")
    assert "sqrt.rn.f32" in body("sqrt", "f32")
    assert "sqrt.rn.f64" in body("sqrt", "f64")
    assert "fma.rn.f64" in body("fma", "f64")
    assert "cvt.rmi.f32.f32" in body("floor", "f32")


def test_unknown_math_is_codegen_error():
    ti = NvidiaTargetInfo()
    mod = new_module(ti, "m")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.FloatType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(CodegenError, match="tanh"):
        ti.math(b, "tanh", [fn.args[0]], "f32")
    with pytest.raises(CodegenError, match="umulhi"):
        ti.math(b, "umulhi", [fn.args[0], fn.args[0]], "f32")


@pytest.mark.parametrize("elem", ["i32", "f32", "f16", "bf16", "i64", "f64", "i8", "i1"])
def test_shuffles_and_barrier_compile(elem):
    src = warp_ops_kernel(NvidiaTargetInfo(), attrs_for(TARGET), elem)
    assert "llvm.nvvm.barrier.cta.sync.aligned.all" in src
    ptx, cubin, _ = toolchain.compile_llvm_to_cubin(src, "sm_90", "warp")
    body = _body(ptx)
    assert "shfl.sync.bfly.b32" in body and "shfl.sync.idx.b32" in body
    assert "bar.sync" in body
    assert cubin[:4] == b"\x7fELF"


def test_special_registers():
    ti = NvidiaTargetInfo()
    mod = new_module(ti, "ids")
    gp = ir.PointerType(addrspace=1)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [gp]), "ids")
    fn.calling_convention = "ptx_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    vals = []
    for axis in range(3):
        vals += [ti.thread_id(b, axis), ti.program_id(b, axis), ti.num_programs(b, axis)]
    vals.append(ti.lane_id(b))
    for k, v in enumerate(vals):
        b.store(v, b.gep(fn.args[0], [ir.Constant(ir.IntType(32), k)],
                         source_etype=ir.IntType(32)))
    b.ret_void()
    body = _body(toolchain.llvm_to_ptx(str(mod), "sm_90"))
    for reg in ("tid", "ctaid", "nctaid"):
        for ax in "xyz":
            assert f"%{reg}.{ax}" in body
    with pytest.raises(CodegenError):
        ti.program_id(b, 3)
