"""canonicalize, text in -> text out: identities, casts, pointers, splats, control flow, and the
things it must leave alone."""
from __future__ import annotations

import pytest

from passes_testutil import check, module_text, run_passes, unchanged
from naiad.passes import canonicalize

P = "%x: i32, %y: i32, %f: f32, %p: ptr<f32>"


def k(body, params=P, results=""):
    return module_text(body, params, results)


# -- integer identities ----------------------------------------------------------------------------
@pytest.mark.parametrize("expr", ["add %x, %z", "add %z, %x", "sub %x, %z", "or %x, %z",
                                  "or %z, %x", "xor %x, %z", "shl %x, %z", "shr %x, %z",
                                  "mul %x, %one", "mul %one, %x", "div %x, %one",
                                  "and %x, %ones", "and %x, %x", "or %x, %x", "max %x, %x"])
def test_int_identity_gives_x(expr):
    check(k(f"""
        %z = constant {{value = 0}} : i32
        %one = constant {{value = 1}} : i32
        %ones = constant {{value = -1}} : i32
        %r = {expr} : i32
        return %r
    """, results="i32"), canonicalize, k("return %x", results="i32"))


@pytest.mark.parametrize("expr", ["mul %x, %z", "mul %z, %x", "and %x, %z", "and %z, %x",
                                  "sub %x, %x", "xor %x, %x"])
def test_int_annihilator_gives_zero(expr):
    check(k(f"""
        %z = constant {{value = 0}} : i32
        %r = {expr} : i32
        return %r
    """, results="i32"), canonicalize, k("""
        %r = constant {value = 0} : i32
        return %r
    """, results="i32"))


def test_identities_on_tensors():
    check(k("""
        %r = make_range {start = 0, end = 16} : tensor<16xi32>
        %z = constant {value = 0} : tensor<16xi32>
        %s = add %r, %z : tensor<16xi32>
        %m = mul %s, %z : tensor<16xi32>
        return %s, %m
    """, results="tensor<16xi32>, tensor<16xi32>"), canonicalize, k("""
        %r = make_range {start = 0, end = 16} : tensor<16xi32>
        %m = constant {value = 0} : tensor<16xi32>
        return %r, %m
    """, results="tensor<16xi32>, tensor<16xi32>"))


def test_float_identities_only_where_ieee_exact():
    # x + 0.0 is not x for x = -0.0, and x * 0.0 is not 0 for NaN/inf/negatives: both stay
    src = k("""
        %pz = constant {value = 0.0} : f32
        %nz = constant {value = -0.0} : f32
        %one = constant {value = 1.0} : f32
        %a = add %f, %pz : f32
        %b = mul %f, %pz : f32
        %c = add %f, %nz : f32
        %d = sub %f, %pz : f32
        %e = mul %f, %one : f32
        %g = div %f, %one : f32
        return %a, %b, %c, %d, %e, %g
    """, results="f32, f32, f32, f32, f32, f32")
    check(src, canonicalize, k("""
        %pz = constant {value = 0.0} : f32
        %a = add %f, %pz : f32
        %b = mul %f, %pz : f32
        return %a, %b, %f, %f, %f, %f
    """, results="f32, f32, f32, f32, f32, f32"))


def test_non_identities_stay():
    unchanged(k("""
        %two = constant {value = 2} : i32
        %a = add %x, %two : i32
        %b = mul %x, %y : i32
        %c = div %two, %x : i32
        %d = sub %two, %x : i32
        return %a, %b, %c, %d
    """, results="i32, i32, i32, i32"), canonicalize)


def test_chained_folding_reaches_a_fixed_point():
    check(k("""
        %a = constant {value = 7} : i32
        %b = constant {value = 5} : i32
        %s = add %a, %b : i32
        %m = mul %s, %s : i32
        %t = sub %m, %b : i32
        %r = add %x, %t : i32
        return %r
    """, results="i32"), canonicalize, k("""
        %t = constant {value = 139} : i32
        %r = add %x, %t : i32
        return %r
    """, results="i32"))


# -- select ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cond,picked", [("true", "%x"), ("false", "%y")])
def test_select_with_constant_condition(cond, picked):
    check(k(f"""
        %c = constant {{value = {cond}}} : i1
        %r = select %c, %x, %y : i32
        return %r
    """, results="i32"), canonicalize, k(f"return {picked}", results="i32"))


