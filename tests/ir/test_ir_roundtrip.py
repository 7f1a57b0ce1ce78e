"""Round trip of every op in the catalog: text -> parse -> verify -> print == text.

Each case is a small module written as the printer prints it. Besides the textual comparison,
the structure tests below check what the parser built (types, attribute Python types, name hints,
use-lists), so a parser and printer that agree on a wrong reading cannot hide behind each other.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from ir_testutil import kernel
from naiad.ir import (Builder, Function, Module, PointerType, TensorType, f16, f32, i1, i8, i32,
                      print_module, tensor)
from naiad.ir.parser import parse_module
from naiad.ir.verifier import verify

# (case name, module text). The ops each case covers are found by parsing it, and
# test_every_catalog_op_is_covered checks that together they cover the whole catalog.
CASES = [
    ("constant", kernel("", """
        %a = constant {value = 3} : i32
        %b = constant {value = -2.5} : f32
        %c = constant {value = true} : i1
        %d = constant {value = nan} : tensor<4x8xf32>
        %e = constant {value = -inf} : f64
        %f = constant {value = inf} : bf16
        %g = constant {value = 1e-07} : f16
        %h = constant {value = 255} : u8
        %i = constant {value = -9223372036854775808} : i64
        %j = constant {value = 1e+300} : f64
        %m = constant {value = 0} : tensor<2x2xptr<f32>>
        return
    """)),
    ("program_id and num_programs", kernel("", """
        %pid = program_id {axis = 0} : i32
        %n = num_programs {axis = 2} : i32
        return
    """)),
    ("make_range", kernel("", """
        %r = make_range {end = 136, start = 8} : tensor<128xi32>
        %one = make_range {end = 1, start = 0} : tensor<1xi32>
        return
    """)),
    ("splat", kernel("%x: f32, %p: ptr<f16>", """
        %t = splat %x : tensor<16x4xf32>
        %ps = splat %p : tensor<8xptr<f16>>
        return
    """)),
    ("broadcast and expand_dims", kernel("", """
        %r = make_range {end = 4, start = 0} : tensor<4xi32>
        %row = expand_dims %r {axis = 0} : tensor<1x4xi32>
        %col = expand_dims %r {axis = 1} : tensor<4x1xi32>
        %b = broadcast %row : tensor<8x4xi32>
        %c = broadcast %col : tensor<4x4xi32>
        return
    """)),
    ("reshape and trans", kernel("", """
        %r = make_range {end = 8, start = 0} : tensor<8xi32>
        %m = reshape %r : tensor<2x4xi32>
        %t = trans %m {order = [1, 0]} : tensor<4x2xi32>
        %cube = reshape %r {allow_reorder = false} : tensor<2x2x2xi32>
        %p = trans %cube {order = [2, 0, 1]} : tensor<2x2x2xi32>
        return
    """)),
    ("join and split", kernel("%a: tensor<4xf32>, %b: tensor<4xf32>", """
        %j = join %a, %b : tensor<4x2xf32>
        %lo, %hi = split %j : tensor<4xf32>, tensor<4xf32>
        %pair = make_range {end = 2, start = 0} : tensor<2xi32>
        %x, %y = split %pair : i32, i32
        return
    """)),
    ("hint", kernel("", """
        %r = make_range {end = 64, start = 0} : tensor<64xi32>
        %h = hint %r {contiguity = [64], divisibility = [16]} : tensor<64xi32>
        return
    """)),
    ("addptr, load, store", kernel("%p: ptr<f32> {divisibility = 16}, %n: i32", """
        %r = make_range {end = 4, start = 0} : tensor<4xi32>
        %ps = splat %p : tensor<4xptr<f32>>
        %q = addptr %ps, %r : tensor<4xptr<f32>>
        %ns = splat %n : tensor<4xi32>
        %m = cmp %r, %ns {pred = "lt"} : tensor<4xi1>
        %o = constant {value = 0.0} : tensor<4xf32>
        %v = load %q : tensor<4xf32>
        %v2 = load %q, %m : tensor<4xf32>
        %v3 = load %q, %m, %o {cache = ".ca", eviction = "evict_last", volatile = false} : tensor<4xf32>
        %s = load %p : f32
        %p1 = addptr %p, %n : ptr<f32>
        store %q, %v
        store %q, %v3, %m
        store %p1, %s {cache = ".wb"}
        return
    """)),
    ("atomics", kernel("%p: ptr<i32>, %f: ptr<f32>", """
        %r = make_range {end = 8, start = 0} : tensor<8xi32>
        %ps = splat %p : tensor<8xptr<i32>>
        %q = addptr %ps, %r : tensor<8xptr<i32>>
        %t = constant {value = true} : tensor<8xi1>
        %old = atomic_rmw %q, %r, %t {kind = "add", scope = "gpu", sem = "acq_rel"} : tensor<8xi32>
        %x = atomic_rmw %q, %r {kind = "xor"} : tensor<8xi32>
        %one = constant {value = 1.0} : f32
        %fm = atomic_rmw %f, %one {kind = "max"} : f32
        %zero = constant {value = 0} : i32
        %seven = constant {value = 7} : i32
        %c = atomic_cas %p, %zero, %seven : i32
        %seen = atomic_poll %q, %r {scope = "gpu", sem = "acquire"} : tensor<8xi1>
        %budget = constant {value = 0} : u64
        %once = atomic_poll %p, %seven, %budget {sem = "relaxed"} : i1
        return
    """)),
    ("arithmetic", kernel("%a: tensor<4xf32>, %b: tensor<4xf32>, %i: i32, %j: i32", """
        %0 = add %a, %b : tensor<4xf32>
        %1 = sub %a, %b : tensor<4xf32>
        %2 = mul %a, %b : tensor<4xf32>
        %3 = div %a, %b : tensor<4xf32>
        %4 = rem %a, %b : tensor<4xf32>
        %5 = max %a, %b {propagate_nan = true} : tensor<4xf32>
        %6 = min %a, %b : tensor<4xf32>
        %7 = neg %a : tensor<4xf32>
        %8 = div %i, %j : i32
        %9 = rem %i, %j : i32
        %10 = max %i, %j : i32
        %11 = neg %i : i32
        return
    """)),
    ("bitwise and shifts", kernel("%a: u32, %b: u32, %c: tensor<4xi1>, %d: tensor<4xi1>", """
        %and = and %a, %b : u32
        %or = or %a, %b : u32
        %xor = xor %a, %b : u32
        %shl = shl %a, %b : u32
        %shr = shr %a, %b : u32
        %not = not %a : u32
        %band = and %c, %d : tensor<4xi1>
        %bnot = not %c : tensor<4xi1>
        %hi = umulhi %a, %b : u32
        return
    """)),
    ("cmp and select", kernel("%a: tensor<2x2xf16>, %b: tensor<2x2xf16>, %p: ptr<i8>", """
        %eq = cmp %a, %b {pred = "eq"} : tensor<2x2xi1>
        %ne = cmp %a, %b {pred = "ne"} : tensor<2x2xi1>
        %lt = cmp %a, %b {pred = "lt"} : tensor<2x2xi1>
        %le = cmp %a, %b {pred = "le"} : tensor<2x2xi1>
        %gt = cmp %a, %b {pred = "gt"} : tensor<2x2xi1>
        %ge = cmp %a, %b {pred = "ge"} : tensor<2x2xi1>
        %pe = cmp %p, %p {pred = "eq"} : i1
        %s = select %lt, %a, %b : tensor<2x2xf16>
        return
    """)),
    ("cast and bitcast", kernel("%x: f32, %p: ptr<f32>, %b: i1, %h: u16", """
        %i = cast %x : i32
        %h2 = cast %b : f16
        %addr = cast %p : i64
        %back = cast %addr : ptr<f32>
        %q = cast %p : ptr<u8>
        %bits = bitcast %x : i32
        %bf = bitcast %h : bf16
        %hf = cast %x {fp_downcast_rounding = "rtne"} : f16
        return
    """)),
    ("math", kernel("%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>, %n: i32", """
        %0 = exp %x : tensor<4xf32>
        %1 = exp2 %x : tensor<4xf32>
        %2 = log %x : tensor<4xf32>
        %3 = log2 %x : tensor<4xf32>
        %4 = sqrt %x : tensor<4xf32>
        %5 = rsqrt %x : tensor<4xf32>
        %6 = sin %x : tensor<4xf32>
        %7 = cos %x : tensor<4xf32>
        %8 = erf %x : tensor<4xf32>
        %9 = floor %x : tensor<4xf32>
        %10 = ceil %x : tensor<4xf32>
        %11 = abs %x : tensor<4xf32>
        %12 = abs %n : i32
        %13 = fma %x, %y, %z : tensor<4xf32>
        %14 = sqrt_rn %x : tensor<4xf32>
        return
    """)),
    ("reduce", kernel("%x: tensor<4x8xf32>, %idx: tensor<4x8xi32>", """
        %s = reduce %x {axis = 1} : tensor<4xf32> {
        ^(%a: f32, %b: f32):
          %c = add %a, %b : f32
          yield %c
        }
        %mv, %mi = reduce %x, %idx {axis = 0} : tensor<8xf32>, tensor<8xi32> {
        ^(%av: f32, %ai: i32, %bv: f32, %bi: i32):
          %gt = cmp %bv, %av {pred = "gt"} : i1
          %v = select %gt, %bv, %av : f32
          %k = select %gt, %bi, %ai : i32
          yield %v, %k
        }
        %t = reduce %s {axis = 0} : f32 {
        ^(%a_1: f32, %b_1: f32):
          %m = max %a_1, %b_1 : f32
          yield %m
        }
        return
    """)),
    ("scan", kernel("%x: tensor<8x4xf32>", """
        %c = scan %x {axis = 0, reverse = false} : tensor<8x4xf32> {
        ^(%a: f32, %b: f32):
          %s = add %a, %b : f32
          yield %s
        }
        %r = scan %x {axis = 1, reverse = true} : tensor<8x4xf32> {
        ^(%a_1: f32, %b_1: f32):
          %p = mul %a_1, %b_1 : f32
          yield %p
        }
        return
    """)),
    ("dot", kernel("%a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %acc: tensor<16x32xf32>, "
                   "%ba: tensor<2x16x8xf32>, %bb: tensor<2x8x16xf32>, %bc: tensor<2x16x16xf32>", """
        %d = dot %a, %b, %acc {input_precision = "ieee"} : tensor<16x32xf32>
        %e = dot %a, %b, %d : tensor<16x32xf32>
        %f = dot %ba, %bb, %bc {input_precision = "tf32"} : tensor<2x16x16xf32>
        return
    """)),
    ("for", kernel("%n: i32, %x: f32", """
        %lb = constant {value = 0} : i32
        %st = constant {value = 1} : i32
        %s, %t = for %lb, %n, %st, %x, %x : f32, f32 {
        ^(%iv: i32, %a: f32, %b: f32):
          %c = add %a, %b : f32
          yield %c, %a
        }
        for %lb, %n, %st {
        ^(%j: i32):
          yield
        }
        %w = for %lb, %n, %st, %s {num_stages = 3} : f32 {
        ^(%i: i32, %acc: f32):
          %inner = for %lb, %i, %st, %acc : f32 {
          ^(%k: i32, %acc2: f32):
            %d = mul %acc2, %x : f32
            yield %d
          }
          yield %inner
        }
        return
    """)),
    ("while", kernel("%n: i32", """
        %zero = constant {value = 0} : i32
        %one = constant {value = 1} : i32
        %r = while %zero : i32 {
        ^(%i: i32):
          %c = cmp %i, %n {pred = "lt"} : i1
          condition %c, %i
        } {
        ^(%j: i32):
          %k = add %j, %one : i32
          yield %k
        }
        return
    """)),
    ("if", kernel("%c: i1, %a: f32, %b: f32, %p: ptr<f32>", """
        %r = if %c : f32 {
          %s = add %a, %b : f32
          yield %s
        } {
          yield %b
        }
        if %c {
          store %p, %r
          yield
        } {
          yield
        }
        %x, %y = if %c : f32, i32 {
          %one = constant {value = 1} : i32
          yield %a, %one
        } {
          %two = constant {value = 2} : i32
          yield %b, %two
        }
        return
    """)),
    ("call and return", kernel("%x: f32", """
        %r = call %x, %x {callee = "helper"} : f32
        %n = call {callee = "nothing"} : i32
        return %r
    """, results="f32", extra="""
        func @helper(%a: f32, %b: f32) -> (f32) attributes {kernel = false} {
          %c = mul %a, %b : f32
          return %c
        }
        func @nothing() -> (i32) {
          %z = constant {value = 0} : i32
          return %z
        }
    """)),
    ("tensor-descriptor accesses", kernel("%m: ptr<u8>, %r: i32, %c: i32, %p: ptr<f16>, "
                                          "%s: i64", """
        %d = descriptor_make %p, %r, %c, %s, %s {block = [64, 32], padding = "zero"} : ptr<u8>
        descriptor_access %d, %r, %c {access = 2, block = [64, 32], kind = "load", map = true}
        descriptor_access %m, %r, %c {access = 3, block = [64, 32], kind = "load", map = true}
        descriptor_access %r, %c {access = 4, block = [8, 16], kind = "store", portable = "why"}
        return
    """)),
    ("debugging and inline asm", kernel("%x: tensor<4xi32>, %c: tensor<4xi1>, %s: f32", """
        print %x, %s {hex = false, prefix = "x \\"q\\"\\n"}
        print {hex = true, prefix = ""}
        assert %c {message = "k.py:3: device_assert failed: x < 4"}
        debug_barrier
        assume %c
        %g = gather %x, %x {axis = 0} : tensor<4xi32>
        %h = histogram %x {num_bins = 8} : tensor<8xi32>
        %hm = histogram %x, %c {num_bins = 2} : tensor<2xi32>
        %y = inline_asm %x {asm = "mov.b32 $0, $1;", constraints = "=r,r", pack = 1, pure = true} : tensor<4xi32>
        %a, %b = inline_asm %x, %x {asm = "", constraints = "=r,=r,r,r", pack = 1, pure = false} : tensor<4xi32>, tensor<4xi32>
        return
    """)),
]

MORE_CASES = [
    ("module and argument attributes", kernel(
        "%x: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16, equal_to = 1}", """
        return
    """, module_attrs='num_warps = 4, target = "reference"')),
    ("attribute values", kernel("%x: i32", """
        %h = hint %x {a = [], b = [1, [2, 3], "s"], c = "quote \\" and newline \\n", d = none, e = !tensor<4xptr<f16>>, f = -7, g = -0.0, h = 1.5e+20, i = [inf, -inf, nan], "odd-key" = !ptr<i8, 3>} : i32
        return
    """)),
    ("numbered values and clashing hints", kernel("%0: f32, %x: f32", """
        %1 = add %0, %x : f32
        %x_1 = add %1, %0 : f32
        %x_2 = mul %x_1, %x_1 : f32
        %2 = sub %x_2, %1 : f32
        return
    """)),
    ("empty module", "module {\n}\n"),
    ("empty function", "module {\nfunc @f() {\n  return\n}\n}\n"),
]


def _ops_in(text: str) -> set[str]:
    module = parse_module(text)
    return {op.name for fn in module.functions.values() for op in fn.walk()}


@pytest.mark.parametrize("name,text", CASES + MORE_CASES, ids=[c[0] for c in CASES + MORE_CASES])
def test_round_trip(name, text):
    module = parse_module(text)
    verify(module)
    assert print_module(module) == text
    # printing what we parsed and parsing again is stable too
    again = parse_module(print_module(module))
    verify(again)
    assert print_module(again) == text


def test_every_catalog_op_is_covered():
    """The core catalog, read in a fresh interpreter (other tests may register extra ops)."""
    env = dict(os.environ)
    code = "import json; from naiad.ir.ops import OPS; print(json.dumps(sorted(OPS)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    catalog = set(json.loads(out))
    covered = set().union(*(_ops_in(t) for _, t in CASES))
    assert len(catalog) > 50
    assert catalog - covered == set(), f"ops without a round-trip case: {catalog - covered}"


# -- what the parser builds -------------------------------------------------------------------

def _case(name):
    return dict(CASES + MORE_CASES)[name]


def test_parsed_attribute_python_types():
    fn = parse_module(_case("attribute values")).functions["k"]
    attrs = fn.body.block.ops[0].attrs
    assert attrs["a"] == () and attrs["b"] == (1, (2, 3), "s")
    assert attrs["c"] == 'quote " and newline \n'
    assert attrs["d"] is None
    assert attrs["e"] == TensorType((4,), PointerType(f16))
    assert attrs["f"] == -7 and type(attrs["f"]) is int
    assert attrs["g"] == 0.0 and math.copysign(1.0, attrs["g"]) == -1.0
    assert attrs["h"] == 1.5e20 and type(attrs["h"]) is float
    inf, ninf, nan = attrs["i"]
    assert inf == math.inf and ninf == -math.inf and math.isnan(nan)
    assert attrs["odd-key"] == PointerType(i8, 3)


def test_parsed_constants_keep_int_float_bool_apart():
    ops = parse_module(_case("constant")).functions["k"].body.block.ops
    values = {op.results[0].name_hint: op.attrs["value"] for op in ops if op.name == "constant"}
    assert type(values["a"]) is int and values["a"] == 3
    assert type(values["b"]) is float and values["b"] == -2.5
    assert values["c"] is True
    assert math.isnan(values["d"])
    assert values["i"] == -(2 ** 63)
    assert ops[3].results[0].type == tensor([4, 8], f32)


def test_parsed_structure_of_a_loop():
    fn = parse_module(_case("for")).functions["k"]
    n, x = fn.args
    assert [a.name_hint for a in fn.args] == ["n", "x"]
    loop = fn.body.block.ops[2]
    assert loop.name == "for" and [r.name_hint for r in loop.results] == ["s", "t"]
    assert loop.operands[1] is n and loop.operands[3] is x and loop.operands[4] is x
    body = loop.regions[0].block
    assert [a.name_hint for a in body.args] == ["iv", "a", "b"]
    assert [a.type for a in body.args] == [i32, f32, f32]
    add, yld = body.ops
    assert add.operands == [body.args[1], body.args[2]]
    assert yld.operands == [add.results[0], body.args[1]]
    # use-lists are filled in: x is used twice by the loop and once inside the nested loop
    assert sorted(i for op, i in x.uses if op is loop) == [3, 4]
    assert len(x.uses) == 3
    assert loop.regions[0].parent is loop and body.parent is loop.regions[0]


def test_numbered_values_get_no_name_hint():
    fn = parse_module(_case("numbered values and clashing hints")).functions["k"]
    assert [a.name_hint for a in fn.args] == [None, "x"]
    assert [op.results[0].name_hint for op in fn.body.block.ops[:-1]] == [None, "x_1", "x_2",
                                                                          None]


def test_function_headers():
    m = parse_module(_case("call and return"))
    helper, k = m.functions["helper"], m.functions["k"]
    assert helper.result_types == [f32] and helper.attrs == {"kernel": False}
    assert k.attrs == {"kernel": True} and k.module is m
    m2 = parse_module(_case("module and argument attributes"))
    assert m2.attrs == {"num_warps": 4, "target": "reference"}
    assert m2.functions["k"].arg_attrs == [{"divisibility": 16},
                                           {"divisibility": 16, "equal_to": 1}]


def test_builder_ir_round_trips_through_text():
    """IR built with the Builder prints, parses back to the same text, and verifies."""
    fn = Function("vec_add", [PointerType(f32), PointerType(f32), i32], arg_names=["x", "y", "n"],
                  attrs={"kernel": True})
    fn.arg_attrs[0] = {"divisibility": 16}
    m = Module({"num_warps": np.int64(4)})  # numpy scalars print as plain numbers
    m.add(fn)
    b = Builder(fn.body.block)
    x, y, n = fn.args
    pid = b.op1("program_id", [], i32, axis=0)
    blk = b.constant(np.int32(64), i32)
    start = b.op1("mul", [pid, blk], i32)
    r = b.op1("make_range", [], tensor([64], i32), start=0, end=64)
    offs = b.op1("add", [b.op1("splat", [start], tensor([64], i32)), r], tensor([64], i32))
    mask = b.op1("cmp", [offs, b.op1("splat", [n], tensor([64], i32))], tensor([64], i1),
                 pred="lt")
    xp = b.op1("addptr", [b.op1("splat", [x], tensor([64], PointerType(f32))), offs],
               tensor([64], PointerType(f32)))
    v = b.op1("load", [xp, mask], tensor([64], f32))
    yp = b.op1("addptr", [b.op1("splat", [y], tensor([64], PointerType(f32))), offs],
               tensor([64], PointerType(f32)))
    b.create("store", [yp, b.op1("mul", [v, v], tensor([64], f32)), mask])
    b.create("return")
    verify(m)
    text = print_module(m)
    assert "num_warps = 4}" in text and "value = 64}" in text
    parsed = parse_module(text)
    verify(parsed)
    assert print_module(parsed) == text
    assert parsed.functions["vec_add"].arg_types == fn.arg_types
    assert [op.name for op in parsed.functions["vec_add"].walk()] == [op.name for op in fn.walk()]


def test_bare_functions_parse_without_module_wrapper():
    m = parse_module("func @f(%a: i32) -> (i32) {\n  return %a\n}\n")
    verify(m)
    assert list(m.functions) == ["f"] and m.attrs == {}
    assert print_module(m) == "module {\nfunc @f(%a: i32) -> (i32) {\n  return %a\n}\n}\n"


def test_comments_and_loose_spacing_are_accepted():
    text = ("// a comment\nmodule   {  // trailing\nfunc @f( %a : i32 ) -> ( i32 ) {\n"
            "      %b  =  add   %a ,%a  :  i32   // sum\n  return %b\n}\n}\n")
    m = parse_module(text)
    verify(m)
    assert print_module(m) == ("module {\nfunc @f(%a: i32) -> (i32) {\n  %b = add %a, %a : i32\n"
                               "  return %b\n}\n}\n")


def test_locations_print_and_parse_back():
    from naiad.ir.parser import parse_module
    from naiad.ir.printer import print_module

    text = ('module {\nfunc @f(%x: f32) {\n'
            '  %a = add %x, %x : f32 loc("/k \\"q\\".py":12:5)\n'
            '  return loc("k.py":13:3)\n}\n}\n')
    module = parse_module(text)
    ops = list(module.functions["f"].walk())
    assert ops[0].loc == ("/k \"q\".py", 12, 4) and ops[1].loc == ("k.py", 13, 2)
    assert print_module(module, locations=True) == text
    assert "loc(" not in print_module(module)
