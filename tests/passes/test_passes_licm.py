"""licm, text in -> text out: invariants leave loops; loads, stores, variant ops, conditional ops
and unsafe divisions stay."""
from __future__ import annotations

from passes_testutil import check, module_text, unchanged
from naiad.passes import licm

P = "%x: i32, %y: i32, %n: i32, %p: ptr<i32>"


def k(body, results="", params=P):
    return module_text(body, params, results)


def test_invariant_pure_ops_are_hoisted():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %inv = mul %x, %y : i32
          %inv2 = add %inv, %c1 : i32
          %s = splat %inv2 : tensor<4xi32>
          %var = add %acc, %inv2 : i32
          %var2 = add %var, %i : i32
          yield %var2
        }
        return %r
    """, "i32"), licm, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %inv = mul %x, %y : i32
        %inv2 = add %inv, %c1 : i32
        %s = splat %inv2 : tensor<4xi32>
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %var = add %acc, %inv2 : i32
          %var2 = add %var, %i : i32
          yield %var2
        }
        return %r
    """, "i32"))


def test_loads_stores_and_atomics_are_never_hoisted():
    unchanged(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %v = load %p : i32
          store %p, %x
          %o = atomic_rmw %p, %y {kind = "add"} : i32
          %s = add %acc, %v : i32
          yield %s
        }
        return %r
    """, "i32"), licm)


def test_ops_inside_an_if_in_the_loop_stay_conditional():
    unchanged(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %c = cmp %i, %y {pred = "lt"} : i1
          %s = if %c : i32 {
            %inv = mul %x, %y : i32
            yield %inv
          } {
            yield %acc
          }
          yield %s
        }
        return %r
    """, "i32"), licm)


def test_integer_division_moves_only_when_safe():
    # by an unknown divisor: undefined if the loop would not have run -> stays (trip count unknown)
    unchanged(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %d = div %x, %y : i32
          %s = add %acc, %d : i32
          yield %s
        }
        return %r
    """, "i32"), licm)
    # by a non-zero constant: safe to speculate
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c7 = constant {value = 7} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %d = rem %x, %c7 : i32
          %s = add %acc, %d : i32
          yield %s
        }
        return %r
    """, "i32"), licm, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c7 = constant {value = 7} : i32
        %d = rem %x, %c7 : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %s = add %acc, %d : i32
          yield %s
        }
        return %r
    """, "i32"))


def test_division_by_unknown_moves_when_the_loop_surely_runs():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c4 = constant {value = 4} : i32
        %r = for %c0, %c4, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %d = div %x, %y : i32
          %s = add %acc, %d : i32
          yield %s
        }
        return %r
    """, "i32"), licm, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c4 = constant {value = 4} : i32
        %d = div %x, %y : i32
        %r = for %c0, %c4, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %s = add %acc, %d : i32
          yield %s
        }
        return %r
    """, "i32"))


def test_nested_loops_hoist_step_by_step():
    check(k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %q = for %c0, %n, %c1, %acc : i32 {
          ^(%j: i32, %acc2: i32):
            %a = mul %x, %y : i32
            %b = add %i, %a : i32
            %c = add %acc2, %b : i32
            %d = add %c, %j : i32
            yield %d
          }
          yield %q
        }
        return %r
    """, "i32"), licm, k("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %a = mul %x, %y : i32
        %r = for %c0, %n, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %b = add %i, %a : i32
          %q = for %c0, %n, %c1, %acc : i32 {
          ^(%j: i32, %acc2: i32):
            %c = add %acc2, %b : i32
            %d = add %c, %j : i32
            yield %d
          }
          yield %q
        }
        return %r
    """, "i32"))


def test_while_before_region_runs_once_so_division_moves_from_it_only():
    check(k("""
        %w = while %x : i32 {
        ^(%a: i32):
          %d = div %x, %y : i32
          %c = cmp %a, %d {pred = "lt"} : i1
          condition %c, %a
        } {
        ^(%b: i32):
          %e = div %y, %x : i32
          %f = mul %x, %y : i32
          %b1 = add %b, %e : i32
          %b2 = add %b1, %f : i32
          yield %b2
        }
        return %w
    """, "i32"), licm, k("""
        %d = div %x, %y : i32
        %f = mul %x, %y : i32
        %w = while %x : i32 {
        ^(%a: i32):
          %c = cmp %a, %d {pred = "lt"} : i1
          condition %c, %a
        } {
        ^(%b: i32):
          %e = div %y, %x : i32
          %b1 = add %b, %e : i32
          %b2 = add %b1, %f : i32
          yield %b2
        }
        return %w
    """, "i32"))
