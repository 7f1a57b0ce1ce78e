"""GPU-IR passes as text in -> text out, and the GPU IR's print/parse round trip."""
import re

import pytest

from naiad.errors import IRError
from naiad.gpu.layouts import BlockedLayout, SliceLayout, linear_of
from naiad.gpu.passes import GPUPassContext, default_lowering_passes
from naiad.gpu.passes.allocate_shared import allocate_shared_memory
from naiad.gpu.passes.insert_barriers import insert_barriers
from naiad.gpu.passes.remove_conversions import remove_redundant_conversions
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.types import TensorType
from naiad.ir.verifier import verify

VECTOR_ADD = """
module {
func @add(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16}) attributes {kernel = true} {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 1024} : i32
  %2 = mul %0, %1 : i32
  %3 = make_range {end = 1024, start = 0} : tensor<1024xi32>
  %4 = splat %2 : tensor<1024xi32>
  %offs = add %4, %3 : tensor<1024xi32>
  %5 = splat %n : tensor<1024xi32>
  %m = cmp %offs, %5 {pred = "lt"} : tensor<1024xi1>
  %6 = splat %out : tensor<1024xptr<f32>>
  %7 = addptr %6, %offs : tensor<1024xptr<f32>>
  %8 = splat %x : tensor<1024xptr<f32>>
  %9 = addptr %8, %offs : tensor<1024xptr<f32>>
  %10 = load %9, %m : tensor<1024xf32>
  %11 = splat %y : tensor<1024xptr<f32>>
  %12 = addptr %11, %offs : tensor<1024xptr<f32>>
  %13 = load %12, %m : tensor<1024xf32>
  %14 = add %10, %13 : tensor<1024xf32>
  store %7, %14, %m
  return
}
}
"""

REDUCE_COLS = """
module {
func @cols(%x_ptr: ptr<f32>, %out_ptr: ptr<f32>, %stride: i32) attributes {kernel = true} {
  %rm = make_range {end = 64, start = 0} : tensor<64xi32>
  %rn = make_range {end = 16, start = 0} : tensor<16xi32>
  %0 = expand_dims %rm {axis = 1} : tensor<64x1xi32>
  %1 = splat %stride : tensor<64x1xi32>
  %2 = mul %0, %1 : tensor<64x1xi32>
  %3 = splat %x_ptr : tensor<64x1xptr<f32>>
  %4 = addptr %3, %2 : tensor<64x1xptr<f32>>
  %5 = expand_dims %rn {axis = 0} : tensor<1x16xi32>
  %6 = broadcast %4 : tensor<64x16xptr<f32>>
  %7 = broadcast %5 : tensor<64x16xi32>
  %8 = addptr %6, %7 : tensor<64x16xptr<f32>>
  %x = load %8 : tensor<64x16xf32>
  %r = reduce %x {axis = 0} : tensor<16xf32> {
  ^(%9: f32, %10: f32):
    %11 = add %9, %10 : f32
    yield %11
  }
  %12 = splat %out_ptr : tensor<16xptr<f32>>
  %13 = addptr %12, %rn : tensor<16xptr<f32>>
  store %13, %r
  return
}
}
"""


def ctx(warp=32, warps=4):
    return GPUPassContext(pipeline="gpu", num_warps=warps, warp_size=warp)


def run_default(text, warp=32, warps=4):
    module = parse_module(text)
    c = ctx(warp, warps)
    for p in default_lowering_passes():
        p(module, c)
    verify(module)
    return module


def layouts_in(module):
    out = set()
    for fn in module.functions.values():
        for op in fn.walk():
            for r in op.results:
                if isinstance(r.type, TensorType):
                    out.add(r.type.layout)
    return out


def ops_named(module, name):
    return [op for fn in module.functions.values() for op in fn.walk() if op.name == name]


