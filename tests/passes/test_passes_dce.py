"""dce, text in -> text out: dead pure ops and loads, dead loop-carried values, empty/unused ifs,
and everything with an effect staying."""
from __future__ import annotations

from passes_testutil import check, module_text, unchanged
from naiad.passes import dce

P = "%x: i32, %y: i32, %p: ptr<i32>"


def k(body, results="", params=P):
    return module_text(body, params, results)


def test_unused_pure_ops_and_loads_go():
    check(k("""
        %a = add %x, %y : i32
        %b = mul %a, %a : i32
        %r = make_range {start = 0, end = 8} : tensor<8xi32>
        %s = splat %x : tensor<8xi32>
        %t = add %r, %s : tensor<8xi32>
        %v = load %p : i32
        %u = add %x, %x : i32
        return %u
    """, "i32"), dce, k("""
        %u = add %x, %x : i32
        return %u
    """, "i32"))


def test_effects_stay_even_when_unused():
    unchanged(k("""
        store %p, %x
        %o = atomic_rmw %p, %x {kind = "add"} : i32
        %c = atomic_cas %p, %x, %y : i32
        return
    """), dce)


def test_calls_stay():
    src = module_text("""
        %r = call %x {callee = "h"} : i32
        return
    """, P, extra="""
        func @h(%v: i32) -> (i32) attributes {kernel = true} {
          return %v
        }
    """)
    unchanged(src, dce)


def test_dead_accumulator_of_a_loop_is_removed():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %a, %b = for %c0, %y, %c1, %x, %x : i32, i32 {
        ^(%i: i32, %acc: i32, %keep: i32):
          %n = add %acc, %i : i32
          %sq = mul %n, %n : i32
          %k2 = add %keep, %i : i32
          store %p, %k2
          yield %sq, %k2
        }
        return
    """), dce, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %b = for %c0, %y, %c1, %x : i32 {
        ^(%i: i32, %keep: i32):
          %k2 = add %keep, %i : i32
          store %p, %k2
          yield %k2
        }
        return
    """))


def test_loop_value_feeding_a_store_stays_even_if_result_unused():
    unchanged(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %a, %b = for %c0, %y, %c1, %x, %x : i32, i32 {
        ^(%i: i32, %acc: i32, %other: i32):
          %n = add %acc, %other : i32
          store %p, %n
          %m = add %other, %i : i32
          yield %n, %m
        }
        return %b
    """, "i32"), dce)


def test_pure_loop_with_unused_results_goes_but_while_stays():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %a = for %c0, %y, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %n = add %acc, %i : i32
          yield %n
        }
        %w = while %x : i32 {
        ^(%q: i32):
          %c = cmp %q, %y {pred = "lt"} : i1
          condition %c, %q
        } {
        ^(%q2: i32):
          %q3 = add %q2, %c1 : i32
          yield %q3
        }
        return
    """), dce, k("""
        %c1 = constant {value = 1} : i32
        %w = while %x : i32 {
        ^(%q: i32):
          %c = cmp %q, %y {pred = "lt"} : i1
          condition %c, %q
        } {
        ^(%q2: i32):
          %q3 = add %q2, %c1 : i32
          yield %q3
        }
        return
    """))


def test_while_drops_unused_forwarded_and_carried_values():
    check(k("""
        %w, %v = while %x, %y : i32, i32 {
        ^(%a: i32, %b: i32):
          %c = cmp %a, %y {pred = "lt"} : i1
          condition %c, %a, %b
        } {
        ^(%a2: i32, %b2: i32):
          %a3 = add %a2, %a2 : i32
          store %p, %a3
          yield %a3, %a3
        }
        return %w
    """, "i32"), dce, k("""
        %w = while %x : i32 {
        ^(%a: i32):
          %c = cmp %a, %y {pred = "lt"} : i1
          condition %c, %a
        } {
        ^(%a2: i32):
          %a3 = add %a2, %a2 : i32
          store %p, %a3
          yield %a3
        }
        return %w
    """, "i32"))


def test_if_results_and_empty_ifs():
    check(k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        %r, %s = if %c : i32, i32 {
          %a = add %x, %y : i32
          store %p, %a
          yield %a, %a
        } {
          %b = sub %x, %y : i32
          yield %b, %b
        }
        if %c {
          %d = mul %x, %x : i32
          yield
        } {
          yield
        }
        return %s
    """, "i32"), dce, k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        %s = if %c : i32 {
          %a = add %x, %y : i32
          store %p, %a
          yield %a
        } {
          %b = sub %x, %y : i32
          yield %b
        }
        return %s
    """, "i32"))


def test_dead_code_inside_nested_regions():
    check(k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        if %c {
          %dead = mul %x, %y : i32
          %v = load %p : i32
          store %p, %x
          yield
        } {
          yield
        }
        return
    """), dce, k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        if %c {
          store %p, %x
          yield
        } {
          yield
        }
        return
    """))