def test_select_of_equal_arms_and_tensor_condition():
    check(k("""
        %c = cmp %x, %y {pred = "lt"} : i1
        %r = select %c, %x, %x : i32
        %t = constant {value = false} : tensor<8xi1>
        %a = splat %x : tensor<8xi32>
        %b = make_range {start = 0, end = 8} : tensor<8xi32>
        %s = select %t, %a, %b : tensor<8xi32>
        return %r, %s
    """, results="i32, tensor<8xi32>"), canonicalize, k("""
        %b = make_range {start = 0, end = 8} : tensor<8xi32>
        return %x, %b
    """, results="i32, tensor<8xi32>"))


# -- casts -----------------------------------------------------------------------------------------
def test_cast_to_same_type_and_lossless_round_trip_vanish():
    check(k("""
        %a = cast %x : i64
        %b = cast %a : i32
        %c = cast %f : f64
        %d = cast %c : f32
        return %b, %d
    """, results="i32, f32"), canonicalize, k("return %x, %f", results="i32, f32"))


def test_double_cast_through_lossless_type_becomes_one_cast():
    check(k("""
        %a = cast %x : i64
        %b = cast %a : f32
        %h = cast %f : f64
        %g = cast %h : f16
        return %b, %g
    """, results="f32, f16"), canonicalize, k("""
        %b = cast %x : f32
        %g = cast %f : f16
        return %b, %g
    """, results="f32, f16"))


@pytest.mark.parametrize("mid", ["i16", "u32", "f16", "bf16", "i1"])
def test_double_cast_through_lossy_type_stays(mid):
    unchanged(k(f"""
        %a = cast %x : {mid}
        %b = cast %a : i32
        return %b
    """, results="i32"), canonicalize)


def test_cast_of_constant_folds():
    check(k("""
        %a = constant {value = -3.75} : f32
        %b = cast %a : i32
        %c = cast %b : u8
        return %c
    """, results="u8"), canonicalize, k("""
        %c = constant {value = 253} : u8
        return %c
    """, results="u8"))


def test_rtz_downcast_of_a_widened_int_is_not_merged_into_one_cast():
    """i16 -> f32 is lossless, but f32 -> bf16 "rtz" is not i16 -> bf16 (nearest-even)."""
    unchanged(k("""
        %a = cast %h : f32
        %b = cast %a {fp_downcast_rounding = "rtz"} : bf16
        return %b
    """, params="%h: i16", results="bf16"), canonicalize)


@pytest.mark.parametrize("value,dst,want", [(-8620, "bf16", -8576.0), (8620, "bf16", 8576.0),
                                            (65535.0, "f16", 65504.0), (1e10, "f16", 65504.0),
                                            (-2047.5, "f16", -2047.0)])
def test_rtz_downcast_of_constant_folds_toward_zero(value, dst, want):
    src = "i16" if isinstance(value, int) else "f32"
    check(k(f"""
        %a = constant {{value = {value}}} : {src}
        %w = cast %a : f32
        %b = cast %w {{fp_downcast_rounding = "rtz"}} : {dst}
        return %b
    """, results=dst), canonicalize, k(f"""
        %b = constant {{value = {want}}} : {dst}
        return %b
    """, results=dst))


# -- pointers --------------------------------------------------------------------------------------
def test_addptr_chain_combines_offsets():
    check(k("""
        %a = addptr %p, %x : ptr<f32>
        %b = addptr %a, %y : ptr<f32>
        %v = load %b : f32
        return %v
    """, results="f32"), canonicalize, k("""
        %0 = add %x, %y : i32
        %b = addptr %p, %0 : ptr<f32>
        %v = load %b : f32
        return %v
    """, results="f32"))


def test_addptr_chain_with_constants_folds_to_one_offset():
    check(k("""
        %c4 = constant {value = 4} : i32
        %c8 = constant {value = 8} : i32
        %a = addptr %p, %c4 : ptr<f32>
        %b = addptr %a, %c8 : ptr<f32>
        %z = constant {value = 0} : i32
        %c = addptr %b, %z : ptr<f32>
        %v = load %c : f32
        return %v
    """, results="f32"), canonicalize, k("""
        %0 = constant {value = 12} : i32
        %b = addptr %p, %0 : ptr<f32>
        %v = load %b : f32
        return %v
    """, results="f32"))


def test_shared_inner_addptr_is_kept():
    unchanged(k("""
        %a = addptr %p, %x : ptr<f32>
        %b = addptr %a, %y : ptr<f32>
        %v = load %a : f32
        %w = load %b : f32
        return %v, %w
    """, results="f32, f32"), canonicalize)


def test_addptr_with_different_offset_types_is_kept():
    unchanged(k("""
        %w = cast %y : i64
        %a = addptr %p, %x : ptr<f32>
        %b = addptr %a, %w : ptr<f32>
        %v = load %b : f32
        return %v
    """, results="f32"), canonicalize)


