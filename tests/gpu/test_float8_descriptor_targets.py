"""float8 conversions, tensor descriptors and tl.dot_scaled compile to binaries for the real GPU
targets (cubin via nvJitLink, hsaco via ld.lld); their numerics are tested on the SIMT device."""
import os
import sys

import pytest

import naiad
import naiad.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
import descriptor_kernels as dk  # noqa: E402
import scaled_dot_kernels as sk  # noqa: E402

TARGETS = [("nvidia:sm_90", "cubin", "ptx"), ("amd:gfx942", "hsaco", "amdgcn")]


@naiad.jit
def convert_all(x_ptr, a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    a = x.to(tl.float8e4nv)
    tl.store(a_ptr + o, a)
    tl.store(b_ptr + o, a.to(tl.float64).to(tl.float8e5b16))
    tl.store(c_ptr + o, a.to(tl.bfloat16))


def _compile(fn, signature, constexprs, target):
    return naiad.compile(fn, signature=signature, constexprs=constexprs, target=target)


@pytest.mark.parametrize("target,binary,assembly", TARGETS)
def test_float8_conversions_compile(target, binary, assembly):
    k = _compile(convert_all, "*fp32,*fp8e4nv,*fp8e5b16,*bf16", {"N": 256}, target)
    assert k.asm[binary] and k.asm[assembly]
    assert " i8" in k.asm["llir"]          # float8 registers are bytes


@pytest.mark.parametrize("target,binary,assembly", TARGETS)
def test_descriptors_and_dot_scaled_compile(target, binary, assembly):
    k = _compile(dk.shifted_copy, "*fp32,*fp32,i32,i32,i32,i32", {"BM": 16, "BN": 16}, target)
    assert k.asm[binary]
    k = _compile(sk.scaled_dot, "*u8,*u8,*fp8e4nv,*u8,*fp32",
                 dict(M=32, N=32, K=64, FA="e2m1", FB="e4m3", KA=32, KB=64, SCALE_A=True,
                      SCALE_B=True), target)
    assert k.asm[binary]
