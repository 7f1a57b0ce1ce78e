"""Every op family lowered with the real vendor TargetInfos and compiled by LLVM: PTX for
sm_90 (warp 32), AMDGCN for gfx942 (wave64) and gfx1100 (wave32). The IR must parse, verify
and reach assembly, and the assembly must contain the instructions each family stands for.
"""
import re

import pytest

from naiad.frontend import generate
from naiad.gpu.lower import lower_to_llvm
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.types import TensorType
from naiad.ir.verifier import verify
from naiad.passes import run_generic_pipeline
from naiad.plugins import Options, Target

import gpu_kernels as K

A16 = {"divisibility": 16}


def _targets():
    from naiad_amd.target_info import AmdTargetInfo
    from naiad_nvidia.target_info import NvidiaTargetInfo

    return {
        "sm_90": (Target("nvidia", "sm_90", 32), NvidiaTargetInfo("sm_90"),
                  "nvptx64-nvidia-cuda", "sm_90", "+ptx80"),
        "gfx942": (Target("amd", "gfx942", 64), AmdTargetInfo("gfx942"),
                   "amdgcn-amd-amdhsa", "gfx942", "+wavefrontsize64"),
        "gfx1100": (Target("amd", "gfx1100", 32), AmdTargetInfo("gfx1100"),
                    "amdgcn-amd-amdhsa", "gfx1100", "+wavefrontsize32"),
    }


_TM = {}


def assemble(llvm_ir: str, triple: str, cpu: str, features: str) -> str:
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    key = (triple, cpu, features)
    if key not in _TM:
        _TM[key] = llvm.Target.from_triple(triple).create_target_machine(
            cpu=cpu, features=features, opt=2)
    return _TM[key].emit_assembly(mod)


def lower(kernel, signature, constexprs, target_key, specialization=None, num_warps=4):
    target, ti, triple, cpu, features = _targets()[target_key]
    module = generate(kernel, signature, constexprs, specialization or {})
    run_generic_pipeline(module)
    lowered = lower_to_llvm(module, kernel.__name__, target, Options(num_warps=num_warps), ti, None)
    return lowered, module, assemble(lowered.llvm_ir, triple, cpu, features)


P32 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}

