"""unroll, text in -> text out: loops that ask (or are under the threshold) are fully unrolled."""
from __future__ import annotations

from passes_testutil import check, module_text, run_passes, unchanged
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.passes import PassContext, unroll
from naiad.passes.unroll import trip_count

LOOP = """
    %lb = constant {{value = {lb}}} : i32
    %ub = constant {{value = {ub}}} : i32
    %st = constant {{value = {st}}} : i32
    %r = for %lb, %ub, %st, %x {attrs}: i32 {{
    ^(%i: i32, %acc: i32):
      %n = add %acc, %i : i32
      store %p, %n
      yield %n
    }}
    return %r
"""
P = "%x: i32, %p: ptr<i32>"


def loop(lb=1, ub=7, st=3, attrs="{unroll = true} "):
    return module_text(LOOP.format(lb=lb, ub=ub, st=st, attrs=attrs), P, "i32")


def test_loop_marked_unroll_is_unrolled():
    check(loop(), unroll, module_text("""
        %lb = constant {value = 1} : i32
        %ub = constant {value = 7} : i32
        %st = constant {value = 3} : i32
        %i = constant {value = 1} : i32
        %n = add %x, %i : i32
        store %p, %n
        %i_1 = constant {value = 4} : i32
        %n_1 = add %n, %i_1 : i32
        store %p, %n_1
        return %n_1
    """, P, "i32"))


def test_unmarked_loop_stays_by_default_and_unrolls_under_a_threshold():
    src = loop(attrs="")
    unchanged(src, unroll)
    m = parse_module(src)
    assert unroll(m, PassContext(options={"unroll_threshold": 2}))
    assert "for" not in print_module(m)
    m = parse_module(src)
    assert not unroll(m, threshold=1)


def test_zero_trip_and_unknown_bounds():
    m, got = run_passes(loop(lb=5, ub=5), unroll)
    assert "for" not in got and "store" not in got and "return %x" in got
    unchanged(module_text("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %x, %c1, %x {unroll = true} : i32 {
        ^(%i: i32, %acc: i32):
          %n = add %acc, %i : i32
          yield %n
        }
        return %r
    """, P, "i32"), unroll)


def test_trip_count_rounds_up_and_respects_the_size_cap():
    m = parse_module(loop(lb=0, ub=10, st=3))
    op = next(o for o in m.functions["k"].walk() if o.name == "for")
    assert trip_count(op) == len(range(0, 10, 3))
    assert not unroll(m, max_ops=8)  # 4 trips x 3 ops > 8
    assert unroll(m, max_ops=12)


def test_integer_unroll_attribute_means_up_to_that_many_trips():
    unchanged(loop(lb=0, ub=8, st=1, attrs="{unroll = 4} "), unroll)
    m, got = run_passes(loop(lb=0, ub=4, st=1, attrs="{unroll = 4} "), unroll)
    assert "for" not in got and got.count("store") == 4
    m, got = run_passes(loop(lb=0, ub=4, st=1, attrs="{loop_unroll_factor = 8, num_stages = 2} "),
                        unroll)
    assert "for" not in got and got.count("store") == 4
    unchanged(loop(lb=0, ub=9, st=1, attrs="{loop_unroll_factor = 8} "), unroll)


def test_inner_loop_in_an_outer_loop_is_unrolled_in_place():
    src = module_text("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c2 = constant {value = 2} : i32
        %r = for %c0, %x, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %q = for %c0, %c2, %c1, %acc {unroll = true} : i32 {
          ^(%j: i32, %a2: i32):
            %s = add %a2, %j : i32
            yield %s
          }
          yield %q
        }
        return %r
    """, P, "i32")
    check(src, unroll, module_text("""
        %c0 = constant {value = 0} : i32
        %c1 = constant {value = 1} : i32
        %c2 = constant {value = 2} : i32
        %r = for %c0, %x, %c1, %x : i32 {
        ^(%i: i32, %acc: i32):
          %j = constant {value = 0} : i32
          %s = add %acc, %j : i32
          %j_1 = constant {value = 1} : i32
          %s_1 = add %s, %j_1 : i32
          yield %s_1
        }
        return %r
    """, P, "i32"))
