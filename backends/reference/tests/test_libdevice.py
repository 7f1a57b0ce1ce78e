"""tl.extra.libdevice on the reference executor: each function against a float64 (or long
double) numpy value, in ulps of the result type, on fresh random inputs."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))

import naiad  # noqa: E402
from naiad.errors import CompilationError  # noqa: E402
import libdevice_kernels as lk  # noqa: E402

N = 2048
LPI = np.longdouble("3.14159265358979323846264338327950288")


def _sinpi_ref(x):
    """sin(pi x) with the reduction done exactly in float64 (x - 2 rint(x/2), then 1 - r for
    |r| > 1/2: Sterbenz), so only the small, exact u meets long double pi: pi * x itself in long
    double is off by up to ~40 float64 ulps of the result near its zeros (a wrong oracle)."""
    r = x - 2 * np.rint(x / 2)
    u = np.where(np.abs(r) > 0.5, np.copysign(1.0, r) - r, r)
    return np.sin(LPI * u.astype(np.longdouble)).astype(np.float64)


def _cospi_ref(x):
    """cos(pi x) = sin(pi (1/2 - |r|)); 1/2 - |r| is exact for |r| >= 1/4 (near the zeros)."""
    r = x - 2 * np.rint(x / 2)
    return _sinpi_ref(0.5 - np.abs(r))


# name: (reference, low, high, max ulp f32, max ulp f64)
UNARY = {
    "asin": (np.arcsin, -1, 1, 4, 4), "acos": (np.arccos, -1, 1, 4, 3),
    "atan": (np.arctan, -50, 50, 3, 2), "tan": (np.tan, -3, 3, 4, 3),
    "sinh": (np.sinh, -30, 30, 4, 3), "cosh": (np.cosh, -30, 30, 3, 2),
    "tanh": (np.tanh, -10, 10, 3, 3), "asinh": (np.arcsinh, -100, 100, 3, 3),
    "acosh": (np.arccosh, 1, 100, 3, 3), "atanh": (np.arctanh, -0.999, 0.999, 4, 4),
    "log1p": (np.log1p, -0.9, 10, 4, 3), "expm1": (np.expm1, -5, 5, 5, 3),
    "exp10": (lambda x: 10.0 ** x, -30, 30, 3, 2), "log10": (np.log10, 1e-3, 1e5, 3, 3),
    "cbrt": (np.cbrt, -1000, 1000, 2, 2), "trunc": (np.trunc, -100, 100, 0, 0),
    "rint": (np.rint, -100, 100, 0, 0), "nearbyint": (np.rint, -100, 100, 0, 0),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), -100, 100, 0, 0),
    "sinpi": (_sinpi_ref, -10, 10, 2, 4), "cospi": (_cospi_ref, -10, 10, 2, 4),
    "exp": (np.exp, -20, 20, 3, 2), "sqrt": (np.sqrt, 0, 100, 1, 1),
}
BINARY = {
    "atan2": (np.arctan2, 3, 3), "pow": (np.power, 1, None), "hypot": (np.hypot, 2, 2),
    "fdim": (lambda a, b: np.maximum(a - b, 0), 1, 1), "copysign": (np.copysign, 0, 0),
    "fmod": (np.fmod, 0, 0), "fmin": (np.fmin, 0, 0), "fmax": (np.fmax, 0, 0),
}


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


def ulps(got, want, dt) -> float:
    got = got.astype(np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    exact = (got == want) | both_nan
    spacing = np.maximum(np.spacing(np.abs(want).astype(dt)).astype(np.float64),
                         np.finfo(dt).tiny)
    err = np.where(exact, 0.0, np.abs(got - want) / spacing)
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    ref, lo, hi, ulp32, ulp64 = UNARY[name]
    x = np.random.default_rng().uniform(lo, hi, N).astype(dtype)
    if name in ("rint", "nearbyint", "round"):
        x[:200] = np.floor(x[:200]) + 0.5       # ties
    out = np.full(N, np.nan, dtype)
    lk.unary_kernel[(1,)](x, out, N, name)
    bound = ulp32 if dtype == np.float32 else ulp64
    assert ulps(out, ref(x.astype(np.float64)), dtype) <= bound


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype):
    ref, ulp32, ulp64 = BINARY[name]
    rng = np.random.default_rng()
    x, y = rng.uniform(-5, 5, N).astype(dtype), rng.uniform(-5, 5, N).astype(dtype)
    if name == "pow":
        x = np.abs(x)
    out = np.full(N, np.nan, dtype)
    lk.binary_kernel[(1,)](x, y, out, N, name)
    want = ref(x.astype(np.float64), y.astype(np.float64))
    if name == "pow" and dtype == np.float64:
        # exp2(y * log2 x): log2's rounding error is scaled by |y log2 x| (docs/language.md:
        # <= 2 max(1, |y log2 x|) ulp), so the bound is per element
        scale = np.maximum(1.0, np.abs(y * np.log2(x)))
        err = np.where(out == want, 0.0,
                       np.abs(out - want) / np.maximum(np.spacing(np.abs(want)),
                                                       np.finfo(np.float64).tiny))
        assert (err <= 2 * scale).all(), (err / scale).max()
        return
    bound = ulp32 if dtype == np.float32 else ulp64
    assert ulps(out, want, dtype) <= bound


def test_special_values():
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0], np.float32)
    out = np.full(8, 7.0, np.float32)
    for name, ref in (("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan), ("tanh", np.tanh),
                      ("expm1", np.expm1), ("cbrt", np.cbrt), ("sinh", np.sinh)):
        with np.errstate(invalid="ignore"):
            want = ref(x)
        lk.unary_kernel[(1,)](x, out, 8, name)
        special = ~np.isfinite(want) | (want == 0)   # nan, +-inf and signed zeros: exact
        np.testing.assert_array_equal(out[special], want[special], err_msg=name)
        assert (np.signbit(out) == np.signbit(want))[~np.isnan(want)].all(), name
        assert ulps(out[~special], want[~special].astype(np.float64), np.float32) <= 4, name


@pytest.mark.parametrize("name,ref", [("asin", np.arcsin), ("acos", np.arccos)])
def test_arc_sine_and_cosine_across_the_half_switch(name, ref):
    """Dense inputs around |x| = 1/2, where the series hands over to pi/2 - 2 asin(sqrt(..)),
    and near +-1, where the sqrt argument 1 - |x| is tiny."""
    edges = [0.5, -0.5, 1.0, -1.0]
    x = np.concatenate([e + np.linspace(-1e-3, 1e-3, 2048) for e in edges])
    x = np.clip(x, -1, 1).astype(np.float32)
    out = np.full(x.size, np.nan, np.float32)
    lk.unary_kernel[(1,)](x, out, x.size, name)
    assert ulps(out, ref(x.astype(np.float64)), np.float32) <= 4


def test_erfc_absolute_accuracy_and_float16():
    x = np.random.default_rng().uniform(-3, 3, N).astype(np.float16)
    out = np.full(N, np.nan, np.float16)
    lk.unary_kernel[(1,)](x, out, N, "erfc")
    want = np.array([math.erfc(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(out.astype(np.float64), want, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_integer_bit_functions(dtype):
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    x = np.random.default_rng().integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:3] = [0, 1, info.max]
    u = [int(v) & ((1 << bits) - 1) for v in x]
    want = {"popc": [bin(v).count("1") for v in u],
            "clz": [bits - v.bit_length() for v in u],
            "ffs": [(v & -v).bit_length() for v in u]}
    for name, values in want.items():
        out = np.full(N, -7, np.int32)
        lk.unary_kernel[(1,)](x, out, N, name)
        np.testing.assert_array_equal(out, np.array(values, np.int32), err_msg=name)
    out = np.zeros(N, dtype)
    lk.unary_kernel[(1,)](x, out, N, "brev")
    rev = [int(format(v, f"0{bits}b")[::-1], 2) for v in u]
    np.testing.assert_array_equal(out.view(f"u{bits // 8}"), np.array(rev, f"u{bits // 8}"))


def test_tutorial_07_asin():
    n = 1000
    x = np.random.default_rng().random(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    lk.asin_kernel[(naiad.cdiv(n, 256),)](x, y, n, BLOCK_SIZE=256)
    np.testing.assert_allclose(y, np.arcsin(x), rtol=1e-6, atol=1e-7)


def test_unknown_function_is_named():
    with pytest.raises(CompilationError, match="j0"):
        lk.unary_kernel[(1,)](np.ones(4, np.float32), np.ones(4, np.float32), 4, "j0")


def test_integer_operand_is_an_error():
    with pytest.raises(CompilationError, match="libdevice.asin needs a floating-point operand"):
        lk.unary_kernel[(1,)](np.ones(4, np.int32), np.ones(4, np.int32), 4, "asin")
