"""LLVM IR -> amdgcn -> hsaco for every arch, and what the code object says about the kernel."""
from __future__ import annotations

import re
import time

import pytest

from naiad.errors import CodegenError

import amd_irkernels as K
from amd_testkit import amd_target, attrs_for
from naiad_amd.codegen import AmdCodegen
from naiad_amd.archs import ARCHS
from naiad_amd.elf import EM_AMDGPU, ElfFile
from naiad_amd.metadata import code_object_metadata, count_instructions
from naiad_amd.target_info import DATA_LAYOUT
from naiad_amd.toolchain import Toolchain, ensure_code_object_version, get_toolchain, toolchain_hash


def _vadd(codegen, **opts):
    t = codegen.target
    o, attrs = attrs_for(t, **opts)
    src = K.vector_add(codegen.target_info, attrs, o.num_warps * t.warp_size)
    return src, codegen.compile_llvm(src, "vadd", o)


def test_vector_add_reaches_hsaco(codegen, arch):
    src, res = _vadd(codegen)
    assert '"amdhsa_code_object_version", i32 500' in src
    assert res.binary_stage == "hsaco" and set(res.stages) == {"llir-opt", "amdgcn", "hsaco"}
    asm = res.stages["amdgcn"]
    assert ".amdhsa_kernel vadd" in asm
    # GFX9 spells it global_load_dword, GFX11 global_load_b32
    assert re.search(r"global_load_(dword|b32)\b", asm) and re.search(r"global_store_(dword|b32)\b", asm)
    assert f'amdgcn-amd-amdhsa--{arch}' in asm
    assert ".amdhsa_code_object_version 5" in asm
    hsaco = res.stages["hsaco"]
    assert hsaco[:4] == b"\x7fELF"
    elf = ElfFile(hsaco)
    assert elf.machine == EM_AMDGPU
    assert {"vadd", "vadd.kd"} <= set(elf.symbols())


def test_vector_add_metadata(codegen, arch):
    _, res = _vadd(codegen)
    md = res.metadata
    assert md["wavefront_size"] == ARCHS[arch].wave_size
    assert md["vgpr"] > 0 and md["sgpr"] > 0
    assert md["agpr"] == 0 and md["spill_registers"] == 0 and md["lds"] == 0 and md["scratch"] == 0
    assert md["instructions"] > 5
    assert md["max_flat_workgroup_size"] == 4 * md["wavefront_size"]
    assert md["kernarg_size"] == 28  # three pointers and an i32: no hidden arguments
    assert [a["offset"] for a in md["args"]] == [0, 8, 16, 24]
    assert md["registers"] == md["vgpr"] and md["shared"] == md["lds"]
    meta = code_object_metadata(res.stages["hsaco"])
    assert meta["amdhsa.version"] == [1, 2]  # code object v5
    assert meta["amdhsa.target"].startswith(f"amdgcn-amd-amdhsa--{arch}")


def test_vector_add_compile_time(codegen, arch):
    _vadd(codegen)  # warm: TargetMachine, ld.lld page cache
    t0 = time.perf_counter()
    _, res = _vadd(codegen)
    took = time.perf_counter() - t0
    print(f"\n{arch}: vector add LLVM IR -> hsaco {took * 1e3:.1f} ms "
          + " ".join(f"{k}={v * 1e3:.1f}ms" for k, v in res.metadata["compile_times"].items()))
    assert took < 10.0


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942"])
def test_waves_per_eu_limits_registers(arch):
    t = amd_target(arch)
    cg = AmdCodegen(t)
    seen = {}
    for wpe in (None, 8):
        o, attrs = attrs_for(t, waves_per_eu=wpe)
        src = K.pressure_kernel(cg.target_info, attrs, 256)
        if wpe:
            assert '"amdgpu-waves-per-eu"="8,8"' in src
        seen[wpe] = cg.compile_llvm(src, "press", o).metadata
    assert seen[None]["vgpr"] > 128 and seen[None]["occupancy"] < 8
    assert seen[8]["vgpr"] <= 64 and seen[8]["occupancy"] >= 8  # "; Occupancy: 8" in the asm


def test_flat_work_group_size_reaches_metadata():
    t = amd_target("gfx942")
    _, res = _vadd(AmdCodegen(t), num_warps=16)
    assert res.metadata["max_flat_workgroup_size"] == 1024


HAND_WRITTEN = """
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @scale(ptr addrspace(1) %p, float %a) #0 {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %g = getelementptr inbounds float, ptr addrspace(1) %p, i32 %t
  %v = load float, ptr addrspace(1) %g
  %r = fmul float %v, %a
  store float %r, ptr addrspace(1) %g
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" "uniform-work-group-size"="true" }
"""


@pytest.mark.parametrize("flags, version", [
    ("", 5),  # no flag: the toolchain adds v5 (LLVM 22 alone would pick v6)
    ('!llvm.module.flags = !{!0}\n!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}\n', 5),
    ('!llvm.module.flags = !{!7}\n!7 = !{i32 1, !"amdhsa_code_object_version", i32 600}\n', 6),
    ('!llvm.module.flags = !{!3}\n!3 = !{i32 1, !"wchar_size", i32 4}\n', 5),
])
def test_hand_written_ir_code_object_version(flags, version):
    res = AmdCodegen(amd_target("gfx942")).compile_llvm(HAND_WRITTEN + flags, "scale")
    assert f".amdhsa_code_object_version {version}" in res.stages["amdgcn"]
    assert res.metadata["kernarg_size"] == 12


