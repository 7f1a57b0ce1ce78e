"""NVIDIA's mma.sync and wgmma entries in the core's ``accelerate_matmul``: tile-IR text in, GPU
IR text out (the core pass with this plugin's table and policy), the entries' lane maps against
the ``#nvidia_mma`` layout, and the pass by name in ``NAIAD_DUMP``."""
import re

import pytest

import naiad
import naiad.language as tl
from naiad.frontend import generate
from naiad.gpu.layouts import register_layout
from naiad.gpu.matrix.accelerate import accelerate_matmul
from naiad.gpu.passes import GPUPassContext
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.passes import run_generic_pipeline
from naiad.plugins import Target
from naiad.remarks import collect
from naiad_nvidia.ir.matrix_table import instruction_table, mma_sync_entries, wgmma_entries
from naiad_nvidia.ir.mma_layout import (C_LANES, FRAGMENT_LANES, FRAGMENT_REGISTERS,
                                        NvidiaMmaLayout)
from naiad_nvidia.passes.accelerate_matmul import matrix_policy

register_layout(NvidiaMmaLayout)


@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               P: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=P))


@naiad.jit
def acc_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def tile_text(kernel=dot_kernel, dtype="fp16", m=64, n=64, k=32, precision="ieee"):
    consts = dict(M=m, N=n, K=k)
    if kernel is dot_kernel:
        consts["P"] = precision
    module = generate(kernel, {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32"},
                      consts, {})
    run_generic_pipeline(module)
    return print_module(module)


def accelerate(text, arch="sm_90", num_warps=4, **options):
    target = Target("nvidia", arch, 32)
    ctx = GPUPassContext(num_warps=num_warps, warp_size=32)
    ctx.matrix_instructions = instruction_table(target, options)
    ctx.matrix_policy = matrix_policy(target, options)
    module = parse_module(text)
    accelerate_matmul(module, ctx)
    return print_module(module), collect(module)


def mma_line(text):
    [line] = [ln for ln in text.splitlines() if "nvidia.mma" in ln]
    return line


@pytest.mark.parametrize("arch, dtype, precision, shape, warps, want", [
    # sm_90: warpgroups along M, the wgmma mark
    ("sm_90", "fp16", "ieee", (64, 64, 32), 4, 'kind = "f16", wgmma = true'),
    ("sm_90", "bf16", "ieee", (128, 64, 32), 8, 'kind = "bf16", wgmma = true'),
    ("sm_90", "fp32", "tf32", (64, 64, 8), 4, 'kind = "tf32", wgmma = true'),
    ("sm_90", "int8", "ieee", (64, 32, 32), 4, 'kind = "s8", wgmma = true'),
    # sm_80: mma.sync, the split with the fewest operand elements per warp
    ("sm_80", "fp16", "ieee", (64, 64, 32), 4, 'kind = "f16"}'),
    ("sm_80", "fp32", "tf32", (128, 16, 8), 4, 'kind = "tf32"}'),
    # sm_90 with M too small for a warpgroup per 16 rows x 4 warps: mma.sync
    ("sm_90", "fp16", "ieee", (32, 64, 16), 4, 'kind = "f16"}'),
])
def test_the_core_pass_picks_nvidia_entries(arch, dtype, precision, shape, warps, want):
    m, n, k = shape
    out, _ = accelerate(tile_text(dtype=dtype, m=m, n=n, k=k, precision=precision), arch)
    line = mma_line(out)
    assert want in line, line
    wm, wn = (4, 1) if "wgmma" in want else {(64, 64): (2, 2), (128, 16): (4, 1),
                                             (32, 64): (2, 2)}[(m, n)]
    assert f"#nvidia_mma<version = 2, warpsPerCTA = [{wm}, {wn}]" in line, line
    assert " dot " not in out


def test_remarks_say_why_a_dot_is_off_the_fast_path():
    out, remarks = accelerate(tile_text(m=32, n=64, k=16), "sm_90")
    assert any("uses mma.sync instead of wgmma: M=32 is not a multiple of 64" in r
               for r in remarks), remarks
    out, remarks = accelerate(tile_text(dtype="int8", m=16, n=16, k=32), "sm_80")
    assert " dot " not in out and "kind = \"s8\"" in out and not remarks  # mma.sync m16n8k32
    out, remarks = accelerate(tile_text(m=16, n=16, k=8), "sm_80")
    assert " dot " in out and any("16x16x8 is not tiled exactly" in r for r in remarks), remarks
    out, remarks = accelerate(tile_text(), "sm_90", tensor_cores=False)
    assert " dot " in out and any("option tensor_cores is off" in r for r in remarks)
    out, remarks = accelerate(tile_text(dtype="fp32", precision="ieee"), "sm_90")
    assert " dot " in out and any("input_precision='ieee' asks for exact" in r for r in remarks)
    out, remarks = accelerate(tile_text(), "sm_90")
    assert not remarks  # on wgmma: nothing to say


def test_wgmma_option_off_gives_mma_sync():
    out, remarks = accelerate(tile_text(), "sm_90", wgmma=False)
    assert "wgmma" not in mma_line(out)
    assert any("option wgmma is off" in r for r in remarks)


def test_accumulating_add_folds_into_the_mma():
    out, _ = accelerate(tile_text(acc_kernel), "sm_80")
    assert " add " not in out.split("nvidia.mma")[1]
    # the accumulator handed to the mma is the loaded tile, not a zero
    mma = mma_line(out)
    acc_name = re.findall(r"%\w+", mma.split("nvidia.mma")[1])[2]
    [conv] = [ln for ln in out.splitlines() if ln.strip().startswith(acc_name + " =")]
    src = re.findall(r"%\w+", conv.split("convert_layout")[1])[0]
    [load] = [ln for ln in out.splitlines() if ln.strip().startswith(src + " =")]
    assert " load " in load, load


@naiad.jit
def fp8_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("arch, k, want", [("sm_90", 32, 'kind = "e4m3", wgmma = true'),
                                           ("sm_90", 16, 'kind = "f16", wgmma = true'),
                                           ("sm_80", 32, 'kind = "f16"}')])
def test_float8_tiles_go_to_wgmma_unwidened(arch, k, want):
    module = generate(fp8_kernel, {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32"},
                      dict(M=64, N=64, K=k), {})
    run_generic_pipeline(module)
    text = print_module(module)
    assert " cast " in text
    out, _ = accelerate(text, arch)
    line = mma_line(out)
    assert want in line, line
    a_name = re.findall(r"%\w+", line.split("nvidia.mma")[1])[0]
    [a_def] = [ln for ln in out.splitlines() if ln.strip().startswith(a_name + " =")]
    assert ("xf8e4nv" in a_def) == ("e4m3" in want), a_def   # the float8 tile itself
    assert (" cast " in out) == ("e4m3" not in want)  # the widened copies go away


def test_lane_maps_are_the_ptx_fragments():
    """The mma.sync entries' maps are the PTX ISA fragments (mma_layout's constants); the
    wgmma entries' are four warps of them stacked along M."""
    by_name = {e.name: e for e in mma_sync_entries()}
    f16 = by_name["mma.sync.m16n8k16.f32.f16"]
    assert list(f16.c_map.bases["register"]) == list(FRAGMENT_REGISTERS[("C", None)])
    assert list(f16.c_map.bases["lane"]) == list(C_LANES)
    assert list(f16.a_map.bases["lane"]) == list(FRAGMENT_LANES[("A", 2)])
    assert list(f16.b_map.bases["register"]) == list(FRAGMENT_REGISTERS[("B", 2)])
    tf32 = by_name["mma.sync.m16n8k8.f32.tf32"]
    assert list(tf32.a_map.bases["register"]) == list(FRAGMENT_REGISTERS[("A", 1)])
    assert tf32.a_map.apply(register=1, lane=0) == (8, 0)   # a1: row g + 8, column t
    assert tf32.a_map.apply(register=2, lane=1) == (0, 5)   # a2: row g, column t + 4
    w = {e.name: e for e in wgmma_entries()}["wgmma.mma_async.m64n16k16.f32.f16"]
    assert w.wave_size == 128 and list(w.c_map.bases["lane"][5:]) == [(16, 0), (32, 0)]
    assert list(w.b_map.bases["lane"][5:]) == [(0, 0), (0, 0)]    # B is shared by the warpgroup


def test_table_follows_target_and_options():
    names = [e.name for e in instruction_table(Target("nvidia", "sm_90", 32), {})]
    assert names[0].startswith("wgmma") and names[-1].startswith("mma.sync")
    assert all(n.startswith("mma.sync") for n in
               (e.name for e in instruction_table(Target("nvidia", "sm_80", 32), {})))
    assert instruction_table(Target("nvidia", "sm_90", 32), {"tensor_cores": False}) == []


def test_pass_and_layout_by_name_in_the_dump(monkeypatch, capfd):
    monkeypatch.setenv("NAIAD_DUMP", "after:gpu/accelerate_matmul")
    naiad.compile(dot_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                  dict(M=64, N=64, K=32, P="ieee"), target="nvidia:sm_90")
    err = capfd.readouterr().err
    assert re.search(r"// ----- naiad IR after pass accelerate_matmul \(\d+/\d+, gpu\)", err)
    assert "nvidia.mma" in err and "#nvidia_mma<version = 2, warpsPerCTA = [4, 1]" in err
