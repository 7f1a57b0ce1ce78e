"""inline, text in -> text out: device functions disappear into their callers; errors for what
cannot be inlined."""
from __future__ import annotations

import pytest

from passes_testutil import check, module_text, run_passes
from naiad.errors import IRError
from naiad.ir.parser import parse_module
from naiad.passes import inline

SCALE = """
func @scale(%v: f32, %s: f32) -> (f32) attributes {kernel = false} {
  %m = mul %v, %s : f32
  %a = add %m, %v : f32
  return %a
}
"""


def test_call_is_inlined_and_callee_dropped():
    src = module_text("""
        %v = load %p : f32
        %r = call %v, %s {callee = "scale"} : f32
        store %p, %r
        return
    """, "%p: ptr<f32>, %s: f32", extra=SCALE)
    check(src, inline, module_text("""
        %v = load %p : f32
        %m = mul %v, %s : f32
        %a = add %m, %v : f32
        store %p, %a
        return
    """, "%p: ptr<f32>, %s: f32"))


def test_two_calls_give_two_independent_copies():
    src = module_text("""
        %r1 = call %x, %y {callee = "scale"} : f32
        %r2 = call %r1, %x {callee = "scale"} : f32
        return %r2
    """, "%x: f32, %y: f32", "f32", extra=SCALE)
    check(src, inline, module_text("""
        %m = mul %x, %y : f32
        %a = add %m, %x : f32
        %m_1 = mul %a, %x : f32
        %a_1 = add %m_1, %a : f32
        return %a_1
    """, "%x: f32, %y: f32", "f32"))


def test_call_chains_loops_and_multiple_results():
    extra = """
    func @inner(%v: i32) -> (i32, i32) attributes {kernel = false} {
      %c0 = constant {value = 0} : i32
      %c1 = constant {value = 1} : i32
      %s, %t = for %c0, %v, %c1, %c0, %c1 : i32, i32 {
      ^(%i: i32, %a: i32, %b: i32):
        %a2 = add %a, %i : i32
        %b2 = mul %b, %v : i32
        yield %a2, %b2
      }
      return %s, %t
    }
    func @outer(%v: i32) -> (i32) attributes {kernel = false} {
      %s, %t = call %v {callee = "inner"} : i32, i32
      %u = sub %s, %t : i32
      return %u
    }
    """
    src = module_text("""
        %r = call %x {callee = "outer"} : i32
        return %r
    """, "%x: i32", "i32", extra=extra)
    module, got = run_passes(src, inline)
    assert list(module.functions) == ["k"]
    assert "call" not in got
    ops = [op.name for op in module.functions["k"].walk()]
    assert ops == ["constant", "constant", "for", "add", "mul", "yield", "sub", "return"]
    loop = module.functions["k"].body.block.ops[2]
    assert loop.operands[1] is module.functions["k"].args[0]  # the callee arg became %x


def test_calls_in_nested_regions_are_inlined():
    extra = """
    func @combine(%a: i32, %b: i32) -> (i32) attributes {kernel = false} {
      %m = max %a, %b : i32
      return %m
    }
    """
    src = module_text("""
        %t = make_range {start = 0, end = 16} : tensor<16xi32>
        %r = reduce %t {axis = 0} : i32 {
        ^(%a: i32, %b: i32):
          %c = call %a, %b {callee = "combine"} : i32
          yield %c
        }
        return %r
    """, "", "i32", extra=extra)
    check(src, inline, module_text("""
        %t = make_range {start = 0, end = 16} : tensor<16xi32>
        %r = reduce %t {axis = 0} : i32 {
        ^(%a: i32, %b: i32):
          %m = max %a, %b : i32
          yield %m
        }
        return %r
    """, "", "i32"))


def test_kernel_callees_and_uncalled_device_functions_stay():
    src = module_text("""
        %r = call %x {callee = "other"} : i32
        return %r
    """, "%x: i32", "i32", extra="""
    func @other(%v: i32) -> (i32) attributes {kernel = true} {
      return %v
    }
    func @helper(%v: i32) -> (i32) attributes {kernel = false} {
      return %v
    }
    """)
    module, got = run_passes(src, inline)
    assert set(module.functions) == {"k", "other", "helper"}
    assert 'call %x {callee = "other"}' in got


def test_recursion_is_an_error():
    m = parse_module(module_text("""
        %r = call %x {callee = "f"} : i32
        return %r
    """, "%x: i32", "i32", extra="""
    func @f(%v: i32) -> (i32) attributes {kernel = false} {
      %r = call %v {callee = "g"} : i32
      return %r
    }
    func @g(%v: i32) -> (i32) attributes {kernel = false} {
      %r = call %v {callee = "f"} : i32
      return %r
    }
    """))
    with pytest.raises(IRError, match=r"recursive.*f -> g -> f"):
        inline(m)


def test_unknown_callee_and_signature_mismatch_are_errors():
    m = parse_module(module_text("""
        %r = call %x {callee = "missing"} : i32
        return %r
    """, "%x: i32", "i32"))
    with pytest.raises(IRError, match="unknown function @missing"):
        inline(m)
    m = parse_module(module_text("""
        %r = call %x {callee = "scale"} : f32
        return %r
    """, "%x: f32", "f32", extra=SCALE))
    with pytest.raises(IRError, match="passes 1 arguments to @scale, which takes 2"):
        inline(m)
    m = parse_module(module_text("""
        %r = call %x, %x {callee = "scale"} : f32
        return %r
    """, "%x: i32", "f32", extra=SCALE))
    with pytest.raises(IRError, match="passes i32 for @scale's argument of type f32"):
        inline(m)