def test_ensure_code_object_version_picks_a_fresh_id():
    text = ensure_code_object_version('!5 = !{i32 1, !"x", i32 1}\n')
    assert "!6 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}" in text
    assert ensure_code_object_version(text) == text


def test_data_layout_matches_llvm(arch):
    assert get_toolchain(arch).data_layout == DATA_LAYOUT


def test_count_instructions_ignores_directives_and_comments():
    asm = "\t.text\nk:   ; @k\n; %bb.0:\n\ts_load_dword s0, s[0:1], 0x0 ; c\n.LBB0_1:\n\ts_endpgm\n.Lfunc_end0:\n\ts_nop 0\n"
    assert count_instructions(asm, "k") == 2


def test_toolchain_hash_is_stable():
    h = toolchain_hash()
    assert h == toolchain_hash() and len(h) == 64
    assert AmdCodegen(amd_target("gfx90a")).toolchain_hash() == h


def test_bad_ir_is_a_codegen_error():
    with pytest.raises(CodegenError, match="could not parse"):
        AmdCodegen(amd_target("gfx942")).compile_llvm("define void @f( {", "f")


def test_unverifiable_ir_is_a_codegen_error():
    bad = 'target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @f() {\n  %a = add i32 %a, 1\n  ret void\n}\n'
    with pytest.raises(CodegenError):
        AmdCodegen(amd_target("gfx942")).compile_llvm(bad, "f")


def test_libm_only_intrinsic_is_refused_not_a_crash():
    src = """target triple = "amdgcn-amd-amdhsa"
declare double @llvm.exp.f64(double)
define amdgpu_kernel void @f(ptr addrspace(1) %p, double %x) {
  %r = call double @llvm.exp.f64(double %x)
  store double %r, ptr addrspace(1) %p
  ret void
}
"""
    with pytest.raises(CodegenError, match="llvm.exp.f64"):
        AmdCodegen(amd_target("gfx942")).compile_llvm(src, "f")


def test_external_call_is_refused():
    src = """target triple = "amdgcn-amd-amdhsa"
declare float @mystery(float)
define amdgpu_kernel void @f(ptr addrspace(1) %p, float %x) {
  %r = call float @mystery(float %x)
  store float %r, ptr addrspace(1) %p
  ret void
}
"""
    with pytest.raises(CodegenError, match="mystery"):
        AmdCodegen(amd_target("gfx942")).compile_llvm(src, "f")


def test_linker_failure_carries_the_log():
    with pytest.raises(CodegenError, match="ld.lld failed"):
        Toolchain.link(b"this is not an object file")


def test_wrong_kernel_name_is_a_codegen_error():
    with pytest.raises(CodegenError, match="not in the code object"):
        AmdCodegen(amd_target("gfx942")).compile_llvm(HAND_WRITTEN, "nope")


def test_initialised_lds_is_refused_not_a_crash():
    src = """target triple = "amdgcn-amd-amdhsa"
@smem = internal addrspace(3) global [64 x float] zeroinitializer, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @f(ptr addrspace(1) %p, float %x) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %a = getelementptr inbounds [64 x float], ptr addrspace(3) @smem, i32 0, i32 %t
  store float %x, ptr addrspace(3) %a
  %u = xor i32 %t, 1
  %b = getelementptr inbounds [64 x float], ptr addrspace(3) @smem, i32 0, i32 %u
  %v = load float, ptr addrspace(3) %b
  store float %v, ptr addrspace(1) %p
  ret void
}
"""
    with pytest.raises(CodegenError, match="LDS variable @smem"):
        AmdCodegen(amd_target("gfx942")).compile_llvm(src, "f")


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_assembled_text_is_the_code_generators_object(arch):
    """One code-generator run: the object assembled from the AMDGCN text has exactly the machine
    code (.text) the code generator would have emitted as an object itself."""
    from naiad_amd.elf import ElfFile
    from naiad_amd.toolchain import ensure_code_object_version, get_toolchain

    import naiad
    import naiad.language as tl

    @naiad.jit
    def softmax_row(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)

    k = naiad.compile(softmax_row, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                      constexprs={"BLOCK": 512}, target=f"amd:{arch}")
    tc = get_toolchain(arch)
    direct = tc.emit_object(tc.parse(ensure_code_object_version(k.asm["llir-opt"])))
    assembled = tc.assemble(k.asm["amdgcn"])
    assert ElfFile(assembled).section_bytes(".text") == ElfFile(direct).section_bytes(".text")


def test_llir_opt_stage_is_the_optimised_module(tmp_path, monkeypatch, capfd):
    import naiad
    import naiad.language as tl

    @naiad.jit
    def twice(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2.0)

    monkeypatch.setenv("NAIAD_DUMP", "llir-opt")
    k = naiad.compile(twice, signature={"x_ptr": "*fp32"}, constexprs={"BLOCK": 128}, target="amd:gfx942")
    opt = k.asm["llir-opt"]
    assert opt != k.asm["llir"] and "define amdgpu_kernel void @twice" in opt
    assert "llvm.amdgcn" in opt
    assert opt.strip() in capfd.readouterr().err.replace("\r", "")