@pytest.mark.parametrize("warp", [32, 64])
def test_vector_add_gets_one_coalesced_vectorized_layout(warp):
    module = run_default(VECTOR_ADD, warp)
    assert layouts_in(module) == {BlockedLayout((4,), (warp,), (4,), (0,))}
    assert [op.attrs["vec"] for op in ops_named(module, "load")] == [4, 4]
    assert ops_named(module, "store")[0].attrs["vec"] == 4
    assert not ops_named(module, "convert_layout")
    assert module.functions["add"].attrs["shared"] == 0


def test_unaligned_pointer_is_not_vectorized():
    text = VECTOR_ADD.replace("%x: ptr<f32> {divisibility = 16}", "%x: ptr<f32>")
    module = run_default(text)
    loads = ops_named(module, "load")
    assert loads[0].attrs["vec"] == 1 and loads[1].attrs["vec"] == 4
    # each load keeps its own layout; the sum converts one operand through shared memory
    lay0 = loads[0].results[0].type.layout
    assert lay0.size_per_thread == (1,)


def test_reduce_result_is_a_slice_and_expand_dims_takes_slices():
    module = run_default(REDUCE_COLS)
    [red] = ops_named(module, "reduce")
    src = red.operands[0].type.layout
    assert red.results[0].type.layout == SliceLayout(0, src)
    for op in ops_named(module, "expand_dims"):
        lay = op.operands[0].type.layout
        assert isinstance(lay, SliceLayout) and lay.dim == op.attrs["axis"]
        assert lay.parent == op.results[0].type.layout
    # the rows are reduced across warps: one scratch buffer
    assert red.attrs["scratch"] == module.functions["cols"].attrs["shared"] > 0


def test_gpu_ir_round_trips_and_verifies():
    module = run_default(REDUCE_COLS)
    text = print_module(module)
    again = parse_module(text)
    verify(again)
    assert print_module(again) == text
    assert "#blocked<" in text and "#slice<" in text


CONVERTS = """
module {
func @k(%p: ptr<f32>) attributes {kernel = true} {
  %0 = make_range {end = 128, start = 0} : tensor<128xi32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %1 = convert_layout %0 : tensor<128xi32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %2 = convert_layout %1 : tensor<128xi32, #blocked<sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>
  %3 = convert_layout %2 : tensor<128xi32, #blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %4 = splat %p : tensor<128xptr<f32>, #blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %5 = addptr %4, %3 : tensor<128xptr<f32>, #blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %6 = load %5 : tensor<128xf32, #blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %7 = convert_layout %6 : tensor<128xf32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %8 = splat %p : tensor<128xptr<f32>, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %9 = addptr %8, %0 : tensor<128xptr<f32>, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  store %9, %7
  return
}
}
"""


def test_remove_redundant_conversions():
    module = parse_module(CONVERTS)
    assert remove_redundant_conversions(module, ctx())
    verify(module)
    text = print_module(module)
    # the chain of conversions of a range became a range made in the wanted layout,
    # the loaded data (not rematerialisable) keeps its one conversion
    cvts = ops_named(module, "convert_layout")
    assert len(cvts) == 1 and cvts[0].operands[0].defining_op.name == "load"
    ranges = ops_named(module, "make_range")
    assert {r.results[0].type.layout.size_per_thread for r in ranges} == {(1,), (2,)}
    assert text.count("make_range") == 2


LOOP = """
module {
func @k(%p: ptr<f32>, %n: i32) attributes {kernel = true} {
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %0 = make_range {end = 128, start = 0} : tensor<128xi32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %4 = splat %p : tensor<128xptr<f32>, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %5 = addptr %4, %0 : tensor<128xptr<f32>, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %6 = load %5 : tensor<128xf32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  %r = for %c0, %n, %c1, %6 : tensor<128xf32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>> {
  ^(%i: i32, %acc: tensor<128xf32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>):
    %7 = convert_layout %acc : tensor<128xf32, #blocked<sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>
    %8 = convert_layout %7 : tensor<128xf32, #blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
    yield %8
  }
  %s = reduce %r {axis = 0} : f32 {
  ^(%a: f32, %b: f32):
    %c = add %a, %b : f32
    yield %c
  }
  store %p, %s
  return
}
}
"""


