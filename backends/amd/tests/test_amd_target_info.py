"""AmdTargetInfo: ids, num_programs, barrier, lane id and shuffles for wave64 and wave32."""
from __future__ import annotations

import re

import pytest
from llvmlite import ir

import amd_irkernels as K
from amd_testkit import amd_target, attrs_for
from naiad_amd.codegen import AmdCodegen
from naiad_amd.lowering.irutil import BF16, F16, F32, F64, I16, I32, I64
from naiad_amd.target_info import AmdTargetInfo


def test_static_facts():
    for arch, wave in (("gfx90a", 64), ("gfx942", 64), ("gfx1100", 32)):
        ti = AmdTargetInfo(arch)
        assert ti.warp_size == wave
        assert ti.triple == "amdgcn-amd-amdhsa"
        assert ti.global_address_space == 1 and ti.shared_address_space == 3
        assert ti.kernel_calling_convention == "amdgpu_kernel"
        assert ti.atomic_scope == "agent"


def _compile(arch, builder_fn, name):
    t = amd_target(arch)
    cg = AmdCodegen(t)
    o, attrs = attrs_for(t)
    src = builder_fn(cg.target_info, attrs, o.num_warps * t.warp_size, name=name)
    return src, cg.compile_llvm(src, name, o)


def test_shuffles_barrier_lane_and_num_programs(arch):
    src, res = _compile(arch, K.shuffle_kernel, "shfl")
    asm = res.stages["amdgcn"]
    # the butterfly: DPP (masks 1, 2, 4, 8), then ds_swizzle (GFX9) / v_permlanex16 (GFX10+) for 16;
    # wave64 crosses the 32-lane halves with ds_bpermute
    assert "quad_perm:[1,0,3,2]" in asm and "quad_perm:[2,3,0,1]" in asm
    assert ("v_permlanex16" in asm) == (arch == "gfx1100") and ("ds_swizzle" in asm) != (arch == "gfx1100")
    # shuffle_idx from lane 0: ds_bpermute, which LLVM may turn into v_readlane for a constant lane
    assert "llvm.amdgcn.ds.bpermute" in src and ("ds_bpermute_b32" in asm or "v_readlane_b32" in asm)
    assert 'fence syncscope("workgroup") release' in src and 'fence syncscope("workgroup") acquire' in src
    assert "s_barrier" in asm
    assert re.search(r"v_mbcnt_lo_u32_b32", asm)
    wave64 = arch not in ("gfx1100", "gfx1200")
    assert ("llvm.amdgcn.mbcnt.hi" in src) == wave64
    assert ("v_mbcnt_hi_u32_b32" in asm) == wave64
    # num_programs reads the dispatch packet: the kernel asks for the dispatch pointer
    assert "llvm.amdgcn.dispatch.ptr" in src
    assert ".amdhsa_user_sgpr_dispatch_ptr 1" in asm
    assert res.metadata["wavefront_size"] == (64 if wave64 else 32)


def test_barrier_waits_for_lds_stores(arch):
    _, res = _compile(arch, K.lds_kernel, "ldsk")
    asm = res.stages["amdgcn"]
    body = asm[asm.index("ldsk:"):asm.index(".Lfunc_end")]
    write = re.search(r"ds_write|ds_store", body)
    barrier = re.search(r"s_barrier", body).start()
    assert write and write.start() < barrier
    # the release fence makes LLVM wait for the LDS store before the barrier (gfx12 counts
    # LDS accesses in a counter of their own: s_wait_dscnt)
    assert re.search(r"s_waitcnt.*lgkmcnt\(0\)|s_wait_dscnt 0x0", body[write.start():barrier])
    assert res.metadata["lds"] == 4 * 64 * (2 if arch == "gfx1100" else 4) or res.metadata["lds"] > 0


@pytest.mark.parametrize("ty", [I32, F32, F64, I64, F16, I16, BF16, ir.PointerType(addrspace=3),
                                ir.PointerType(addrspace=1)], ids=str)
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_shuffle_every_width_compiles(arch, ty):
    t = amd_target(arch)
    cg = AmdCodegen(t)
    ti = cg.target_info
    o, attrs = attrs_for(t)
    m = K.new_module(ti, attrs)
    fn, b = K.new_kernel(m, ti, "sh", [K.GPTR], attrs)
    (p,) = fn.args
    i = ti.thread_id(b, 0)
    v = b.load(b.gep(p, [i], source_etype=ty), typ=ty)
    x = ti.shuffle_xor(b, v, 1)
    y = ti.shuffle_idx(b, x, b.sub(ir.Constant(I32, ti.warp_size - 1), ti.lane_id(b)))
    b.store(y, b.gep(p, [i], source_etype=ty))
    b.ret_void()
    asm = cg.compile_llvm(str(m), "sh", o).stages["amdgcn"]
    wide = ty in (F64, I64) or (isinstance(ty, ir.PointerType) and ty.addrspace == 1)
    assert asm.count("ds_bpermute_b32") == (2 if wide else 1)  # shuffle_idx: arbitrary lanes
    assert asm.count("quad_perm:[1,0,3,2]") == (2 if wide else 1)  # shuffle_xor 1: one DPP move per word


def test_ids_on_every_axis(arch):
    t = amd_target(arch)
    cg = AmdCodegen(t)
    ti = cg.target_info
    o, attrs = attrs_for(t)
    m = K.new_module(ti, attrs)
    fn, b = K.new_kernel(m, ti, "ids", [K.GPTR], attrs)
    (p,) = fn.args
    acc = ir.Constant(I32, 0)
    for axis in range(3):
        for v in (ti.thread_id(b, axis), ti.program_id(b, axis), ti.num_programs(b, axis)):
            acc = b.add(acc, v)
    b.store(acc, b.gep(p, [ti.lane_id(b)], source_etype=I32))
    b.ret_void()
    src = str(m)
    for a in "xyz":
        assert f"llvm.amdgcn.workitem.id.{a}" in src and f"llvm.amdgcn.workgroup.id.{a}" in src
    asm = cg.compile_llvm(src, "ids", o).stages["amdgcn"]
    assert ".amdhsa_system_sgpr_workgroup_id_z 1" in asm


def test_bad_axis_and_mask():
    ti = AmdTargetInfo("gfx1100")
    b = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f").append_basic_block())
    with pytest.raises(ValueError):
        ti.program_id(b, 3)
    with pytest.raises(ValueError):
        ti.shuffle_xor(b, ir.Constant(I32, 0), 32)
