"""LLVM IR -> PTX -> cubin for a hand-written vector add, the resource report and failures."""
from __future__ import annotations

import time

import pytest

from naiad.errors import CodegenError
from naiad.plugins import BinaryResult, Target
from naiad_nvidia import toolchain
from naiad_nvidia.codegen import NvidiaCodegen
from naiad_nvidia.target_info import NVPTX_DATA_LAYOUT, NvidiaTargetInfo

from nv_kernels import attrs_for, vector_add

ELF_MAGIC = b"\x7fELF"


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_vector_add_to_cubin(arch):
    target = Target("nvidia", arch, 32)
    cg = NvidiaCodegen(target)
    src = vector_add(cg.target_info, attrs_for(target))
    res = cg.compile_llvm(src, "vector_add", {"num_warps": 4})
    assert isinstance(res, BinaryResult) and res.binary_stage == "cubin"
    ptx, cubin = res.stages["ptx"], res.stages["cubin"]
    assert ".entry vector_add(" in ptx
    assert ".maxntid 128" in ptx
    assert "ld.global" in ptx and "st.global" in ptx
    assert f".target {arch}\n" in ptx
    version = float(ptx.split(".version", 1)[1].split()[0])
    assert version >= {"sm_80": 7.0, "sm_89": 7.8, "sm_90": 7.8}[arch]
    assert cubin[:4] == ELF_MAGIC
    meta = res.metadata
    assert isinstance(meta["registers"], int) and meta["registers"] > 0
    for key in ("spill_bytes", "spill_stores", "spill_loads", "shared", "stack", "local"):
        assert isinstance(meta[key], int) and meta[key] >= 0
    assert meta["spill_bytes"] == 0 and meta["shared"] == 0
    assert meta["num_warps"] == 4 and meta["target"] == f"nvidia:{arch}"


def test_maxntid_follows_num_warps():
    target = Target("nvidia", "sm_90", 32)
    cg = NvidiaCodegen(target)
    src = vector_add(cg.target_info, attrs_for(target, num_warps=8), num_warps=8)
    ptx = cg.compile_llvm(src, "vector_add", {"num_warps": 8}).stages["ptx"]
    assert ".maxntid 256" in ptx


def test_data_layout_matches_llvm():
    assert str(toolchain.target_machine("sm_90").target_data) == NVPTX_DATA_LAYOUT
    assert NvidiaTargetInfo.data_layout == NVPTX_DATA_LAYOUT


def test_module_without_triple_gets_nvptx():
    src = vector_add(NvidiaTargetInfo(), attrs_for(Target("nvidia", "sm_90", 32)))
    src = "\n".join(l for l in src.splitlines() if not l.startswith(("target triple",
                                                                       "target datalayout")))
    ptx = toolchain.llvm_to_ptx(src, "sm_90")
    assert ".entry vector_add(" in ptx


def test_measure_compile_times(capsys):
    """LLVM -> PTX and PTX -> cubin for the vector add (warm: best of 5)."""
    target = Target("nvidia", "sm_90", 32)
    src = vector_add(NvidiaTargetInfo(), attrs_for(target))
    llvm_t, jit_t = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        ptx = toolchain.llvm_to_ptx(src, "sm_90")
        t1 = time.perf_counter()
        toolchain.ptx_to_cubin(ptx, "sm_90")
        t2 = time.perf_counter()
        llvm_t.append(t1 - t0)
        jit_t.append(t2 - t1)
    with capsys.disabled():
        print(f"\n[nvidia] vector_add: LLVM->PTX {min(llvm_t) * 1e3:.2f} ms, "
              f"PTX->cubin {min(jit_t) * 1e3:.2f} ms (best of 5)")
    assert min(llvm_t) < 5 and min(jit_t) < 5


def test_parse_error_is_codegen_error():
    with pytest.raises(CodegenError, match="does not parse"):
        toolchain.llvm_to_ptx("define void @f( {", "sm_90")


def test_verifier_error_is_codegen_error():
    bad = "define ptx_kernel void @f() {\n  %x = add i32 %y, 1\n  %y = add i32 %x, 1\n  ret void\n}"
    with pytest.raises(CodegenError):
        toolchain.llvm_to_ptx(bad, "sm_90")


def test_unselectable_intrinsic_is_refused_not_fatal():
    src = ("declare float @llvm.exp.f32(float)\n"
           "define ptx_kernel void @f(ptr addrspace(1) %p, float %x) {\n"
           "  %y = call float @llvm.exp.f32(float %x)\n"
           "  store float %y, ptr addrspace(1) %p\n  ret void\n}\n")
    with pytest.raises(CodegenError, match="llvm.exp.f32"):
        toolchain.llvm_to_ptx(src, "sm_90")