# -- splats and shape ops --------------------------------------------------------------------------
def test_elementwise_of_splats_becomes_scalar_op():
    check(k("""
        %a = splat %x : tensor<32xi32>
        %b = splat %y : tensor<32xi32>
        %s = add %a, %b : tensor<32xi32>
        %c = cmp %s, %b {pred = "lt"} : tensor<32xi1>
        return %c
    """, results="tensor<32xi1>"), canonicalize, k("""
        %0 = add %x, %y : i32
        %1 = cmp %0, %y {pred = "lt"} : i1
        %c = splat %1 : tensor<32xi1>
        return %c
    """, results="tensor<32xi1>"))


def test_splat_meets_constant_tensor():
    check(k("""
        %a = splat %x : tensor<32xi32>
        %c = constant {value = 3} : tensor<32xi32>
        %s = mul %a, %c : tensor<32xi32>
        return %s
    """, results="tensor<32xi32>"), canonicalize, k("""
        %0 = constant {value = 3} : i32
        %1 = mul %x, %0 : i32
        %s = splat %1 : tensor<32xi32>
        return %s
    """, results="tensor<32xi32>"))


def test_shape_ops_of_splats_and_constants():
    check(k("""
        %a = splat %x : tensor<16xi32>
        %e = expand_dims %a {axis = 0} : tensor<1x16xi32>
        %b = broadcast %e : tensor<8x16xi32>
        %t = trans %b {order = [1, 0]} : tensor<16x8xi32>
        %r = reshape %t : tensor<128xi32>
        %c = constant {value = 2.5} : f32
        %cs = splat %c : tensor<4x4xf32>
        %cb = reshape %cs : tensor<16xf32>
        return %r, %cb
    """, results="tensor<128xi32>, tensor<16xf32>"), canonicalize, k("""
        %r = splat %x : tensor<128xi32>
        %cb = constant {value = 2.5} : tensor<16xf32>
        return %r, %cb
    """, results="tensor<128xi32>, tensor<16xf32>"))


def test_noop_shape_ops_vanish_and_chains_merge():
    check(k("""
        %r = make_range {start = 0, end = 16} : tensor<16xi32>
        %e = expand_dims %r {axis = 0} : tensor<1x16xi32>
        %b0 = broadcast %e : tensor<1x16xi32>
        %b1 = broadcast %b0 : tensor<4x16xi32>
        %b2 = broadcast %b1 : tensor<4x16xi32>
        %t = trans %b2 {order = [0, 1]} : tensor<4x16xi32>
        %s1 = reshape %t : tensor<64xi32>
        %s2 = reshape %s1 : tensor<8x8xi32>
        return %s2
    """, results="tensor<8x8xi32>"), canonicalize, k("""
        %r = make_range {start = 0, end = 16} : tensor<16xi32>
        %e = expand_dims %r {axis = 0} : tensor<1x16xi32>
        %b1 = broadcast %e : tensor<4x16xi32>
        %s2 = reshape %b1 : tensor<8x8xi32>
        return %s2
    """, results="tensor<8x8xi32>"))


# -- specialisation --------------------------------------------------------------------------------
def test_equal_to_one_argument_becomes_constant():
    src = module_text("""
        %a = mul %x, %s : i32
        %o = addptr %p, %a : ptr<f32>
        %v = load %o : f32
        return %v
    """, "%p: ptr<f32>, %x: i32, %s: i32 {equal_to = 1}", "f32")
    check(src, canonicalize, module_text("""
        %o = addptr %p, %x : ptr<f32>
        %v = load %o : f32
        return %v
    """, "%p: ptr<f32>, %x: i32, %s: i32 {equal_to = 1}", "f32"))


def test_equal_to_one_argument_in_an_i64_and_in_a_loop():
    src = module_text("""
        %c0 = constant {value = 0} : i32
        %c4 = constant {value = 4} : i32
        %c1 = constant {value = 1} : i32
        %r = for %c0, %c4, %c1, %x : i64 {
        ^(%i: i32, %acc: i64):
          %n = mul %acc, %s : i64
          yield %n
        }
        return %r
    """, "%x: i64, %s: i64 {equal_to = 1}", "i64")
    _, got = run_passes(src, canonicalize)
    assert "mul" not in got and "yield %acc" in got


