"""Elementwise ops, casts and math on the reference executor, against independent references
(Python integers for integer semantics, float64 rounded once for float semantics)."""
import math

import numpy as np
import pytest

from naiad_reference import execute
from refkit import NP, K, poison, random_array, rng

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
BLOCK = 64
N = 200  # not a multiple of BLOCK: the tail program is masked


def ew_kernel(fn, in_types, out_type):
    params = {f"x{i}": "*" + t for i, t in enumerate(in_types)}
    params.update(out="*" + out_type, n="i32")
    k = K("ew", **params)
    offs = k.offsets(BLOCK)
    mask = k.cmp("lt", offs, k.splat(k.a["n"], [BLOCK]))
    xs = [k.load(k.addptr(k.a[f"x{i}"], offs), mask) for i in range(len(in_types))]
    k.store(k.addptr(k.a["out"], offs), fn(k, *xs), mask)
    return k.finish()


def run_ew(fn, inputs, in_types, out_type, n=N):
    m = ew_kernel(fn, in_types, out_type)
    out = poison(n + 7, NP[out_type])
    tail = out[n:].copy()
    execute(m, "ew", ((n + BLOCK - 1) // BLOCK,), [*inputs, out, n])
    # lanes past n are masked: the poison there must survive
    np.testing.assert_array_equal(out[n:].view(np.uint8), tail.view(np.uint8))
    return out[:n]


def wrap(v, t):
    bits = int(t[1:])
    v &= (1 << bits) - 1
    if t.startswith("i") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


INT_REF = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": tdiv, "rem": lambda a, b: a - b * tdiv(a, b),
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "max": max, "min": min,
}


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("name", list(INT_REF))
def test_integer_binary_matches_python_integers(name, t):
    r = rng()
    a = random_array(r, N, NP[t])
    b = random_array(r, N, NP[t])
    if name in ("div", "rem"):
        b[b == 0] = 3
        if t.startswith("i"):
            info = np.iinfo(NP[t])
            b[(a == info.min) & (b == -1)] = 5
        # small divisors too, so quotients are not all 0 / +-1
        b[::3] = random_array(r, b[::3].shape, NP[t], low=1, high=9)
        if t.startswith("i"):
            b[1::6] = -b[1::6]
    out = run_ew(lambda k, x, y: k.op(name, x, y), [a, b], [t, t], t)
    want = [wrap(INT_REF[name](int(x), int(y)), t) for x, y in zip(a, b)]
    assert [int(v) for v in out] == want


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("name", ["shl", "shr"])
def test_shifts_by_signedness(name, t):
    r = rng()
    bits = int(t[1:])
    a = random_array(r, N, NP[t])
    s = r.integers(0, bits, size=N).astype(NP[t])
    out = run_ew(lambda k, x, y: k.op(name, x, y), [a, s], [t, t], t)
    if name == "shl":
        want = [wrap(int(x) << int(y), t) for x, y in zip(a, s)]
    else:  # Python's >> on signed ints is arithmetic; unsigned values are non-negative
        want = [wrap(int(x) >> int(y), t) for x, y in zip(a, s)]
    assert [int(v) for v in out] == want


def test_integer_wraparound_at_type_width():
    a = np.array([127, -128, 100, -1] * 50, dtype=np.int8)
    b = np.array([1, -1, 100, -1] * 50, dtype=np.int8)
    out = run_ew(lambda k, x, y: k.op("add", x, y), [a, b], ["i8", "i8"], "i8")
    assert list(out[:4]) == [-128, 127, -56, -2]


def f64_rounded(fn, t, *xs):
    return fn(*(x.astype(np.float64) for x in xs)).astype(NP[t])


FLOAT_REF = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "rem": np.fmod, "max": np.fmax, "min": np.fmin}


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("name", list(FLOAT_REF))
def test_float_binary_correctly_rounded(name, t):
    r = rng()
    a = random_array(r, N, NP[t])
    b = random_array(r, N, NP[t])
    b[b == 0] = 1
    if name in ("max", "min"):
        a[::7] = np.nan
        b[3::11] = np.nan
    out = run_ew(lambda k, x, y: k.op(name, x, y), [a, b], [t, t], t)
    want = f64_rounded(FLOAT_REF[name], t, a, b)
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("name,ref", [("max", np.maximum), ("min", np.minimum)])
def test_float_max_min_propagate_nan_attr(name, ref):
    r = rng()
    a = random_array(r, N, np.float32)
    b = random_array(r, N, np.float32)
    a[::5] = np.nan
    out = run_ew(lambda k, x, y: k.op(name, x, y, propagate_nan=True), [a, b], ["f32", "f32"],
                 "f32")
    np.testing.assert_array_equal(out, ref(a, b))
    assert np.isnan(out[::5]).all()