def test_unselectable_intrinsic_from_llvmlite_is_refused():
    from llvmlite import ir

    mod = ir.Module()
    f32 = ir.FloatType()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(addrspace=1), f32]),
                     "f")
    fn.calling_convention = "ptx_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    sin = ir.Function(mod, ir.FunctionType(f32, [f32]), "llvm.sin.f32")
    b.store(b.call(sin, [fn.args[1]]), fn.args[0])
    b.ret_void()
    assert '@"llvm.sin.f32"(' in str(mod)
    with pytest.raises(CodegenError, match="llvm.sin.f32"):
        toolchain.llvm_to_ptx(str(mod), "sm_90")


def test_foreign_syncscope_is_refused_not_fatal():
    src = ("define ptx_kernel void @f(ptr addrspace(1) %p) {\n"
           '  %a = atomicrmw add ptr addrspace(1) %p, i32 1 syncscope("agent") acq_rel\n'
           "  ret void\n}\n")
    with pytest.raises(CodegenError, match="agent"):
        toolchain.llvm_to_ptx(src, "sm_90")
    ok = src.replace('"agent"', f'"{NvidiaTargetInfo.atomic_scope}"')
    assert "atom.global.add" in toolchain.llvm_to_ptx(ok, "sm_90")


def test_missing_entry_is_codegen_error():
    src = "define void @helper() {\n  ret void\n}\n"
    with pytest.raises(CodegenError, match="entry point"):
        toolchain.compile_llvm_to_cubin(src, "sm_90", "helper")


def test_bad_ptx_carries_the_log():
    ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(CodegenError) as ei:
        toolchain.ptx_to_cubin(ptx, "sm_90")
    assert "bogus" in str(ei.value) or "error" in str(ei.value).lower()