def test_allocation_and_barriers():
    module = parse_module(LOOP)
    c = ctx()
    allocate_shared_memory(module, c)
    insert_barriers(module, c)
    verify(module)
    fn = module.functions["k"]
    assert fn.attrs["shared"] == 128 * 4
    text = print_module(fn.module)
    body = text[text.index("for "):text.index("yield")]
    # inside the loop: a barrier before each conversion (the previous user's reads may be
    # pending: the other conversion, or the last iteration's)
    assert body.count("barrier") == 2
    lines = [ln.strip() for ln in body.splitlines()]
    for i, ln in enumerate(lines):
        if "convert_layout" in ln:
            assert lines[i - 1] == "barrier"
    # after the loop: one barrier before the reduction's scratch use
    after = text[text.index("yield"):]
    assert re.search(r"barrier\s*\n\s*%s = reduce", after)
    assert module.functions["k"].attrs["shared"] >= 16


def test_no_barrier_before_the_first_user():
    module = run_default(REDUCE_COLS)
    assert not ops_named(module, "barrier")


def test_calls_must_be_inlined():
    text = """
module {
func @f(%x: i32) -> (i32) attributes {kernel = false} {
  return %x
}
func @k(%x: i32) attributes {kernel = true} {
  %0 = call %x {callee = "f"} : i32
  return
}
}
"""
    with pytest.raises(IRError, match="inlined"):
        run_default(text)


def test_scan_gets_an_ordered_layout_and_split_a_register_pair():
    text = """
module {
func @k(%p: ptr<i32>) attributes {kernel = true} {
  %0 = make_range {end = 512, start = 0} : tensor<512xi32>
  %1 = scan %0 {axis = 0, reverse = false} : tensor<512xi32> {
  ^(%a: i32, %b: i32):
    %c = add %a, %b : i32
    yield %c
  }
  %2 = reshape %1 : tensor<256x2xi32>
  %3, %4 = split %2 : tensor<256xi32>, tensor<256xi32>
  %5 = add %3, %4 : tensor<256xi32>
  %6 = splat %p : tensor<256xptr<i32>>
  %7 = make_range {end = 256, start = 0} : tensor<256xi32>
  %8 = addptr %6, %7 : tensor<256xptr<i32>>
  store %8, %5
  return
}
}
"""
    module = run_default(text)
    [scan] = ops_named(module, "scan")
    ll = linear_of(scan.operands[0].type.layout, (512,))
    assert ll.is_bijective()
    [split] = ops_named(module, "split")
    assert split.attrs.get("scratch") is None  # the pair sits in one thread's registers


ACCUMULATE = """
module {
func @acc(%x: ptr<f16> {divisibility = 16}, %out: ptr<f32>, %n: i32 {divisibility = 16}) attributes {kernel = true} {
  %c0 = constant {value = 0} : i32
  %c1024 = constant {value = 1024} : i32
  %zero = constant {value = 0.0} : tensor<1024xf32>
  %fzero = constant {value = 0.0} : tensor<1024xf16>
  %r = make_range {end = 1024, start = 0} : tensor<1024xi32>
  %xs = splat %x : tensor<1024xptr<f16>>
  %ns = splat %n : tensor<1024xi32>
  %acc = for %c0, %n, %c1024, %zero : tensor<1024xf32> {
  ^(%off: i32, %a: tensor<1024xf32>):
    %s = splat %off : tensor<1024xi32>
    %cols = add %s, %r : tensor<1024xi32>
    %m = cmp %cols, %ns {pred = "lt"} : tensor<1024xi1>
    %p = addptr %xs, %cols : tensor<1024xptr<f16>>
    %v = load %p, %m, %fzero : tensor<1024xf16>
    %f = cast %v : tensor<1024xf32>
    %a2 = add %a, %f : tensor<1024xf32>
    yield %a2
  }
  %sum = reduce %acc {axis = 0} : f32 {
  ^(%u: f32, %w: f32):
    %t = add %u, %w : f32
    yield %t
  }
  store %out, %sum
  return
}
}
"""