#: name -> (kernel, signature, constexprs, specialization, {target family: asm patterns})
CASES = {
    "vector_add": (K.add_kernel, {**P32, "n": "i32"}, {"BLOCK": 1024},
                   {"x_ptr": A16, "y_ptr": A16, "out_ptr": A16, "n": A16},
                   {"ptx": [r"ld\.global\.v4", r"st\.global\.v4"],
                    "gcn": [r"global_load_dwordx4|global_load_b128",
                            r"global_store_dwordx4|global_store_b128"]}),
    "int_div_shift": (K.binary_kernel, {"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i32"},
                      {"OP": "shr", "BLOCK": 256}, {}, {"ptx": [r"shr\.s32"],
                                                        "gcn": [r"v_ashrrev_i32"]}),
    # float % is naiad's exact fmod (significands reduced with 64-bit urem), never LLVM's frem
    "float_mod": (K.binary_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                  {"OP": "mod", "BLOCK": 256}, {}, {"ptx": [r"clz\.b64", r"rem\.u64"],
                                                    "gcn": [r"v_ffbh_u32|v_clz_i32_u32"]}),
    "fp16_max": (K.binary_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16"},
                 {"OP": "max", "BLOCK": 256}, {}, {"ptx": [r"max"], "gcn": [r"max"]}),
    "bf16_div": (K.binary_kernel, {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16"},
                 {"OP": "truediv", "BLOCK": 256}, {}, {"ptx": [r"div"], "gcn": [r"div"]}),
    "casts": (K.cast_kernel, {"x_ptr": "*fp64", "out_ptr": "*bf16"},
              {"BLOCK": 128, "DST": K.tl.bfloat16}, {}, {"ptx": [], "gcn": []}),
    "math_exp": (K.math_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16"},
                 {"OP": "exp", "BLOCK": 128}, {}, {"ptx": [], "gcn": []}),
    "i1_memory": (K.bool_copy, {"x_ptr": "*i1", "out_ptr": "*i1"}, {"BLOCK": 256}, {},
                  {"ptx": [r"\.u8|\.b8"], "gcn": [r"ubyte|_byte|_u8|_b8"]}),
    "scalars": (K.scalar_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "k": "fp32",
                                  "flag": "i1"}, {}, {}, {"ptx": [], "gcn": []}),
    "reduce_rows": (K.reduce_rows, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32"},
                    {"M": 32, "N": 128, "AXIS": 1, "OP": "sum"}, {},
                    {"ptx": [r"shfl\.sync\.bfly"], "gcn": [r"ds_bpermute|dpp|ds_swizzle"]}),
    "reduce_cols_smem": (K.reduce_rows, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32"},
                         {"M": 256, "N": 4, "AXIS": 0, "OP": "max"}, {},
                         {"ptx": [r"st\.shared", r"bar\.sync"],
                          "gcn": [r"ds_write|ds_store", r"s_barrier"]}),
    "argmax": (K.reduce_rows, {"x_ptr": "*fp32", "out_ptr": "*i32", "stride": "i32"},
               {"M": 16, "N": 64, "AXIS": 1, "OP": "argmax"}, {}, {"ptx": [], "gcn": []}),
    "softmax": (K.softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "stride": "i32",
                                   "n_cols": "i32"}, {"BLOCK": 1024}, {},
                {"ptx": [r"shfl\.sync\.bfly", r"bar\.sync"], "gcn": [r"s_barrier"]}),
    "custom_reduce": (K.custom_reduce_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      {"N": 512}, {}, {"ptx": [], "gcn": []}),
    "cumsum": (K.scan_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"},
               {"M": 4, "N": 256, "AXIS": 1, "REVERSE": False, "OP": "sum"}, {},
               {"ptx": [r"shfl\.sync\.idx"], "gcn": [r"ds_bpermute"]}),
    "cumprod_rev_axis0": (K.scan_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                          {"M": 128, "N": 8, "AXIS": 0, "REVERSE": True, "OP": "prod"}, {},
                          {"ptx": [], "gcn": []}),
    "dot_f16": (K.dot_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                {"M": 64, "N": 64, "K": 32, "OUT": K.tl.float32}, {},
                {"ptx": [r"fma\.rn\.f32"], "gcn": [r"v_fma|v_fmac|v_pk_fma|v_mac"]}),
    "dot_i8": (K.dot_kernel, {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"},
               {"M": 16, "N": 16, "K": 32, "OUT": K.tl.int32}, {}, {"ptx": [], "gcn": []}),
    "matmul_loop": (K.matmul_loop, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32",
                                    "M": "i32", "N": "i32", "K": "i32"},
                    {"BM": 32, "BN": 32, "BK": 32}, {}, {"ptx": [], "gcn": []}),
    "histogram": (K.histogram, {"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"},
                  {"BLOCK": 512}, {}, {"ptx": [r"atom\.global.*add"],
                                       "gcn": [r"global_atomic_add"]}),
    "atomic_fmax_broadcast": (K.atomic_small, {"cnt_ptr": "*fp32", "old_ptr": "*fp32",
                                               "val_ptr": "*fp32"},
                              {"N": 4, "KIND": "max"}, {}, {"ptx": [r"atom\.global"],
                                                            "gcn": [r"global_atomic"]}),
    "atomic_bf16_add": (K.atomic_small, {"cnt_ptr": "*bf16", "old_ptr": "*bf16",
                                         "val_ptr": "*bf16"}, {"N": 256, "KIND": "add"}, {},
                        {"ptx": [r"atom\.global\.gpu\.acq_rel\.add\.noftz\.bf16"],
                         "gcn": [r"cmpswap"]}),
    "atomic_scalar": (K.atomic_scalar, {"cnt_ptr": "*i32", "old_ptr": "*i32"}, {}, {},
                      {"ptx": [r"atom\.global"], "gcn": [r"global_atomic"]}),
    "atomic_cas": (K.cas_kernel, {"lock_ptr": "*i32", "out_ptr": "*i32"}, {"N": 128}, {},
                   {"ptx": [r"atom\..*cas"], "gcn": [r"cmpswap"]}),
    "trans": (K.trans_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"M": 64, "N": 32},
              {"x_ptr": A16, "out_ptr": A16}, {"ptx": [], "gcn": []}),
    "reshape": (K.reshape_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, {"M": 32, "N": 32},
                {}, {"ptx": [], "gcn": []}),
    "join_split": (K.join_split_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16",
                                         "out_ptr": "*fp16"}, {"N": 256}, {},
                   {"ptx": [], "gcn": []}),
    "broadcast": (K.broadcast_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                  {"M": 64, "N": 64}, {}, {"ptx": [], "gcn": []}),
    "control_flow": (K.loops_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_iter": "i32"},
                     {"BLOCK": 256}, {}, {"ptx": [r"bra"], "gcn": [r"s_cbranch"]}),
}