def test_f16_rounds_after_every_op():
    # 2048 + 1 rounds back to 2048 in f16 (spacing 2); a second + 1 does too.
    a = np.full(N, 2048, np.float16)
    one = np.ones(N, np.float16)
    out = run_ew(lambda k, x, y: k.op("add", k.op("add", x, y), y), [a, one], ["f16", "f16"],
                 "f16")
    assert (out == 2048).all()


@pytest.mark.parametrize("t", FLOATS)
def test_fma_single_rounding(t):
    r = rng()
    a, b, c = (random_array(r, N, NP[t]) for _ in range(3))
    out = run_ew(lambda k, x, y, z: k.op("fma", x, y, z), [a, b, c], [t, t, t], t)
    exact = [float(x) * float(y) + float(z) for x, y, z in zip(a.astype(np.float64),
                                                                b.astype(np.float64),
                                                                c.astype(np.float64))]
    want = np.array(exact, dtype=np.float64).astype(NP[t])
    if t == "f64":
        np.testing.assert_allclose(out, want, rtol=1e-15, atol=1e-15)
    else:
        np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("t", INTS + FLOATS)
def test_neg(t):
    r = rng()
    a = random_array(r, N, NP[t])
    out = run_ew(lambda k, x: k.op("neg", x), [a], [t], t)
    if t in INTS:
        assert [int(v) for v in out] == [wrap(-int(x), t) for x in a]
    else:
        np.testing.assert_array_equal(out.astype(np.float64), -a.astype(np.float64))


@pytest.mark.parametrize("t", INTS + ["i1"])
def test_bitwise_not(t):
    r = rng()
    a = random_array(r, N, NP[t])
    out = run_ew(lambda k, x: k.op("not", x), [a], [t], t)
    if t == "i1":
        np.testing.assert_array_equal(out, ~a)
    else:
        assert [int(v) for v in out] == [wrap(~int(x), t) for x in a]


@pytest.mark.parametrize("t", ["i8", "i32", "i64", "u16"])
def test_integer_abs_wraps_at_minimum(t):
    r = rng()
    a = random_array(r, N, NP[t])
    if t.startswith("i"):
        a[0] = np.iinfo(NP[t]).min
    out = run_ew(lambda k, x: k.op("abs", x), [a], [t], t)
    assert [int(v) for v in out] == [wrap(abs(int(x)), t) for x in a]


@pytest.mark.parametrize("t", ["i32", "u32", "i64", "u64"])
def test_umulhi_is_high_half_of_unsigned_product(t):
    """The operands' bits multiply as unsigned numbers, as in Triton and the GPU lowerings
    (issue #13: the signed high half gave umulhi(-1, -1) == 0 on i32, Triton -2)."""
    r = rng()
    a = random_array(r, N, NP[t])
    b = random_array(r, N, NP[t])
    a[:3] = np.array([-1, -1, 5]).astype(NP[t])
    b[:3] = np.array([-1, 3, -7]).astype(NP[t])
    out = run_ew(lambda k, x, y: k.op("umulhi", x, y), [a, b], [t, t], t)
    bits = int(t[1:])
    mask = (1 << bits) - 1
    assert [int(v) for v in out] == [wrap(((int(x) & mask) * (int(y) & mask)) >> bits, t)
                                     for x, y in zip(a, b)]
    if t == "i32":
        assert int(out[0]) == -2


MATH = {"exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
        "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x), "sin": math.sin,
        "cos": math.cos, "erf": math.erf, "floor": math.floor, "ceil": math.ceil, "abs": abs}
RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-6, "f64": 1e-13}


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("name", list(MATH))
def test_math_functions(name, t):
    r = rng()
    positive = name in ("log", "log2", "sqrt", "rsqrt")
    a = random_array(r, N, NP[t], low=0.05 if positive else -3.0, high=3.0)
    out = run_ew(lambda k, x: k.op(name, x), [a], [t], t)
    want = np.array([MATH[name](float(x)) for x in a.astype(np.float64)])
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=RTOL[t], atol=RTOL[t])
    assert out.dtype == NP[t]


@pytest.mark.parametrize("t", INTS + FLOATS)
@pytest.mark.parametrize("pred", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(pred, t):
    r = rng()
    a = random_array(r, N, NP[t], low=0 if t in INTS else -2, high=5 if t in INTS else 2)
    b = random_array(r, N, NP[t], low=0 if t in INTS else -2, high=5 if t in INTS else 2)
    if t in FLOATS:
        a = np.round(a)
        b = np.round(b)  # many equal pairs
        a[::9] = np.nan
    out = run_ew(lambda k, x, y: k.cmp(pred, x, y), [a, b], [t, t], "i1")
    ops = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__",
           "ge": "__ge__"}
    if t in FLOATS:
        want = [getattr(float(x), ops[pred])(float(y)) for x, y in zip(a, b)]
    else:
        want = [getattr(int(x), ops[pred])(int(y)) for x, y in zip(a, b)]
    assert list(out) == want


