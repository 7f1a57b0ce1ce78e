"""AMD matrix cores end to end (no GPU): MFMA/WMMA chosen per arch and option, the intrinsic
reaching the ISA, kernel descriptors agreeing with the metadata note, LDS checked at compile."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError, OptionError
from naiad_amd.descriptor import check_descriptor


@naiad.jit
def matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def compile_matmul(arch, dtype="fp16", bm=128, bn=128, bk=32, **options):
    options.setdefault("num_warps", 4)
    return naiad.compile(matmul, signature={"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}",
                                            "c_ptr": "*fp32", "K": "i32"},
                         constexprs=dict(BM=bm, BN=bn, BK=bk), target=f"amd:{arch}",
                         options=options)


@pytest.mark.parametrize("arch, dtype, mnemonic", [
    ("gfx90a", "fp16", "v_mfma_f32_32x32x8f16"),
    ("gfx942", "fp16", "v_mfma_f32_32x32x8_f16"),
    ("gfx942", "bf16", "v_mfma_f32_32x32x8_bf16"),
    ("gfx942", "fp32", "v_mfma_f32_32x32x4_xf32"),   # tl.dot's default precision is tf32
    ("gfx90a", "fp32", "v_mfma_f32_32x32x2f32"),     # no xf32 on gfx90a: exact f32
    ("gfx950", "fp16", "v_mfma_f32_32x32x16_f16"),
    ("gfx1100", "fp16", "v_wmma_f32_16x16x16_f16"),
    ("gfx1100", "bf16", "v_wmma_f32_16x16x16_bf16"),
    ("gfx1200", "fp16", "v_wmma_f32_16x16x16_f16"),
])
def test_matrix_instruction_reaches_the_isa(arch, dtype, mnemonic):
    k = compile_matmul(arch, dtype, bk=32)
    assert "matrix_mma" in k.asm["gpu"] and ("#amd_wmma" if "wmma" in mnemonic else "#amd_mfma") \
        in k.asm["gpu"]
    assert mnemonic in k.asm["amdgcn"]
    assert check_descriptor(k.asm["hsaco"], "matmul") == []


def test_nonkdim_and_kpack_change_the_code_as_in_triton():
    base = compile_matmul("gfx942").asm["amdgcn"]
    small = compile_matmul("gfx942", matrix_instr_nonkdim=16).asm["amdgcn"]
    assert "v_mfma_f32_32x32x8_f16" in base and "v_mfma_f32_16x16x16" not in base
    assert "v_mfma_f32_16x16x16_f16" in small and "v_mfma_f32_32x32x8" not in small
    packed = compile_matmul("gfx942", kpack=2)
    assert "k_width = 8" in packed.asm["gpu"]
    # each lane reads 8 consecutive K elements (16 bytes) at once instead of 4 (8 bytes; LLVM
    # pairs two 8-byte reads at constant offsets of one base into a ds_read2[st64]_b64)
    assert "ds_read_b128" in packed.asm["amdgcn"] or "ds_load_b128" in packed.asm["amdgcn"]
    eight_bytes = r"ds_read2?(?:st64)?_b64"
    assert len(re.findall(eight_bytes, base)) > len(re.findall(eight_bytes, packed.asm["amdgcn"]))


@pytest.mark.parametrize("bad", [{"matrix_instr_nonkdim": 8}, {"kpack": 3}, {"kpack": True}])
def test_bad_matrix_options_are_named(bad):
    with pytest.raises(OptionError, match=next(iter(bad))):
        compile_matmul("gfx942", **bad)


def test_lds_over_the_arch_limit_is_a_compile_error_naming_kernel_need_and_limit():
    # 8 waves, 256x256x64 fp16: A and B staged together take exactly gfx942's 64 KiB (no
    # pipelining, and the epilogue stores from the MFMA layout without LDS)
    fits = compile_matmul("gfx942", bm=256, bn=256, bk=64, num_warps=8)
    assert fits.metadata["shared"] == 65536 and "v_mfma" in fits.asm["amdgcn"]
    # with K tiles of 128 they need 128 KiB
    with pytest.raises(CompilationError) as err:
        compile_matmul("gfx942", bm=256, bn=256, bk=128, num_warps=8)
    msg = str(err.value)
    assert "kernel matmul needs 131072 bytes" in msg and "has 65536 bytes" in msg
    assert "test_amd_matrix.py" in msg and "tl.dot(a, b, acc)" in msg  # the kernel source line
    # the same tile fits gfx950's 160 KiB
    assert "v_mfma" in compile_matmul("gfx950", bm=256, bn=256, bk=128, num_warps=8).asm["amdgcn"]


def test_shapes_no_instruction_tiles_stay_on_fma():
    # a 16x16 result with the 32x32 instructions forced: no entry tiles it
    k = compile_matmul("gfx942", "fp16", bm=16, bn=16, bk=16, matrix_instr_nonkdim=32)
    assert "matrix_mma" not in k.asm["gpu"] and "v_mfma" not in k.asm["amdgcn"]


def test_passes_and_layouts_appear_by_name_in_dumps(monkeypatch, capfd):
    monkeypatch.setenv("NAIAD_DUMP", "after:gpu/accelerate_matmul,after:gpu/stage_matrix_operands,"
                                     "after:gpu/check_shared_memory")
    monkeypatch.setenv("NAIAD_DEBUG", "1")  # the IR verifies between the passes too
    compile_matmul("gfx942", bm=64, bn=64, bk=32)
    err = capfd.readouterr().err
    for name in ("accelerate_matmul", "stage_matrix_operands", "check_shared_memory"):
        assert re.search(rf"// ----- naiad IR after pass {name} \(\d+/\d+, gpu\)", err), name
    assert "matrix_mma" in err and "#amd_mfma<version = 3" in err and "isTransposed = true" in err


@pytest.mark.parametrize("arch, per_item_ok", [("gfx942", 131056), ("gfx1100", 262136),
                                               ("gfx1200", 2097144)])
def test_scratch_over_the_wave_limit_is_a_compile_error(arch, per_item_ok):
    from naiad.errors import CodegenError
    from naiad_amd.archs import get_arch
    from naiad_amd.codegen import check_scratch

    a = get_arch(arch)
    check_scratch("k", a, per_item_ok)  # just within COMPUTE_TMPRING_SIZE.WAVESIZE
    with pytest.raises(CodegenError, match=rf"kernel k needs {per_item_ok + 64} bytes of scratch "
                                           rf"per work-item .* {arch} allows {a.max_wave_scratch}"):
        check_scratch("k", a, per_item_ok + 64)
