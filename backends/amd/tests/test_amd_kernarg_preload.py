"""Kernel arguments preloaded into SGPRs (``inreg``) on gfx90a/gfx94x/gfx950, not elsewhere."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad_amd.archs import ARCHS
from naiad_amd.lowering.kernarg_preload import mark_kernel_args_inreg


def test_every_kernel_parameter_gets_inreg():
    src = ('define amdgpu_kernel void @"k"(ptr addrspace(1) %"x, y", ptr addrspace(1) noalias %"o", '
           'i32 %"n", <2 x float> %"v") #0\n{\nentry:\n  ret void\n}\n'
           'define internal float @"helper"(float %"a") {\n  ret float %"a"\n}\n')
    out = mark_kernel_args_inreg(src)
    head = out.splitlines()[0]
    assert head == ('define amdgpu_kernel void @"k"(ptr addrspace(1) inreg %"x, y", ptr addrspace(1) inreg noalias '
                    '%"o", i32 inreg %"n", <2 x float> inreg %"v") #0')
    assert 'define internal float @"helper"(float %"a")' in out  # device functions untouched
    assert mark_kernel_args_inreg(out) == out  # idempotent
    assert mark_kernel_args_inreg('define amdgpu_kernel void @"e"() #0\n') == 'define amdgpu_kernel void @"e"() #0\n'


@naiad.jit
def _scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)


def _body_after_prologue(asm: str) -> str:
    """The kernel after the compatibility prologue (which still s_loads for old firmware)."""
    body = asm[asm.index("_scale:"):asm.index(".Lfunc_end")]
    return body[body.index(".p2align"):] if ".p2align" in body else body


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx908"])
def test_preload_in_amdgcn(arch):
    k = naiad.compile(_scale, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32"},
                      constexprs={"BLOCK": 256}, target=f"amd:{arch}")
    asm = k.asm["amdgcn"]
    preload = int(re.search(r"\.amdhsa_user_sgpr_kernarg_preload_length\s+(\d+)", asm).group(1)) \
        if "kernarg_preload_length" in asm else 0
    if ARCHS[arch].kernarg_preload:
        assert " inreg " in k.asm["llir-opt"]
        assert preload == 6  # all four arguments: two pointers (2 SGPRs each), n and alpha (1 each)
        assert not re.search(r"s_load_dword\w*\s+s\[\d+:\d+\], s\[0:1\], 0x0", _body_after_prologue(asm))
    else:
        assert " inreg " not in k.asm["llir-opt"] and preload == 0
    # the launcher's view of the kernarg segment does not change
    assert [a["offset"] for a in k.metadata["args"]] == [0, 8, 16, 20]
