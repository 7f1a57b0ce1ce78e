"""Constant folding checked against numpy, for every scalar type and every foldable op.

Each case builds a function that computes ``op`` on random constants (plus edge values), runs
canonicalize, and compares the folded constants with numpy's answer for the same inputs.
Undefined cases (integer division by zero, INT_MIN / -1, out-of-range shifts) must stay
unfolded; out-of-range float->int casts saturate.
"""
from __future__ import annotations

import math
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from naiad.ir.parser import parse_module
from naiad.ir.printer import format_attr
from naiad.ir.verifier import verify
from naiad.passes import canonicalize

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
N = 12


def rng_for(*key):
    """A generator seeded by the test's parameters: fresh values per case, reproducible runs."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_values(tname, rng, n=N, special=True):
    dt = np.dtype(NP[tname])
    if tname == "i1":
        return rng.integers(0, 2, n).astype(bool)
    if tname in INTS:
        info = np.iinfo(dt)
        vals = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
        if special:
            edge = np.array([info.min, info.max, 0, 1] + ([-1] if info.min < 0 else []), dtype=dt)
            vals[:len(edge)] = edge[:n]
            rng.shuffle(vals)
        return vals
    vals = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    if special:
        edge = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dt)
        idx = rng.choice(n, size=len(edge), replace=False)
        vals[idx] = edge
    return vals


def fold(op_text_for, tname_in, operands, tname_out):
    """Fold ``op`` over columns of ``operands`` (lists of numpy arrays); returns a list with the
    folded Python value per lane, or None where the op was left unfolded."""
    n = len(operands[0])
    lines, results = [], []
    for i in range(n):
        names = []
        for j, col in enumerate(operands):
            v = col[i]
            py = bool(v) if tname_in[j] == "i1" else (int(v) if tname_in[j] in INTS else float(v))
            lines.append(f"  %a{j}_{i} = constant {{value = {format_attr(py)}}} : {tname_in[j]}")
            names.append(f"%a{j}_{i}")
        lines.append(f"  %r{i} = {op_text_for(names)} : {tname_out}")
        results.append(f"%r{i}")
    text = ("module {\nfunc @k() -> (" + ", ".join([tname_out] * n) +
            ") attributes {kernel = true} {\n" + "\n".join(lines) +
            f"\n  return {', '.join(results)}\n}}\n}}\n")
    m = parse_module(text)
    canonicalize(m)
    verify(m)
    ret = m.functions["k"].body.block.terminator
    out = []
    for v in ret.operands:
        d = v.defining_op
        out.append(d.attrs["value"] if d is not None and d.name == "constant" else None)
    return out


def same(got, want, tname):
    """Bitwise-equal floats (NaN == NaN, -0.0 != 0.0), equal ints/bools."""
    if tname in FLOATS:
        g, w = float(got), float(want)
        if math.isnan(w):
            return math.isnan(g)
        return g == w and math.copysign(1, g) == math.copysign(1, w)
    return got == want


# -- integer binary ops ----------------------------------------------------------------------------
def _int_ref(op, a, b, tname):
    dt = np.dtype(NP[tname])
    udt = np.dtype(f"u{dt.itemsize}") if dt.kind == "i" else dt
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return (a.view(udt) * b.view(udt)).view(dt)
        if op == "div":
            q = np.floor_divide(a, b)
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            return q + fix.astype(dt)
        if op == "rem":
            return np.fmod(a, b)
        if op in ("and", "or", "xor"):
            return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](a, b)
        if op == "shl":
            return np.left_shift(a.view(udt), b.view(udt)).view(dt)
        if op == "shr":
            return np.right_shift(a, b)
        if op == "max":
            return np.maximum(a, b)
        if op == "min":
            return np.minimum(a, b)
        if op == "umulhi":  # the high half of the product of the bits taken as unsigned
            bw = dt.itemsize * 8
            hi = [(int(x) * int(y)) >> bw for x, y in zip(a.view(udt), b.view(udt))]
            return np.array(hi, dtype=udt).view(dt)
    raise AssertionError(op)


INT_BINARY = ["add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max", "min",
              "umulhi"]


@pytest.mark.parametrize("tname", INTS)
@pytest.mark.parametrize("op", INT_BINARY)
def test_fold_int_binary_matches_numpy(op, tname):
    rng = rng_for(op, tname)
    dt = np.dtype(NP[tname])
    a, b = random_values(tname, rng), random_values(tname, rng)
    if op in ("shl", "shr"):
        b = rng.integers(0, dt.itemsize * 8, size=N).astype(dt)
    if op in ("div", "rem"):
        b[b == 0] = 3
        if dt.kind == "i":
            b[(a == np.iinfo(dt).min) & (b == -1)] = 7
    got = fold(lambda n: f"{op} {n[0]}, {n[1]}", [tname, tname], [a, b], tname)
    want = _int_ref(op, a, b, tname)
    for i in range(N):
        assert got[i] is not None, f"{op} {a[i]}, {b[i]} : {tname} was not folded"
        assert got[i] == int(want[i]), f"{op} {a[i]}, {b[i]} : {tname} -> {got[i]}, numpy {want[i]}"


@pytest.mark.parametrize("tname", ["i8", "i32", "u16", "i64", "u64"])
def test_undefined_integer_ops_stay_unfolded(tname):
    dt = np.dtype(NP[tname])
    bw = dt.itemsize * 8
    lo = int(np.iinfo(dt).min)
    cases = [("div", 5, 0), ("rem", -3 if lo else 3, 0), ("shl", 1, bw), ("shr", 1, bw + 3)]
    if lo:
        cases += [("div", lo, -1), ("rem", lo, -1), ("shl", 1, -1)]
    for op, x, y in cases:
        got = fold(lambda n: f"{op} {n[0]}, {n[1]}", [tname, tname],
                   [np.array([x], dtype=object), np.array([y], dtype=object)], tname)
        assert got == [None], f"{op} {x}, {y} : {tname} must not fold, got {got}"


PREDS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("tname", INTS + FLOATS)
@pytest.mark.parametrize("pred", list(PREDS))
def test_fold_cmp_matches_numpy(pred, tname):
    rng = rng_for("cmp", pred, tname)
    a, b = random_values(tname, rng), random_values(tname, rng)
    b[:3] = a[:3]  # some equal pairs
    got = fold(lambda n: f'cmp {n[0]}, {n[1]} {{pred = "{pred}"}}', [tname, tname], [a, b], "i1")
    want = PREDS[pred](a.astype(np.float64) if tname == "bf16" else a, b.astype(np.float64)
                       if tname == "bf16" else b)
    assert got == [bool(w) for w in want]


# -- integer and boolean unary ops ------------------------------------------------------------------
@pytest.mark.parametrize("tname", INTS)
@pytest.mark.parametrize("op", ["neg", "not", "abs"])
def test_fold_int_unary_matches_numpy(op, tname):
    rng = rng_for(op, tname)
    a = random_values(tname, rng)
    dt = np.dtype(NP[tname])
    got = fold(lambda n: f"{op} {n[0]}", [tname], [a], tname)
    with np.errstate(all="ignore"):
        if op == "neg":
            want = (np.zeros_like(a) - a).astype(dt)
        elif op == "not":
            want = np.invert(a)
        else:
            want = np.where(a < 0, np.zeros_like(a) - a, a).astype(dt) if dt.kind == "i" else a
    assert got == [int(w) for w in want]


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_fold_bool_logic_matches_numpy(op):
    rng = rng_for("i1", op)
    a, b = random_values("i1", rng), random_values("i1", rng)
    got = fold(lambda n: f"{op} {n[0]}, {n[1]}", ["i1", "i1"], [a, b], "i1")
    want = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](a, b)
    assert got == [bool(w) for w in want]
    got = fold(lambda n: f"not {n[0]}", ["i1"], [a], "i1")
    assert got == [bool(w) for w in np.logical_not(a)]


# -- float ops -------------------------------------------------------------------------------------
FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "rem": np.fmod, "max": np.fmax, "min": np.fmin}


@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("op", list(FLOAT_BINARY))
def test_fold_float_binary_matches_numpy(op, tname):
    rng = rng_for(op, tname)
    a, b = random_values(tname, rng), random_values(tname, rng)
    got = fold(lambda n: f"{op} {n[0]}, {n[1]}", [tname, tname], [a, b], tname)
    with np.errstate(all="ignore"):
        want = FLOAT_BINARY[op](a, b).astype(NP[tname])
    for i in range(N):
        if op in ("max", "min") and a[i] == 0 and b[i] == 0:
            # IEEE maxNum/minNum leave the sign of max(+0, -0) unspecified (numpy builds differ)
            assert got[i] is not None and float(got[i]) == 0.0
            continue
        assert got[i] is not None and same(got[i], want[i], tname), \
            f"{op} {a[i]}, {b[i]} : {tname} -> {got[i]}, numpy {want[i]}"


@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("op,ref", [("max", np.maximum), ("min", np.minimum)])
def test_fold_float_minmax_propagating_nan(op, ref, tname):
    rng = rng_for(op, "nan", tname)
    a, b = random_values(tname, rng), random_values(tname, rng)
    got = fold(lambda n: f"{op} {n[0]}, {n[1]} {{propagate_nan = true}}", [tname, tname], [a, b],
               tname)
    with np.errstate(all="ignore"):
        want = ref(a, b)
    assert all(same(g, w, tname) for g, w in zip(got, want))
    assert any(math.isnan(g) for g in got)


EXACT_UNARY = {"neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
               "sqrt": np.sqrt}
APPROX_UNARY = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
                "cos": np.cos, "rsqrt": lambda x: 1.0 / np.sqrt(x),
                "erf": np.vectorize(math.erf, otypes=[np.float64])}


@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("op", list(EXACT_UNARY))
def test_fold_exact_float_unary_matches_numpy(op, tname):
    rng = rng_for(op, tname)
    a = random_values(tname, rng)
    got = fold(lambda n: f"{op} {n[0]}", [tname], [a], tname)
    with np.errstate(all="ignore"):
        want = EXACT_UNARY[op](a).astype(NP[tname])
    for i in range(N):
        assert same(got[i], want[i], tname), f"{op} {a[i]} : {tname} -> {got[i]}, numpy {want[i]}"


@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("op", list(APPROX_UNARY))
def test_fold_math_functions_within_an_ulp_of_numpy(op, tname):
    rng = rng_for(op, tname)
    a = random_values(tname, rng)
    if op in ("log", "log2", "rsqrt"):
        a = np.abs(a)
    got = fold(lambda n: f"{op} {n[0]}", [tname], [a], tname)
    with np.errstate(all="ignore"):
        exact = APPROX_UNARY[op](a.astype(np.float64))
        want = exact.astype(NP[tname])
    for i in range(N):
        g, w = float(got[i]), float(want[i])
        if math.isnan(w) or math.isinf(w):
            assert same(g, w, tname), f"{op}({a[i]}) -> {g}, numpy {w}"
            continue
        ulp = float(np.spacing(np.abs(want[i].astype(np.float32 if tname == "bf16" else NP[tname]))))
        if tname == "bf16":
            ulp = max(ulp, abs(w) * 2.0 ** -7)
        assert abs(g - w) <= ulp, f"{op}({a[i]}) : {tname} -> {g}, numpy {w}"


@pytest.mark.parametrize("tname", FLOATS)
def test_fold_fma_single_rounding(tname):
    rng = rng_for("fma", tname)
    a, b, c = (random_values(tname, rng, special=False) for _ in range(3))
    got = fold(lambda n: f"fma {n[0]}, {n[1]}, {n[2]}", [tname] * 3, [a, b, c], tname)
    for i in range(N):
        if tname == "f64":
            exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            want = float(exact)
        else:  # the product is exact in f64 and one f64 rounding is far below these types' ulp
            with np.errstate(all="ignore"):
                want = float((np.float64(a[i]) * np.float64(b[i]) + np.float64(c[i]))
                             .astype(NP[tname]))
        assert same(got[i], want, tname), f"fma({a[i]}, {b[i]}, {c[i]}) -> {got[i]}, want {want}"


# -- casts -----------------------------------------------------------------------------------------
ALL = ["i1"] + INTS + FLOATS


def _cast_ref(a, src, dst):
    with np.errstate(all="ignore"):
        if dst == "i1":
            return a != 0
        if src in FLOATS and dst in INTS:
            return np.trunc(a.astype(np.float64)).astype(NP[dst])
        return a.astype(NP[dst])


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_fold_cast_matches_numpy(src, dst):
    if src == dst:
        return
    rng = rng_for("cast", src, dst)
    a = random_values(src, rng, special=src in FLOATS and dst not in INTS)
    if src in FLOATS and dst in INTS:
        # only in-range values have a defined result (others: see test_cast_out_of_range)
        info = np.iinfo(NP[dst])
        f = a.astype(np.float64)
        ok = np.isfinite(f) & (np.trunc(f) >= info.min) & (np.trunc(f) <= info.max)
        a = np.where(ok, a, np.array(1.5, dtype=NP[src]).astype(NP[src]))
    if src in ("i64", "u64", "i32", "u32") and dst == "bf16":
        a = (a % (1 << 24)).astype(NP[src])  # numpy rounds these twice (via f32): stay exact
    if src == "f64" and dst == "bf16":
        a = a.astype(np.float32).astype(np.float64)  # one rounding f32 -> bf16 in numpy too
    got = fold(lambda n: f"cast {n[0]}", [src], [a], dst)
    want = _cast_ref(a, src, dst)
    for i in range(N):
        w = bool(want[i]) if dst == "i1" else (int(want[i]) if dst in INTS else float(want[i]))
        assert got[i] is not None and same(got[i], w, dst), \
            f"cast {a[i]} : {src} -> {dst} gave {got[i]}, numpy {w}"


def _nearest_bf16(exact: Fraction) -> float:
    """Round-to-nearest-even bf16 of an exact value, by comparing the two bf16 neighbours."""
    approx = np.array([float(exact)], dtype=np.float32).astype(ml_dtypes.bfloat16)
    bits = int(approx.view(np.uint16)[0])
    cands = []
    for d in (-1, 0, 1):
        c = np.array([bits + d], dtype=np.uint16).view(ml_dtypes.bfloat16)[0]
        cands.append((abs(Fraction(float(c)) - exact), (bits + d) & 1, float(c)))
    cands.sort()
    return cands[0][2]


@pytest.mark.parametrize("value,src", [(2 ** 24 + 2 ** 16 + 1, "i64"), (2 ** 40 + 2 ** 32 + 3, "u64"),
                                       (1 + 2.0 ** -8 + 2.0 ** -40, "f64")])
def test_cast_to_bf16_rounds_once(value, src):
    got = fold(lambda n: f"cast {n[0]}", [src], [np.array([value], dtype=object)], "bf16")
    assert got[0] == _nearest_bf16(Fraction(value))


@pytest.mark.parametrize("src,dst,value,want", [
    ("f32", "i32", float("nan"), 0), ("f32", "i8", 300.0, 127), ("f32", "i8", -300.5, -128),
    ("f64", "u32", -1.0, 0), ("f16", "i16", float("inf"), 32767),
    ("f16", "u8", float("-inf"), 0), ("f64", "i64", 2.0 ** 63, 2 ** 63 - 1),
    ("f64", "u64", 2.0 ** 64, 2 ** 64 - 1), ("bf16", "i32", -3.0e38, -2 ** 31)])
def test_cast_out_of_range_float_to_int_saturates(src, dst, value, want):
    """Saturating, NaN -> 0: what every backend computes (issue #13)."""
    got = fold(lambda n: f"cast {n[0]}", [src], [np.array([value], dtype=object)], dst)
    assert got == [want]


SAME_WIDTH = [("i8", "u8"), ("i16", "f16"), ("u16", "bf16"), ("f16", "bf16"), ("i32", "f32"),
              ("u32", "i32"), ("f64", "i64"), ("u64", "f64")]


@pytest.mark.parametrize("src,dst", SAME_WIDTH + [(b, a) for a, b in SAME_WIDTH])
def test_fold_bitcast_matches_numpy_view(src, dst):
    rng = rng_for("bitcast", src, dst)
    a = random_values(src, rng, special=src not in FLOATS)
    if src in FLOATS:
        a = a[np.isfinite(a.astype(np.float64))]
    got = fold(lambda n: f"bitcast {n[0]}", [src], [a], dst)
    want = a.view(NP[dst])
    for g, w in zip(got, want):
        w = int(w) if dst in INTS else float(w)
        assert g is not None and same(g, w, dst)


# -- tensors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tname", ["i32", "u8", "f16", "f32"])
def test_fold_on_splat_valued_tensors(tname):
    rng = rng_for("tensor", tname)
    a, b = random_values(tname, rng, special=False), random_values(tname, rng, special=False)
    py = (lambda v: int(v)) if tname in INTS else (lambda v: float(v))
    t = f"tensor<4x8x{tname}>"
    text = f"""module {{
func @k() -> ({t}, tensor<4x8xi1>) attributes {{kernel = true}} {{
  %a = constant {{value = {format_attr(py(a[0]))}}} : {tname}
  %b = constant {{value = {format_attr(py(b[0]))}}} : {t}
  %sa = splat %a : {t}
  %s = add %sa, %b : {t}
  %m = mul %s, %b : {t}
  %c = cmp %m, %b {{pred = "lt"}} : tensor<4x8xi1>
  return %m, %c
}}
}}
"""
    m = parse_module(text)
    canonicalize(m)
    verify(m)
    ops = list(m.functions["k"].walk())
    assert [op.name for op in ops] == ["constant", "constant", "return"]
    with np.errstate(all="ignore"):
        s = (a[:1] + b[:1]).astype(NP[tname])
        mm = (s * b[:1]).astype(NP[tname])
        c = mm < b[:1]
    assert str(ops[0].results[0].type) == t
    assert same(ops[0].attrs["value"], py(mm[0]), tname)
    assert ops[1].attrs["value"] == bool(c[0])


# -- agreement with the reference executor (the project's semantics oracle) -------------------
@pytest.mark.parametrize("tname", ["i1"] + INTS + FLOATS)
def test_folding_agrees_with_the_reference_executor(tname):
    """Folding an exact op must give what naiad_reference computes at run time (transcendental
    functions excepted: folding rounds an f64 result once, the executor uses numpy per type)."""
    arith = pytest.importorskip("naiad_reference.runtime.arith")
    from naiad.ir.types import ScalarType
    from naiad.passes import scalar_eval as se

    t = ScalarType(tname)
    rng = rng_for("reference", tname)
    a, b = random_values(tname, rng, n=40), random_values(tname, rng, n=40)
    py = (lambda v: bool(v)) if tname == "i1" else (lambda v: float(v)) if tname in FLOATS \
        else (lambda v: int(v))
    ops = ["add", "sub", "mul", "div", "rem", "max", "min"]
    if tname not in FLOATS:
        ops += ["and", "or", "xor"] + (["shl", "shr", "umulhi"] if tname != "i1" else [])
    mismatches = []
    with np.errstate(all="ignore"):
        for op in ops:
            bb = b
            if op in ("shl", "shr"):
                bb = (np.abs(b.astype(np.int64)) % (np.dtype(NP[tname]).itemsize * 8)).astype(NP[tname])
            for attrs in ([{}, {"propagate_nan": True}] if op in ("max", "min") else [{}]):
                want = arith.umulhi(a, bb, t) if op == "umulhi" else \
                    arith.binary(op, a, bb, t, attrs)
                for x, y, w in zip(a, bb, want):
                    got = se.eval_binary(op, py(x), py(y), t, attrs)
                    if got is not None and not same(got, py(w), tname):
                        mismatches.append((op, x, y, got, w))
        unary = {"neg": lambda v: arith.neg(v, t), "abs": lambda v: arith.math_unary("abs", v, t)}
        if tname in FLOATS:
            unary.update({n: (lambda v, n=n: arith.math_unary(n, v, t))
                          for n in ("sqrt", "floor", "ceil")})
        else:
            unary["not"] = lambda v: arith.bitnot(v, t)
        for op, ref in unary.items():
            for x, w in zip(a, ref(a)):
                got = se.eval_unary(op, py(x), t)
                if got is not None and not same(got, py(w), tname):
                    mismatches.append((op, x, got, w))
        for dst in ["i1"] + INTS + ["f16", "f32", "f64"]:
            d = ScalarType(dst)
            for x, w in zip(a, arith.cast(a, t, d, {})):
                got = se.eval_cast(py(x), t, d)
                want = bool(w) if dst == "i1" else float(w) if dst in FLOATS else int(w)
                if got is not None and not same(got, want, dst):
                    mismatches.append(("cast", dst, x, got, w))
    assert not mismatches, mismatches[:5]
