"""Options shared with Triton's AMD backend: validation, LLVM attributes and their effect on code."""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from amd_testkit import amd_target
from naiad.errors import OptionError
from naiad_amd.options import SCHEDULE_HINTS, llvm_attributes, make_options


def test_defaults_are_tritons():
    o = make_options(amd_target("gfx942"), {})
    assert (o.kpack, o.matrix_instr_nonkdim, o.enable_fp_fusion, o.allow_flush_denorm, o.schedule_hint) == \
        (1, 0, True, False, "none")


@pytest.mark.parametrize("arch, opts", [
    ("gfx942", {"kpack": 2}), ("gfx942", {"matrix_instr_nonkdim": 16}), ("gfx942", {"matrix_instr_nonkdim": 32}),
    ("gfx90a", {"matrix_instr_nonkdim": 32}), ("gfx1100", {"matrix_instr_nonkdim": 16}),
    ("gfx942", {"enable_fp_fusion": False}), ("gfx942", {"allow_flush_denorm": True}),
    *[("gfx942", {"schedule_hint": h}) for h in SCHEDULE_HINTS],
])
def test_valid(arch, opts):
    o = make_options(amd_target(arch), opts)
    for k, v in opts.items():
        assert getattr(o, k) == v


@pytest.mark.parametrize("arch, opts, match", [
    ("gfx942", {"kpack": 3}, "kpack must be 1 or 2"),
    ("gfx942", {"kpack": True}, "kpack must be 1 or 2"),
    ("gfx942", {"matrix_instr_nonkdim": 8}, "matrix_instr_nonkdim must be one of 0, 16, 32 on gfx942"),
    ("gfx1100", {"matrix_instr_nonkdim": 32}, "matrix_instr_nonkdim must be one of 0, 16 on gfx1100"),
    ("gfx942", {"enable_fp_fusion": 1}, "enable_fp_fusion must be True or False"),
    ("gfx942", {"allow_flush_denorm": "yes"}, "allow_flush_denorm must be True or False"),
    ("gfx942", {"schedule_hint": "fast"}, "schedule_hint must be one of 'none', 'attention'"),
    ("gfx942", {"sched_hint": "attention"}, "unknown option 'sched_hint'"),
])
def test_invalid(arch, opts, match):
    with pytest.raises(OptionError, match=match):
        make_options(amd_target(arch), opts)


def test_empty_schedule_hint_is_none_and_gfx950_kpack_is_1():
    assert make_options(amd_target("gfx942"), {"schedule_hint": ""}).schedule_hint == "none"
    with pytest.warns(DeprecationWarning, match="kpack is deprecated from gfx950"):
        assert make_options(amd_target("gfx950"), {"kpack": 2}).kpack == 1


@pytest.mark.parametrize("flush, mode", [(False, "ieee,ieee"), (True, "preserve-sign,preserve-sign")])
def test_denormal_mode_follows_allow_flush_denorm(flush, mode):
    t = amd_target("gfx942")
    fn = llvm_attributes(t, make_options(t, {"allow_flush_denorm": flush, "waves_per_eu": 2})).function
    assert fn["denormal-fp-math-f32"] == mode
    assert fn["amdgpu-waves-per-eu"] == "2,2"


@naiad.jit
def _axpb(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(y_ptr + offs) + 1.5)


def _compile(fn, **opts):
    return naiad.compile(fn, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                         constexprs={"BLOCK": 256}, target="amd:gfx942", options=opts)


def test_fp_fusion_makes_fma_and_can_be_turned_off():
    fused = _compile(_axpb).asm
    assert re.search(r"fmul contract", fused["llir-opt"]) or "llvm.fma" in fused["llir-opt"]
    assert re.search(r"\bv_(pk_)?fma(c|k|mk|ak)?_f32\b", fused["amdgcn"])
    plain = _compile(_axpb, enable_fp_fusion=False).asm
    assert "contract" not in plain["llir-opt"]
    assert not re.search(r"\bv_(pk_)?fma(c|k|mk|ak)?_f32\b", plain["amdgcn"])
    assert re.search(r"\bv_(pk_)?mul_f32", plain["amdgcn"]) and re.search(r"\bv_(pk_)?add_f32", plain["amdgcn"])


@naiad.jit
def _div(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) / tl.load(y_ptr + offs))


def test_ieee_denormals_change_the_code():
    """IEEE denormals (the default) need the denormal-mode switching f32 division; flushing does not."""
    ieee_kernel, ftz_kernel = _compile(_div), _compile(_div, allow_flush_denorm=True)
    assert '"denormal-fp-math-f32"="ieee,ieee"' in ieee_kernel.asm["llir"]
    assert '"denormal-fp-math-f32"="preserve-sign,preserve-sign"' in ftz_kernel.asm["llir"]
    ieee, ftz = ieee_kernel.asm["amdgcn"], ftz_kernel.asm["amdgcn"]
    assert ".amdhsa_float_denorm_mode_32 3" in ieee
    assert ".amdhsa_float_denorm_mode_32 0" in ftz


def test_contraction_flags_only_arithmetic():
    from naiad_amd.toolchain import allow_fp_contraction

    src = ("%1 = fmul double %a, %b\n%2 = fadd fast float %x, %y\n"
           "%3 = atomicrmw fadd ptr %p, float 1.0 seq_cst\n%4 = fsub contract float %1, %2\n%5 = fdiv float %x, %y\n")
    assert allow_fp_contraction(src) == (
        "%1 = fmul contract double %a, %b\n%2 = fadd contract fast float %x, %y\n"
        "%3 = atomicrmw fadd ptr %p, float 1.0 seq_cst\n%4 = fsub contract float %1, %2\n%5 = fdiv float %x, %y\n")
