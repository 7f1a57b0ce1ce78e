"""Control flow, calls and compile-time values: static vs run-time if/loops, loop-carried
values, early returns, @jit callees and their specialisation, constexpr globals/closures and the
Python builtins kernels may use."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError

from frontend_testutil import compile_ir, ops, run

RNG = np.random.default_rng(99)
SCALE = 3                                  # plain global constant
OFFSET = tl.constexpr(10)                  # tl.constexpr global
OUT_DTYPE = tl.float16                     # dtype global
SHAPE = (4, 8)                             # tuple global


# -- if -------------------------------------------------------------------------------------------

@naiad.jit
def static_if_kernel(x_ptr, MODE: tl.constexpr, FLAG: tl.constexpr):
    x = tl.load(x_ptr)
    if MODE == "double" and not FLAG:
        x = x * 2
    elif MODE == "neg" or FLAG:
        x = -x
    else:
        x = x + 1
    tl.store(x_ptr, x)


@pytest.mark.parametrize("mode,flag,op", [("double", False, "mul"), ("neg", False, "neg"),
                                          ("double", True, "neg"), ("other", False, "add")])
def test_static_if_emits_only_the_taken_branch(mode, flag, op):
    module, _ = compile_ir(static_if_kernel, {"x_ptr": "*fp32"}, {"MODE": mode, "FLAG": flag})
    assert not ops(module, "if")
    arith = [o.name for o in ops(module) if o.name in ("mul", "neg", "add")]
    assert arith == [op]


@naiad.jit
def dynamic_if_kernel(x_ptr, out_ptr, n):
    i = tl.program_id(0)
    x = tl.load(x_ptr + i)
    y = 0.0
    k = 1
    if x > 0 and i < n:
        y = x * 2
        k = 2
    elif x < -1:
        y = -x
    else:
        y = x + 0.5
        k = 3
    tl.store(out_ptr + i, y * k)


def test_dynamic_if_merges_variables_through_results():
    module, _ = compile_ir(dynamic_if_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"})
    ifs = ops(module, "if")
    assert len(ifs) == 2  # elif nests
    assert [str(r.type) for r in ifs[0].results] == ["f32", "i32"]
    x = RNG.standard_normal(12).astype(np.float32) * 3
    out = np.full(12, np.nan, np.float32)
    run(dynamic_if_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {}, (12,),
        [x, out, 9])
    idx = np.arange(12)
    want = np.where((x > 0) & (idx < 9), x * 2 * 2, np.where(x < -1, -x, (x + 0.5) * 3))
    np.testing.assert_allclose(out, want, rtol=1e-6)


@naiad.jit
def ternary_kernel(x_ptr, out_ptr, BIG: tl.constexpr):
    i = tl.program_id(0)
    x = tl.load(x_ptr + i)
    scale = 100 if BIG else 1               # static
    y = x * scale if x > 0 else 0           # dynamic; the literal adapts to f32
    tl.store(out_ptr + i, y)


def test_ternary_static_and_dynamic():
    module, _ = compile_ir(ternary_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BIG": True})
    (if_op,) = ops(module, "if")
    assert [str(r.type) for r in if_op.results] == ["f32"]
    x = RNG.standard_normal(8).astype(np.float32)
    out = np.full(8, np.nan, np.float32)
    run(ternary_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BIG": True}, (8,), [x, out])
    np.testing.assert_allclose(out, np.where(x > 0, x * 100, 0), rtol=1e-6)


@naiad.jit
def early_return_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_early_return_in_a_kernel_guards_the_rest():
    module, _ = compile_ir(early_return_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 16})
    (if_op,) = ops(module, "if")
    assert not if_op.regions[0].block.ops[:-1]          # then: nothing but the yield
    assert any(o.name == "store" for o in if_op.regions[1].block.ops)
    x = np.arange(40, dtype=np.int32)
    run(early_return_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 16}, (5,), [x, 40])
    np.testing.assert_array_equal(x, np.arange(40) + 1)


@naiad.jit
def sign_of(v):
    if v > 0:
        return 1.0
    elif v < 0:
        return -1.0
    return 0.0


@naiad.jit
def clamp_static(v, LO: tl.constexpr):
    if LO is None:
        return v
    return tl.maximum(v, LO)


@naiad.jit
def returns_in_branches_kernel(x_ptr, out_ptr):
    i = tl.program_id(0)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, sign_of(x) + clamp_static(x, None) + clamp_static(x, 0.0))


def test_callee_returns_from_dynamic_and_static_branches():
    module, _ = compile_ir(returns_in_branches_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"})
    assert set(module.functions) == {"returns_in_branches_kernel", "sign_of", "clamp_static",
                                     "clamp_static_1"}
    assert not ops(module.functions["clamp_static"], "max")
    assert ops(module.functions["clamp_static_1"], "max")
    x = np.array([-2.0, 0.0, 3.5, -0.5], np.float32)
    out = np.full(4, np.nan, np.float32)
    run(returns_in_branches_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {}, (4,), [x, out])
    np.testing.assert_array_equal(out, np.sign(x) + x + np.maximum(x, 0))


def test_return_on_one_path_only_is_an_error():
    @naiad.jit
    def half(v):
        if v > 0:
            return v

    @naiad.jit
    def k(x_ptr):
        tl.store(x_ptr, half(tl.load(x_ptr)))

    with pytest.raises(CompilationError, match="returns a value on one path but not on the"):
        compile_ir(k, {"x_ptr": "*fp32"})


# -- loops -----------------------------------------------------------------------------------------

@naiad.jit
def loops_kernel(x_ptr, out_ptr, n, START: tl.constexpr, STEP: tl.constexpr):
    acc = 0.0
    p = x_ptr
    for i in range(START, n, STEP):             # carries acc and the pointer p
        acc += tl.load(x_ptr + i) * i
        p += 1
    count = 0
    j = n
    while j > 0:                                # carries count and j
        j = j // 2
        count += 1
    total = 0
    for k in tl.static_range(4):                # unrolled: k is a constexpr
        total += k * SCALE
    for t in (1, 2):                            # a compile-time tuple unrolls too
        total += t
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, tl.load(p))
    tl.store(out_ptr + 2, count)
    tl.store(out_ptr + 3, total + OFFSET)


@pytest.mark.parametrize("start,step", [(0, 1), (2, 3), (9, -2), (5, -1)])
def test_loops(start, step):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    module, _ = compile_ir(loops_kernel, sig, {"START": start, "STEP": step})
    (for_op,) = ops(module, "for")
    assert [str(r.type) for r in for_op.results] == ["f32", "ptr<f32>"]
    (while_op,) = ops(module, "while")
    assert [str(r.type) for r in while_op.results] == ["i32", "i32"]
    n = 7
    x = RNG.standard_normal(16).astype(np.float32)
    out = np.full(4, np.nan, np.float32)
    run(loops_kernel, sig, {"START": start, "STEP": step}, (1,), [x, out, n])
    idx = list(range(start, n, step))
    np.testing.assert_allclose(out[0], sum(x[i] * i for i in idx), rtol=1e-5)
    assert out[1] == x[len(idx)]
    assert out[2] == len(bin(n)) - 2                     # halvings until zero
    assert out[3] == sum(k * 3 for k in range(4)) + 3 + 10


@naiad.jit
def runtime_bounds_kernel(out_ptr, lo, hi, step):
    s = tl.full([], 0, tl.int64)                # i64, like the induction variable
    for i in tl.range(lo, hi, step, num_stages=2, loop_unroll_factor=4):
        s += i
    tl.store(out_ptr, s)


def test_loop_with_runtime_bounds_and_options():
    sig = {"out_ptr": "*i64", "lo": "i32", "hi": "i64", "step": "i32"}
    module, _ = compile_ir(runtime_bounds_kernel, sig)
    (for_op,) = ops(module, "for")
    assert for_op.attrs == {"num_stages": 2, "loop_unroll_factor": 4}
    assert [str(v.type) for v in for_op.operands[:3]] == ["i64", "i64", "i64"]
    out = np.zeros(1, np.int64)
    run(runtime_bounds_kernel, sig, {}, (1,), [out, -5, 20, 3])
    assert out[0] == sum(range(-5, 20, 3))


def test_loop_variable_not_visible_after_the_loop():
    @naiad.jit
    def k(x_ptr, n):
        for i in range(n):
            pass
        tl.store(x_ptr, i)

    with pytest.raises(CompilationError, match="loop variable 'i' is not visible after"):
        compile_ir(k, {"x_ptr": "*i32", "n": "i32"})


def test_reassigning_a_compile_time_value_in_a_runtime_loop_is_an_error():
    @naiad.jit
    def k(x_ptr, n):
        dt = tl.float32
        for i in range(n):
            dt = tl.float16
        tl.store(x_ptr, tl.load(x_ptr).to(dt))

    with pytest.raises(CompilationError, match="'dt' holds the compile-time value"):
        compile_ir(k, {"x_ptr": "*fp32", "n": "i32"})


def test_always_true_while_is_an_error():
    @naiad.jit
    def k(x_ptr):
        while True:
            tl.store(x_ptr, 1.0)

    with pytest.raises(CompilationError, match="condition is always true"):
        compile_ir(k, {"x_ptr": "*fp32"})


def test_static_range_needs_constexpr_bounds():
    @naiad.jit
    def k(x_ptr, n):
        for i in tl.static_range(n):
            tl.store(x_ptr + i, 1.0)

    with pytest.raises(CompilationError, match="static_range's end must be a compile-time"):
        compile_ir(k, {"x_ptr": "*fp32", "n": "i32"})


# -- calls --------------------------------------------------------------------------------------

@naiad.jit
def scaled(v, FACTOR: tl.constexpr):
    return v * FACTOR, FACTOR + 1


@naiad.jit
def nothing(ptr):
    tl.store(ptr, 0)


@naiad.jit
def calls_kernel(f_ptr, i_ptr):
    a, c1 = scaled(tl.load(f_ptr), 2)
    b, c2 = scaled(tl.load(f_ptr + 1), 2)
    d, c3 = scaled(tl.load(i_ptr), 3)
    tl.static_assert(c1 == 3 and c3 == 4)       # constexpr results come back as constants
    nothing(i_ptr + 1)
    tl.store(f_ptr + 2, a + b + d)


def test_callees_are_specialised_by_types_and_constexprs():
    module, _ = compile_ir(calls_kernel, {"f_ptr": "*fp32", "i_ptr": "*i32"})
    fns = module.functions
    assert set(fns) == {"calls_kernel", "scaled", "scaled_1", "nothing"}
    assert [str(t) for t in fns["scaled"].arg_types] == ["f32"]
    assert [str(t) for t in fns["scaled_1"].arg_types] == ["i32"]
    assert fns["nothing"].result_types == [] and fns["nothing"].attrs == {"kernel": False}
    assert [o.attrs["callee"] for o in ops(module, "call")] == [
        "scaled", "scaled", "scaled_1", "nothing"]
    f = np.array([1.5, 2.0, np.nan], np.float32)
    i = np.array([7, 5], np.int32)
    run(calls_kernel, {"f_ptr": "*fp32", "i_ptr": "*i32"}, {}, (1,), [f, i])
    assert f[2] == 1.5 * 2 + 2.0 * 2 + 7 * 3 and i[1] == 0


def test_recursion_is_an_error():
    @naiad.jit
    def rec(v):
        return rec(v)

    @naiad.jit
    def k(x_ptr):
        tl.store(x_ptr, rec(tl.load(x_ptr)))

    with pytest.raises(CompilationError, match="recursive call of @jit function rec"):
        compile_ir(k, {"x_ptr": "*fp32"})


# -- constexprs, globals, closures, builtins

def test_globals_closures_and_python_builtins():
    local_bias = 0.25  # a closure variable

    @naiad.jit
    def k(x_ptr, out_ptr, n, NAMES: tl.constexpr, DT: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, 8))
        lo = min(SCALE, 2, len(NAMES))              # compile-time: 2
        hi = max(x, 0.0)                            # tensor: tl.maximum
        neg_inf = -float("inf")
        m = tl.max(tl.where(x > 100.0, x, neg_inf), axis=0)
        y = (hi * lo + abs(x) + local_bias + OFFSET).to(DT).to(OUT_DTYPE)
        tl.store(out_ptr + tl.arange(0, 8), y)
        tl.store(out_ptr + 9, m)
        tl.static_assert(SHAPE[1] == 8 and len(SHAPE) == 2 and "b" in NAMES)
        tl.store(out_ptr + 8, tl.minimum(n, SHAPE[0]).to(tl.float16))

    sig = {"x_ptr": "*fp32", "out_ptr": "*fp16", "n": "i32"}
    consts = {"NAMES": ("a", "b", "c"), "DT": tl.float32}
    module, _ = compile_ir(k, sig, consts)
    assert ops(module, "max") and ops(module, "abs")
    x = RNG.standard_normal(8).astype(np.float32)
    out = np.full(10, np.nan, np.float16)
    run(k, sig, consts, (1,), [x, out, 2])
    assert out[9] == -np.inf
    want = (np.maximum(x, 0) * 2 + np.abs(x) + 0.25 + 10).astype(np.float16)
    np.testing.assert_array_equal(out[:8], want)
    assert out[8] == 2


def test_logical_operators_on_scalars_and_constexprs():
    @naiad.jit
    def k(x_ptr, a, b, C: tl.constexpr):
        both = a > 0 and b > 0
        either = a > 0 or b > 0
        neither = not (a > 0) and not b
        static = C and not False
        tl.store(x_ptr, both.to(tl.int32) + either * 2 + neither * 4 + static * 8)

    sig = {"x_ptr": "*i32", "a": "i32", "b": "i32"}
    module, _ = compile_ir(k, sig, {"C": True})
    assert ops(module, "and") and ops(module, "or") and ops(module, "not")
    for a, b in [(1, 1), (1, 0), (0, 0), (-1, 3)]:
        x = np.zeros(1, np.int32)
        run(k, sig, {"C": True}, (1,), [x, a, b])
        want = (a > 0 and b > 0) + 2 * (a > 0 or b > 0) + 4 * ((not a > 0) and not b) + 8
        assert x[0] == want, (a, b)


def test_specialization_facts_reach_arg_attrs():
    @naiad.jit
    def k(x_ptr, n, s):
        tl.store(x_ptr + n * s, 1.0)

    from naiad.frontend import generate
    module = generate(k, {"x_ptr": "*fp32", "n": "i32", "s": "i32"}, {},
                      {"x_ptr": {"divisibility": 16}, "s": {"equal_to": 1}})
    assert module.functions["k"].arg_attrs == [{"divisibility": 16}, {}, {"equal_to": 1}]


def test_source_locations_are_stamped_on_ops():
    module, _ = compile_ir(early_return_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 16})
    (store,) = ops(module, "store")
    filename, line, col = store.loc
    assert filename == __file__
    src = open(__file__).read().splitlines()
    assert "tl.store(x_ptr + offs" in src[line - 1] and src[line - 1][col:].startswith("tl.store")
    assert all(op.loc is not None for op in ops(module))


def test_callee_specialisations_keep_signed_zero_and_nan_apart():
    @naiad.jit
    def add_c(v, C):
        return v + C

    @naiad.jit
    def k(x_ptr):
        x = tl.load(x_ptr)
        tl.store(x_ptr, add_c(x, 0.0) + add_c(x, -0.0) + add_c(x, float("nan"))
                 + add_c(x, float("nan")))

    module, _ = compile_ir(k, {"x_ptr": "*fp32"})
    assert set(module.functions) == {"k", "add_c", "add_c_1", "add_c_2"}


def test_device_assert_is_accepted_and_static_conditions_are_checked():
    @naiad.jit
    def k(x_ptr, n, C: tl.constexpr):
        tl.device_assert(n > 0, "n must be positive")
        tl.device_assert(C > 0, "C must be positive")
        tl.store(x_ptr, 1.0)

    compile_ir(k, {"x_ptr": "*fp32", "n": "i32"}, {"C": 1})
    with pytest.raises(CompilationError, match="device_assert failed: C must be positive"):
        compile_ir(k, {"x_ptr": "*fp32", "n": "i32"}, {"C": 0})
