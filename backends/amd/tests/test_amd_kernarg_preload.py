"""Kernel arguments preloaded into SGPRs (``inreg``) on gfx90a/gfx94x/gfx950, not elsewhere."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad_amd.archs import ARCHS


def test_preload_is_a_parameter_attribute_of_the_kernel_only():
    """``inreg`` reaches the kernel's parameters through LLVMAttributes (the core sets it on the
    llvmlite function), never by editing IR text."""
    from naiad.backend import Target
    from naiad_amd.options import llvm_attributes, make_options

    for arch in ("gfx942", "gfx1100"):
        t = Target("amd", arch, ARCHS[arch].wave_size)
        attrs = llvm_attributes(t, make_options(t, {}))
        assert attrs.parameter_attributes == (("inreg",) if ARCHS[arch].kernarg_preload else ())


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