# -- control flow ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cond,kept", [("true", "%a"), ("false", "%b")])
def test_if_with_constant_condition_is_inlined(cond, kept):
    src = k(f"""
        %c = constant {{value = {cond}}} : i1
        %r = if %c : i32 {{
          %a = add %x, %y : i32
          store %p, %f
          yield %a
        }} {{
          %b = sub %x, %y : i32
          yield %b
        }}
        return %r
    """, results="i32")
    if cond == "true":
        want = k("""
            %a = add %x, %y : i32
            store %p, %f
            return %a
        """, results="i32")
    else:
        want = k("""
            %b = sub %x, %y : i32
            return %b
        """, results="i32")
    check(src, canonicalize, want)


def test_for_with_zero_trips_gives_its_inits():
    src = k("""
        %lb = constant {value = 8} : i32
        %ub = constant {value = 8} : i32
        %st = constant {value = 1} : i32
        %r = for %lb, %ub, %st, %x : i32 {
        ^(%i: i32, %acc: i32):
          store %p, %f
          %n = add %acc, %i : i32
          yield %n
        }
        return %r
    """, results="i32")
    check(src, canonicalize, k("return %x", results="i32"))


def test_loops_that_may_run_stay():
    unchanged(k("""
        %lb = constant {value = 0} : i32
        %st = constant {value = 1} : i32
        %r = for %lb, %y, %st, %x : i32 {
        ^(%i: i32, %acc: i32):
          store %p, %f
          %n = add %acc, %i : i32
          yield %n
        }
        %w = while %x : i32 {
        ^(%a: i32):
          %c = cmp %a, %y {pred = "lt"} : i1
          condition %c, %a
        } {
        ^(%b: i32):
          %b1 = add %b, %b : i32
          yield %b1
        }
        return %r, %w
    """, results="i32, i32"), canonicalize)


def test_while_with_false_condition_runs_before_region_once():
    check(k("""
        %w = while %x : i32 {
        ^(%a: i32):
          %c = constant {value = false} : i1
          %a2 = mul %a, %y : i32
          store %p, %f
          condition %c, %a2
        } {
        ^(%b: i32):
          yield %b
        }
        return %w
    """, results="i32"), canonicalize, k("""
        %a2 = mul %x, %y : i32
        store %p, %f
        return %a2
    """, results="i32"))


def test_folding_inside_nested_regions():
    check(k("""
        %lb = constant {value = 0} : i32
        %st = constant {value = 1} : i32
        %r = for %lb, %y, %st, %x : i32 {
        ^(%i: i32, %acc: i32):
          %c = cmp %i, %y {pred = "lt"} : i1
          %s = if %c : i32 {
            %z = constant {value = 0} : i32
            %t = add %acc, %z : i32
            yield %t
          } {
            %two = constant {value = 2} : i32
            %three = constant {value = 3} : i32
            %six = mul %two, %three : i32
            yield %six
          }
          yield %s
        }
        return %r
    """, results="i32"), canonicalize, k("""
        %lb = constant {value = 0} : i32
        %st = constant {value = 1} : i32
        %r = for %lb, %y, %st, %x : i32 {
        ^(%i: i32, %acc: i32):
          %c = cmp %i, %y {pred = "lt"} : i1
          %s = if %c : i32 {
            yield %acc
          } {
            %six = constant {value = 6} : i32
            yield %six
          }
          yield %s
        }
        return %r
    """, results="i32"))


# -- what must not change --------------------------------------------------------------------------
def test_memory_ops_atomics_and_calls_are_left_alone():
    src = module_text("""
        %c = constant {value = 0} : i32
        %q = addptr %p, %c : ptr<i32>
        %v = load %p : i32
        %o = atomic_rmw %p, %v {kind = "add"} : i32
        %z = constant {value = 0} : i32
        %o2 = atomic_rmw %p, %z {kind = "add"} : i32
        %cas = atomic_cas %p, %z, %z : i32
        %r = call %v {callee = "ext"} : i32
        store %p, %r
        return
    """, "%p: ptr<i32>", extra="""
        func @ext(%a: i32) -> (i32) attributes {kernel = true} {
          return %a
        }
    """)
    module, got = run_passes(src, canonicalize)
    for needle in ("load %p", "atomic_rmw %p, %v", "atomic_rmw %p, %z", "atomic_cas %p, %z, %z",
                   "call %v", "store %p, %r"):
        assert needle in got, f"{needle!r} disappeared:\n{got}"
    assert "addptr" not in got  # the unused pure op did go


def test_division_by_zero_is_not_folded_but_stays():
    unchanged(k("""
        %z = constant {value = 0} : i32
        %s = constant {value = 7} : i32
        %d = div %s, %z : i32
        return %d
    """, results="i32"), canonicalize)
