"""Pass ``optimize_epilogue`` (IR text): a store of an MFMA accumulator converted to a blocked
layout becomes a store from the MFMA layout, its addresses recomputed there."""
from __future__ import annotations

import re

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad.gpu.layouts import register_layout
from naiad_amd.ir.matrix_layouts import LAYOUTS
from naiad_amd.passes.optimize_epilogue import optimize_epilogue

MFMA = "#amd_mfma<version = 3, warpsPerCTA = [1, 1], instrShape = [32, 32, 8], isTransposed = true>"
BL = "#blocked<sizePerThread = [1, 4], threadsPerWarp = [8, 8], warpsPerCTA = [1, 1], order = [1, 0]>"


def _ir(pointer_source: str) -> str:
    return f"""module {{
func @epi(%c_ptr: ptr<f32> {{divisibility = 16}}, %q_ptr: ptr<ptr<f32>> {{divisibility = 16}}) attributes {{kernel = true}} {{
  %acc = constant {{value = 1.5}} : tensor<32x32xf32, {MFMA}>
  %r = make_range {{end = 32, start = 0}} : tensor<32xi32, #slice<dim = 1, parent = {BL}>>
  %c = make_range {{end = 32, start = 0}} : tensor<32xi32, #slice<dim = 0, parent = {BL}>>
  %r2 = expand_dims %r {{axis = 1}} : tensor<32x1xi32, {BL}>
  %c2 = expand_dims %c {{axis = 0}} : tensor<1x32xi32, {BL}>
  %k = constant {{value = 32}} : tensor<32x1xi32, {BL}>
  %rs = mul %r2, %k : tensor<32x1xi32, {BL}>
  %rb = broadcast %rs : tensor<32x32xi32, {BL}>
  %cb = broadcast %c2 : tensor<32x32xi32, {BL}>
  %off = add %rb, %cb : tensor<32x32xi32, {BL}>
  %lim = constant {{value = 1000}} : tensor<32x32xi32, {BL}>
  %m = cmp %off, %lim {{pred = "lt"}} : tensor<32x32xi1, {BL}>
{pointer_source}
  %v = convert_layout %acc : tensor<32x32xf32, {BL}>
  store %p, %v, %m {{vec = 4}}
  return
}}
}}
"""


COMPUTED = f"""  %p0 = splat %c_ptr : tensor<32x32xptr<f32>, {BL}>
  %p = addptr %p0, %off : tensor<32x32xptr<f32>, {BL}>"""
LOADED = f"""  %q0 = splat %q_ptr : tensor<32x32xptr<ptr<f32>>, {BL}>
  %q = addptr %q0, %off : tensor<32x32xptr<ptr<f32>>, {BL}>
  %p = load %q : tensor<32x32xptr<f32>, {BL}>"""


def _parse(text):
    for cls in LAYOUTS:  # #amd_mfma, as the plugin's naiad_layouts hook registers it
        register_layout(cls)
    return parse_module(text)


def test_store_moves_to_the_accumulator_layout():
    module = _parse(_ir(COMPUTED))
    assert optimize_epilogue(module) is True
    verify(module)
    text = print_module(module)
    assert "convert_layout" not in text
    store = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith("store"))
    assert store.startswith("store ") and ", %acc, " in store
    # the pointer and mask are recomputed in the MFMA layout (make_range in its slices)
    assert f"tensor<32x32xptr<f32>, {MFMA}>" in text
    assert f"tensor<32x32xi1, {MFMA}>" in text
    assert f"#slice<dim = 1, parent = {MFMA}>" in text
    # the MFMA accumulator's registers run along N (transposed): vec 4 still applies
    assert "{vec = 4}" in store
    assert print_module(parse_module(text)) == text
    assert optimize_epilogue(module) is False  # nothing left to do


def test_loaded_pointers_are_left_alone():
    module = _parse(_ir(LOADED))
    before = print_module(module)
    assert optimize_epilogue(module) is False
    assert print_module(module) == before


@naiad.jit
def _tile_store(c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(c_ptr + rm[:, None] * BK + rk[None, :]).to(tl.float16)
    b = tl.load(c_ptr + rk[:, None] * BN + rn[None, :]).to(tl.float16)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def test_compiled_epilogue_has_no_lds_round_trip():
    """gfx942: the dot's accumulator is stored straight from its #amd_mfma registers."""
    k = naiad.compile(_tile_store, signature={"c_ptr": "*fp32"},
                      constexprs=dict(BM=64, BN=64, BK=32), target="amd:gfx942")
    gpu = k.asm["gpu"]
    # a plain store, or (gfx942 has buffer ops) amd.buffer_store %base, %offsets, %value
    store = next(ln for ln in gpu.splitlines()
                 if ln.strip().startswith(("store", "amd.buffer_store")))
    m = (re.match(r"\s*amd\.buffer_store %[\w.]+, %[\w.]+, (%[\w.]+)", store)
         or re.match(r"\s*store %[\w.]+, (%[\w.]+)", store))
    value = m.group(1)
    producer = next(ln for ln in gpu.splitlines() if ln.strip().startswith(value + " ="))
    assert "matrix_mma" in producer and "amd_mfma" in producer
