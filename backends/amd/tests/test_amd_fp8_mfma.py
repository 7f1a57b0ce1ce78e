"""fp8 MFMA rows (issue #10): pass ``fold_fp8_upcasts`` (IR text) and the instructions in the
code objects; execution on the simulator is tests/gpu/test_fp8_mfma_simt.py."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad_amd.ir.matrix_table import instruction_table
from naiad_amd.passes.fold_fp8_upcasts import fold_fp8_upcasts


@naiad.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def _compile(sig, arch, k=64, **options):
    return naiad.compile(fp8_dot, signature={"a_ptr": f"*{sig}", "b_ptr": f"*{sig}",
                                             "c_ptr": "*fp32"},
                         constexprs=dict(M=64, N=64, K=k), target=f"amd:{arch}", options=options)


def _tile(sig, k=64):
    return parse_module(_compile(sig, "gfx90a", k).asm["tile"])  # frontend output, casts in


def test_pass_drops_the_widening_casts_when_a_row_serves():
    module = _tile("fp8e4b8")
    assert print_module(module).count(" = cast ") == 2
    assert fold_fp8_upcasts(module, table=instruction_table("gfx942")) is True
    verify(module)
    text = print_module(module)
    assert " = cast " not in text
    assert re.search(r"= dot %a, %b, %\w+ \{input_precision = \"ieee\"\} : tensor<64x64xf32>",
                     text)
    assert fold_fp8_upcasts(module, table=instruction_table("gfx942")) is False


@pytest.mark.parametrize("sig, arch, k", [("fp8e4nv", "gfx942", 64),   # gfx942: fnuz only
                                          ("fp8e4b8", "gfx950", 64),   # gfx950: OCP only
                                          ("fp8e4b8", "gfx942", 8),    # K not tiled by 16
                                          ("fp8e4b8", "gfx90a", 64)])  # no fp8 rows
def test_pass_keeps_casts_no_row_serves(sig, arch, k):
    module = _tile(sig, k)
    before = print_module(module)
    assert fold_fp8_upcasts(module, table=instruction_table(arch)) is False
    assert print_module(module) == before


@pytest.mark.parametrize("sig, arch, options, mnemonic", [
    ("fp8e4b8", "gfx942", {}, "v_mfma_f32_32x32x16_fp8_fp8"),
    ("fp8e5b16", "gfx942", {}, "v_mfma_f32_32x32x16_bf8_bf8"),
    ("fp8e4b8", "gfx942", {"matrix_instr_nonkdim": 16}, "v_mfma_f32_16x16x32_fp8_fp8"),
    ("fp8e5b16", "gfx942", {"matrix_instr_nonkdim": 16}, "v_mfma_f32_16x16x32_bf8_bf8"),
    ("fp8e4nv", "gfx950", {}, "v_mfma_f32_32x32x16_fp8_fp8"),
    ("fp8e5", "gfx950", {}, "v_mfma_f32_32x32x16_bf8_bf8"),
])
def test_code_object_uses_the_fp8_mfma(sig, arch, options, mnemonic):
    k = _compile(sig, arch, **options)
    assert set(re.findall(r"^\s*(v_mfma\w+)", k.asm["amdgcn"], re.M)) == {mnemonic}
    assert " = cast " not in k.asm["gpu"]
    # half the LDS of the f16 path: fp8 operands are staged as bytes
    assert k.metadata["shared"] == (64 * 64 + 64 * 64)
