"""The debugging builtins on AMD: device_assert traps (debug mode), debug_barrier is
s_barrier; device_print (no hostcall printf in naiad's HIP runtime) and inline GCN assembly
(llvmlite's LLVM has no AMDGPU assembly parser) are clear errors naming the kernel line."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))

import naiad  # noqa: E402
from naiad.errors import CodegenError  # noqa: E402
import debug_kernels as dk  # noqa: E402


def _gcn(kernel, signature, constexprs):
    ck = naiad.compile(kernel, signature=signature, constexprs=constexprs, target="amd")
    assert bytes(ck.binary[:4]) == b"\x7fELF"
    return ck.asm["amdgcn"]


def test_device_assert_traps_in_debug_mode(monkeypatch):
    monkeypatch.setenv("NAIAD_DEBUG", "1")
    gcn = _gcn(dk.assert_kernel, "*i32,*i32,i32", {"N": 64, "MASKED": False})
    assert "s_trap" in gcn
    assert "s_barrier" in gcn


def test_inline_gcn_is_a_clear_error():
    # llvmlite's LLVM cannot assemble AMDGPU inline asm; an error naming the line, no abort
    with pytest.raises(CodegenError, match=r"debug_kernels.py:\d+: tl.inline_asm_elementwise "
                                           r"is not supported"):
        naiad.compile(dk.amd_asm_kernel, signature="*i32,*i32", constexprs={"N": 128},
                      target="amd")


def test_device_print_is_a_clear_error():
    with pytest.raises(CodegenError, match=r"debug_kernels.py:\d+.*device_print is not "
                                           r"supported"):
        naiad.compile(dk.print_kernel, signature="*fp32", constexprs={"N": 64, "HEX": False},
                      target="amd")