@pytest.mark.parametrize("t", ["i8", "u64", "f16", "bf16", "f64"])
def test_select(t):
    r = rng()
    c = random_array(r, N, np.bool_)
    a = random_array(r, N, NP[t])
    b = random_array(r, N, NP[t])
    out = run_ew(lambda k, cc, x, y: k.op("select", cc, x, y, type=x.type), [c, a, b],
                 ["i1", t, t], t)
    np.testing.assert_array_equal(out, np.where(c, a, b))


def _cast_inputs(r, src, dst):
    if src in FLOATS:
        if dst in INTS:
            info = np.iinfo(NP[dst])
            lo = max(float(info.min), -60000.0)
            hi = min(float(info.max), 60000.0)
            if src == "f16":
                hi = min(hi, 60000.0)
            return random_array(r, N, NP[src], low=lo, high=hi)
        return random_array(r, N, NP[src], low=-1e3, high=1e3)
    if src == "i1":
        return random_array(r, N, np.bool_)
    if dst in FLOATS:
        info = np.iinfo(NP[src])
        return random_array(r, N, NP[src], low=max(info.min, -(1 << 20)),
                            high=min(info.max, 1 << 20))
    return random_array(r, N, NP[src])


def _cast_reference(a, src, dst):
    if dst == "i1":
        return [float(x) != 0 for x in a.astype(np.float64)] if src in FLOATS \
            else [int(x) != 0 for x in a]
    if src in FLOATS and dst in INTS:  # saturating, NaN -> 0 (docs/language.md)
        info = np.iinfo(NP[dst])
        return [0 if math.isnan(x) else min(max(math.trunc(x), int(info.min)), int(info.max))
                for x in a.astype(np.float64)]
    if src in FLOATS or dst in FLOATS:
        vals = a.astype(np.float64) if src in FLOATS else np.array([float(int(x)) for x in a])
        with np.errstate(over="ignore"):  # large ints overflow f16 to inf, as they should
            return vals.astype(NP[dst])
    return [wrap(int(x), dst) for x in a]


@pytest.mark.parametrize("dst", ["i1"] + INTS + FLOATS)
@pytest.mark.parametrize("src", ["i1"] + INTS + FLOATS)
def test_cast_matrix(src, dst):
    if src == dst:
        pytest.skip("identity")
    r = rng()
    a = _cast_inputs(r, src, dst)
    out = run_ew(lambda k, x: k.cast(x, dst), [a], [src], dst)
    want = _cast_reference(a, src, dst)
    if dst in FLOATS:
        np.testing.assert_array_equal(out.astype(np.float64),
                                      np.asarray(want).astype(np.float64))
    else:
        assert [int(v) for v in out] == [int(v) for v in want]


@pytest.mark.parametrize("src,dst", [("f32", "f16"), ("f32", "bf16"), ("f64", "f32"),
                                     ("f64", "f16"), ("f64", "bf16")])
def test_float_downcast_round_toward_zero(src, dst):
    r = rng()
    a = random_array(r, N, NP[src], low=-100, high=100)
    a[:3] = [1e30, -1e30, 0.0]  # overflow saturates to the largest finite value
    out = run_ew(lambda k, x: k.cast(x, dst, fp_downcast_rounding="rtz"), [a], [src], dst)
    exact = a.astype(np.float64)
    got = out.astype(np.float64)
    assert (np.abs(got) <= np.abs(exact)).all() and (np.sign(got) * np.sign(exact) >= 0).all()
    # nothing representable lies strictly between the result and the exact value: the next
    # value away from zero overshoots
    bits = out.view(np.dtype(f"u{out.dtype.itemsize}"))
    up = (bits + bits.dtype.type(1)).view(out.dtype).astype(np.float64)
    finite = np.isfinite(up) & (exact != got)
    assert (np.abs(up[finite]) > np.abs(exact[finite])).all()
    nearest = a.astype(np.float64).astype(NP[dst]).astype(np.float64)
    assert (got != nearest).any()


@pytest.mark.parametrize("src,dst", [("f32", "i32"), ("i32", "f32"), ("f16", "i16"),
                                     ("bf16", "u16"), ("f64", "u64"), ("u8", "i8")])
def test_bitcast_reinterprets_bits(src, dst):
    r = rng()
    a = random_array(r, N, NP[src])
    out = run_ew(lambda k, x: k.op("bitcast", x, type=dst), [a], [src], dst)
    np.testing.assert_array_equal(out.view(np.uint8), a.view(np.uint8))


def test_i1_arithmetic_is_mod_2():
    r = rng()
    a = random_array(r, N, np.bool_)
    b = random_array(r, N, np.bool_)
    out = run_ew(lambda k, x, y: k.op("add", x, y), [a, b], ["i1", "i1"], "i1")
    np.testing.assert_array_equal(out, a ^ b)
    out = run_ew(lambda k, x, y: k.op("mul", x, y), [a, b], ["i1", "i1"], "i1")
    np.testing.assert_array_equal(out, a & b)