def test_loop_carried_accumulator_takes_the_loaded_layout():
    """The accumulator's initial zeros have no anchor; it must follow the tiles it sums
    rather than convert every tile (two barriers per iteration) to a default layout."""
    module = run_default(ACCUMULATE, warps=8)
    assert not ops_named(module, "convert_layout")
    [loop] = ops_named(module, "for")
    [load] = ops_named(module, "load")
    assert loop.results[0].type.layout == load.results[0].type.layout
    assert load.attrs["vec"] == 4 and load.results[0].type.layout.size_per_thread == (4,)


DOT = """
module {
func @mm(%a: ptr<f32> {divisibility = 16}, %b: ptr<f32> {divisibility = 16}, %c: ptr<f32> {divisibility = 16}) attributes {kernel = true} {
  %rm = make_range {end = 64, start = 0} : tensor<64xi32>
  %rk = make_range {end = 32, start = 0} : tensor<32xi32>
  %c32 = constant {value = 32} : tensor<64x1xi32>
  %c64 = constant {value = 64} : tensor<32x1xi32>
  %m1 = expand_dims %rm {axis = 1} : tensor<64x1xi32>
  %k0 = expand_dims %rk {axis = 0} : tensor<1x32xi32>
  %ma = mul %m1, %c32 : tensor<64x1xi32>
  %mab = broadcast %ma : tensor<64x32xi32>
  %kab = broadcast %k0 : tensor<64x32xi32>
  %aoff = add %mab, %kab : tensor<64x32xi32>
  %as = splat %a : tensor<64x32xptr<f32>>
  %ap = addptr %as, %aoff : tensor<64x32xptr<f32>>
  %av = load %ap : tensor<64x32xf32>
  %k1 = expand_dims %rk {axis = 1} : tensor<32x1xi32>
  %kb = mul %k1, %c64 : tensor<32x1xi32>
  %n0 = expand_dims %rm {axis = 0} : tensor<1x64xi32>
  %kbb = broadcast %kb : tensor<32x64xi32>
  %nbb = broadcast %n0 : tensor<32x64xi32>
  %boff = add %kbb, %nbb : tensor<32x64xi32>
  %bs = splat %b : tensor<32x64xptr<f32>>
  %bp = addptr %bs, %boff : tensor<32x64xptr<f32>>
  %bv = load %bp : tensor<32x64xf32>
  %z = constant {value = 0.0} : tensor<64x64xf32>
  %d = dot %av, %bv, %z : tensor<64x64xf32>
  %cm = mul %m1, %c32 : tensor<64x1xi32>
  %cmb = broadcast %cm : tensor<64x64xi32>
  %cnb = broadcast %n0 : tensor<64x64xi32>
  %coff = add %cmb, %cnb : tensor<64x64xi32>
  %cs = splat %c : tensor<64x64xptr<f32>>
  %cp = addptr %cs, %coff : tensor<64x64xptr<f32>>
  store %cp, %d
  return
}
}
"""


def test_dot_reads_its_operands_from_shared_memory():
    module = run_default(DOT)
    [dot] = ops_named(module, "dot")
    # the operands keep their coalesced load layouts: no conversion materialises them
    assert dot.operands[0].defining_op.name == "load"
    assert dot.operands[1].defining_op.name == "load"
    assert dot.attrs["scratch"] == (64 * 32 + 32 * 64) * 4
    assert module.functions["mm"].attrs["shared"] >= dot.attrs["scratch"]