@pytest.mark.parametrize("target_key", ["sm_90", "gfx942", "gfx1100"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_family_compiles(case, target_key):
    kernel, sig, cx, spec, patterns = CASES[case]
    lowered, module, asm = lower(kernel, sig, cx, target_key, spec)
    family = "ptx" if target_key.startswith("sm") else "gcn"
    for pat in patterns[family]:
        assert re.search(pat, asm), f"{case} on {target_key}: no {pat!r} in the assembly"
    # the GPU IR parses back to itself and verifies
    again = parse_module(lowered.gpu_text)
    verify(again)
    assert print_module(again) == lowered.gpu_text
    # the GPU IR gives every tensor a layout with the target's warp size
    warp = 32 if target_key != "gfx942" else 64
    for fn in module.functions.values():
        for op in fn.walk():
            for r in op.results:
                if isinstance(r.type, TensorType):
                    assert r.type.layout is not None
                    ll = r.type.layout.to_linear(r.type.shape)
                    assert ll.in_size("lane") == warp and ll.in_size("warp") == 4


def test_no_vendor_leaks_into_the_core_lowering():
    """Core's LLVM for AMD holds no NVVM intrinsic and vice versa: every vendor fact came
    from the TargetInfo."""
    kernel, sig, cx, spec, _ = CASES["softmax"]
    amd, _, _ = lower(kernel, sig, cx, "gfx942", spec)
    nv, _, _ = lower(kernel, sig, cx, "sm_90", spec)
    assert "nvvm" not in amd.llvm_ir and "ptx" not in amd.llvm_ir
    assert "amdgcn" not in nv.llvm_ir.replace("target triple", "")
    assert "amdgpu_kernel" in amd.llvm_ir and "ptx_kernel" in nv.llvm_ir


def test_core_sources_name_no_vendor():
    """No vendor intrinsic, address space or architecture is named anywhere in the GPU layer."""
    import pathlib

    import naiad.gpu

    root = pathlib.Path(naiad.gpu.__file__).parent
    words = re.compile(r"nvvm|nvptx|amdgcn|amdgpu|\bptx\b|\bhip\b|cuda|sm_\d\d|gfx\d|"
                       r"warp_size\s*=\s*(32|64)|== *32\b", re.I)
    for path in root.rglob("*.py"):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            assert not words.search(line), f"{path.name}:{lineno}: {line.strip()}"


@pytest.mark.parametrize("target_key", ["sm_90", "gfx942"])
def test_shared_memory_is_dynamic_and_sized(target_key):
    kernel, sig, cx, spec, _ = CASES["reduce_cols_smem"]
    lowered, module, asm = lower(kernel, sig, cx, target_key, spec)
    assert lowered.shared_bytes > 0
    assert "global_smem" in lowered.llvm_ir
    fn = module.functions[kernel.__name__]
    assert fn.attrs["shared"] == lowered.shared_bytes
    needs = [op.attrs["scratch"] for op in fn.walk() if op.attrs.get("scratch")]
    assert needs and max(needs) == lowered.shared_bytes


@pytest.mark.parametrize("num_warps", [1, 2, 8, 16])
@pytest.mark.parametrize("target_key", ["sm_90", "gfx942"])
@pytest.mark.parametrize("case", ["softmax", "cumsum", "dot_f16", "atomic_fmax_broadcast",
                                  "trans", "control_flow"])
def test_warp_counts(case, target_key, num_warps):
    kernel, sig, cx, spec, _ = CASES[case]
    lowered, module, asm = lower(kernel, sig, cx, target_key, spec, num_warps=num_warps)
    assert kernel.__name__ in asm
    for fn in module.functions.values():
        for op in fn.walk():
            for r in op.results:
                if isinstance(r.type, TensorType):
                    ll = r.type.layout.to_linear(r.type.shape)
                    assert ll.in_size("warp") == num_warps
