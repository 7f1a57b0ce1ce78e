"""cse, text in -> text out: merging, scoping by region dominance, and what must never merge."""
from __future__ import annotations

from passes_testutil import check, module_text, unchanged
from naiad.passes import cse

P = "%x: i32, %y: i32, %p: ptr<f32>"


def k(body, results="", params=P):
    return module_text(body, params, results)


def test_equal_pure_ops_merge():
    check(k("""
        %a = add %x, %y : i32
        %b = add %x, %y : i32
        %r = make_range {start = 0, end = 8} : tensor<8xi32>
        %s = make_range {start = 0, end = 8} : tensor<8xi32>
        %c1 = constant {value = 3} : i32
        %c2 = constant {value = 3} : i32
        return %a, %b, %r, %s, %c1, %c2
    """, "i32, i32, tensor<8xi32>, tensor<8xi32>, i32, i32"), cse, k("""
        %a = add %x, %y : i32
        %r = make_range {start = 0, end = 8} : tensor<8xi32>
        %c1 = constant {value = 3} : i32
        return %a, %a, %r, %r, %c1, %c1
    """, "i32, i32, tensor<8xi32>, tensor<8xi32>, i32, i32"))


def test_different_operands_attrs_or_types_do_not_merge():
    unchanged(k("""
        %a = add %x, %y : i32
        %b = add %y, %x : i32
        %c = cmp %x, %y {pred = "lt"} : i1
        %d = cmp %x, %y {pred = "le"} : i1
        %e = constant {value = 1} : i32
        %f = constant {value = 1} : i64
        %g = constant {value = 1.0} : f32
        %h = constant {value = -0.0} : f32
        %i = constant {value = 0.0} : f32
        return %a, %b, %c, %d, %e, %f, %g, %h, %i
    """, "i32, i32, i1, i1, i32, i64, f32, f32, f32"), cse)


def test_chains_merge_transitively():
    check(k("""
        %a = add %x, %y : i32
        %b = mul %a, %a : i32
        %c = add %x, %y : i32
        %d = mul %c, %c : i32
        return %b, %d
    """, "i32, i32"), cse, k("""
        %a = add %x, %y : i32
        %b = mul %a, %a : i32
        return %b, %b
    """, "i32, i32"))


def test_inner_region_reuses_outer_value():
    check(k("""
        %a = add %x, %y : i32
        %c = cmp %x, %y {pred = "lt"} : i1
        %r = if %c : i32 {
          %b = add %x, %y : i32
          yield %b
        } {
          yield %x
        }
        return %r
    """, "i32"), cse, k("""
        %a = add %x, %y : i32
        %c = cmp %x, %y {pred = "lt"} : i1
        %r = if %c : i32 {
          yield %a
        } {
          yield %x
        }
        return %r
    """, "i32"))


def test_sibling_regions_and_later_outer_ops_do_not_see_inner_values():
    unchanged(k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        %r = if %c : i32 {
          %a = add %x, %y : i32
          yield %a
        } {
          %b = add %x, %y : i32
          yield %b
        }
        %d = add %x, %y : i32
        return %r, %d
    """, "i32, i32"), cse)


def test_loop_body_reuses_outer_value():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %y, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %one = constant {value = 1} : i32
          %n = add %acc, %one : i32
          %m = add %acc, %one : i32
          %s = mul %n, %m : i32
          yield %s
        }
        return %r
    """, "i32"), cse, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %y, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %n = add %acc, %c1 : i32
          %s = mul %n, %n : i32
          yield %s
        }
        return %r
    """, "i32"))


def test_side_effecting_and_memory_ops_never_merge():
    unchanged(module_text("""
        %a = load %p : i32
        %b = load %p : i32
        %c = atomic_rmw %p, %a {kind = "add"} : i32
        %d = atomic_rmw %p, %a {kind = "add"} : i32
        %e = atomic_cas %p, %a, %b : i32
        %f = atomic_cas %p, %a, %b : i32
        store %p, %a
        store %p, %a
        %g = call %a {callee = "h"} : i32
        %h = call %a {callee = "h"} : i32
        return %b, %c, %d, %e, %f, %g, %h
    """, "%p: ptr<i32>", "i32, i32, i32, i32, i32, i32, i32", extra="""
        func @h(%v: i32) -> (i32) attributes {kernel = true} {
          return %v
        }
    """), cse)


REDUCE = """
        %{name} = reduce %t {{axis = 0}} : i32 {{
        ^(%a{n}: i32, %b{n}: i32):
          %s{n} = {combine} %a{n}, %b{n} : i32
          yield %s{n}
        }}"""


def test_reduces_with_equal_bodies_merge_and_different_bodies_stay():
    body = "%t = make_range {start = 0, end = 16} : tensor<16xi32>" + \
        REDUCE.format(name="r1", n=1, combine="add") + REDUCE.format(name="r2", n=2, combine="add") + \
        REDUCE.format(name="r3", n=3, combine="max") + "\nreturn %r1, %r2, %r3"
    want = "%t = make_range {start = 0, end = 16} : tensor<16xi32>" + \
        REDUCE.format(name="r1", n=1, combine="add") + REDUCE.format(name="r3", n=3, combine="max") + \
        "\nreturn %r1, %r1, %r3"
    check(k(body, "i32, i32, i32"), cse, k(want, "i32, i32, i32"))


def test_combine_regions_are_isolated_from_outer_values():
    unchanged(k("""
        %z = constant {value = 0} : i32
        %t = make_range {start = 0, end = 16} : tensor<16xi32>
        %r = reduce %t {axis = 0} : i32 {
        ^(%a: i32, %b: i32):
          %z2 = constant {value = 0} : i32
          %m = max %a, %z2 : i32
          %s = add %m, %b : i32
          yield %s
        }
        return %r, %z
    """, "i32, i32"), cse)