def test_resource_report_parser():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers, used 0 barriers
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     64 bytes stack frame, 40 bytes spill stores, 48 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem
info    : 0 bytes gmem
info    : Function properties for 'k':
info    : used 255 registers, used 1 barriers, 64 stack, 5120 bytes smem, 536 bytes cmem[0], 64 bytes lmem
"""
    r = toolchain.parse_resource_report(log, "k")
    assert r["registers"] == 255 and r["barriers"] == 1
    assert r["stack"] == 64 and r["spill_stores"] == 40 and r["spill_loads"] == 48
    assert r["spill_bytes"] == 40
    assert r["shared"] == 4096 and r["shared_linked"] == 5120
    assert r["local"] == 64 and r["cmem"] == 536


def test_toolchain_hash_is_stable():
    cg = NvidiaCodegen(Target("nvidia", "sm_90", 32))
    h = cg.toolchain_hash()
    assert h == toolchain.toolchain_hash() and len(h) == 32


def test_fp_fusion_option():
    src = ("define ptx_kernel void @f(ptr addrspace(1) %p, float %a, float %b, float %c) {\n"
           "  %m = fmul float %a, %b\n  %s = fadd float %m, %c\n"
           "  store float %s, ptr addrspace(1) %p\n  ret void\n}\n")
    cg = NvidiaCodegen(Target("nvidia", "sm_90", 32))
    fused = cg.compile_llvm(src, "f", {}).stages["ptx"]
    unfused = cg.compile_llvm(src, "f", {"enable_fp_fusion": False}).stages["ptx"]
    assert "fma.rn.f32" in fused and "fma.rn.f32" not in unfused
    # the global LLVM option is restored for the next compilation
    assert "fma.rn.f32" in cg.compile_llvm(src, "f", {}).stages["ptx"]


def test_intrinsic_declared_after_optimisation_is_refused():
    """The check after O3 scans the optimised module's declarations (no printing): an
    unselectable intrinsic declared there is refused, selectable ones are not."""
    import llvmlite.binding as llvm

    from naiad.backend import initialize_llvm

    initialize_llvm()
    ok = llvm.parse_assembly("declare float @llvm.fma.f32(float, float, float)\n")
    toolchain._check_declarations(ok, "optimised LLVM IR")
    bad = llvm.parse_assembly("declare float @llvm.cos.f32(float)\n")
    with pytest.raises(CodegenError, match="optimised LLVM IR.*llvm.cos.f32"):
        toolchain._check_declarations(bad, "optimised LLVM IR")


def test_codegen_level_keeps_the_ptx_of_aggressive_codegen():
    """NVPTX codegen runs at CODEGEN_OPT_LEVEL (2) for compile time; the PTX must be what the
    aggressive level (3) emits, here for a small fp32 dot kernel through the whole compiler."""
    import llvmlite.binding as llvm

    import naiad
    import naiad.language as tl
    from naiad_nvidia.target_info import NVPTX_TRIPLE

    @naiad.jit
    def small_dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
        r = tl.arange(0, B)
        a = tl.load(a_ptr + r[:, None] * B + r[None, :])
        b = tl.load(b_ptr + r[:, None] * B + r[None, :])
        tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, b, input_precision="ieee"))

    k = naiad.compile(small_dot, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                      {"B": 32}, target="nvidia:sm_90")
    assert toolchain.CODEGEN_OPT_LEVEL == 2
    aggressive = llvm.Target.from_triple(NVPTX_TRIPLE).create_target_machine(
        cpu="sm_90", features=f"+ptx{toolchain.ptx_version('sm_90')}", opt=3,
        codemodel="default")
    with toolchain._LLVM_LOCK:
        mod = llvm.parse_assembly(k.asm["llir"])
        pb = llvm.create_pass_builder(aggressive, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        llvm.set_option("naiad", "--nvptx-fma-level=2")
        want = toolchain.harden_narrow_ints(aggressive.emit_assembly(mod))
    assert "fma.rn.f32" in want
    assert k.asm["ptx"] == want


def test_licm_promotion_cap_keeps_the_ptx_and_is_restored(monkeypatch):
    """O3 runs with LICM's promotion cap lowered (PIPELINE_OPTIONS, for compile time): set before
    the pipeline tuning options are created (they copy it), LLVM's default put back after, and
    the PTX of a k-loop FMA dot is what LLVM's defaults give."""
    import llvmlite.binding as llvm

    import naiad
    import naiad.language as tl

    @naiad.jit
    def looped_dot(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
        r = tl.arange(0, B)
        acc = tl.zeros((B, B), tl.float32)
        for k in range(0, K, B):
            a = tl.load(a_ptr + r[:, None] * K + k + r[None, :])
            b = tl.load(b_ptr + (k + r[:, None]) * B + r[None, :])
            acc += tl.dot(a, b, input_precision="ieee")
        tl.store(c_ptr + r[:, None] * B + r[None, :], acc)

    k = naiad.compile(looped_dot, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32",
                                   "K": "i32"}, {"B": 32}, target="nvidia:sm_90")
    assert ("licm-mssa-max-acc-promotion", 64, 250) in toolchain.PIPELINE_OPTIONS
    monkeypatch.setattr(toolchain, "PIPELINE_OPTIONS", ())
    assert toolchain.llvm_to_ptx(k.asm["llir"], "sm_90") == k.asm["ptx"]
    monkeypatch.undo()

    calls = []
    real_set, real_pto = llvm.set_option, llvm.create_pipeline_tuning_options
    monkeypatch.setattr(llvm, "set_option", lambda *a: (calls.append(a[1]), real_set(*a))[1])
    monkeypatch.setattr(llvm, "create_pipeline_tuning_options",
                        lambda **kw: (calls.append("pto"), real_pto(**kw))[1])
    toolchain.llvm_to_ptx(k.asm["llir"], "sm_90")
    for name, value, default in toolchain.PIPELINE_OPTIONS:
        assert calls.index(f"--{name}={value}") < calls.index("pto") \
            < calls.index(f"--{name}={default}")


def test_wgmma_matmul_ptx_unchanged_by_named_structs_and_pipeline_caps(monkeypatch):
    """Two compile-time savings must not move the PTX of a wgmma matmul with an fp16 epilogue
    through shared memory (tutorial 03's shape): the accumulator structs printed as named types
    (``naiad.backend.struct_type``) instead of literal ones, and O3 under PIPELINE_OPTIONS
    (DSE's walk cap bites on the epilogue's swizzled shared-memory stores) instead of LLVM's
    defaults."""
    import naiad
    import naiad.gpu.llvm as gpu_llvm
    import naiad.language as tl

    @naiad.jit
    def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))

    def compile_mm():
        return naiad.compile(mm, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
                                  "K": "i32"}, {"BM": 128, "BN": 128, "BK": 32},
                             target="nvidia:sm_90", options={"num_warps": 4, "num_stages": 3},
                             specialization={"K": {"divisibility": 16}})

    named = compile_mm()
    assert "wgmma.mma_async" in named.asm["ptx"]
    assert '%"naiad.f32x64" = type {' in named.asm["llir"]
    assert "{float, float" not in named.asm["llir"].split("define ", 1)[1]
    monkeypatch.setattr(gpu_llvm, "NAMED_STRUCT_MIN", 1 << 30)
    monkeypatch.setattr(toolchain, "PIPELINE_OPTIONS", ())
    literal = compile_mm()           # another toolchain hash: compiled afresh, not cached
    assert "naiad.f32x" not in literal.asm["llir"]
    assert len(literal.asm["llir"]) > 2 * len(named.asm["llir"])
    assert literal.asm["ptx"] == named.asm["ptx"]
