"""Accuracy of the NVPTX math expansions, JIT-compiled for the host CPU (no GPU needed).

Only the hardware approximations (ex2.approx, rsqrt.approx) are replaced by libm on the host;
their own error (<= 2 ulp) is covered by the GPU test. Errors are in ulps of the result type.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nv_host_jit import host_function

RNG = np.random.default_rng(1234)
N = 20000


def ulp_error(got, ref, dtype):
    """|got - ref| in ulps of ``dtype``; 0 where both agree on inf/nan, inf where they don't."""
    ref = np.asarray(ref, np.float64)
    fi = np.finfo(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = np.floor(np.log2(np.maximum(np.abs(ref), fi.smallest_normal)))
        err = np.abs(got.astype(np.float64) - ref) / 2.0 ** (e - fi.nmant)
        ref_t = ref.astype(dtype)
    special = ~np.isfinite(ref_t) | ~np.isfinite(got)
    same = (got == ref_t) | (np.isnan(got) & np.isnan(ref_t))
    return np.where(special, np.where(same, 0.0, np.inf), err)


def _ref(fn, x):
    with np.errstate(all="ignore"):
        return fn(x.astype(np.float64))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _inputs(name, dtype):
    u = RNG.uniform
    big = 700.0 if dtype == np.float64 else 85.0
    sets = {
        "exp": [u(-big, big, N), u(-1, 1, N)],
        "exp2": [u(-1.4 * big, 1.4 * big, N), u(-1, 1, N)],
        "log": [np.exp(u(-700 if dtype == np.float64 else -85, 80, N)), u(0.5, 2, N),
                u(0.999, 1.001, N)],
        "sin": [u(-10, 10, N), u(-1e5, 1e5, N)],
        "erf": [u(-6, 6, N), u(-1, 1, N), u(-0.01, 0.01, N)],
    }
    sets["log2"] = sets["log"]
    sets["cos"] = sets["sin"]
    return np.concatenate(sets[name]).astype(dtype)


REFS = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
        "cos": np.cos, "erf": _erf}
# max ulps vs the float64 reference for f32; vs numpy's own float64 result for f64 (which is
# itself within ~0.5 ulp), so the f64 bounds include that slack.
F32_ULPS = {"exp": 1.5, "exp2": 1.0, "log": 1.5, "log2": 2.0, "sin": 2.0, "cos": 2.0, "erf": 2.0}
F64_ULPS = {"exp": 2.0, "exp2": 2.0, "log": 2.0, "log2": 2.5, "sin": 2.0, "cos": 2.0,
            "erf": 2.5}


@pytest.mark.parametrize("elem,dtype,bounds", [("f32", np.float32, F32_ULPS),
                                                ("f64", np.float64, F64_ULPS)])
@pytest.mark.parametrize("name", sorted(REFS))
def test_accuracy(name, elem, dtype, bounds):
    x = _inputs(name, dtype)
    got = host_function(name, elem, 1)(x)
    err = ulp_error(got, _ref(REFS[name], x), dtype)
    worst = int(np.argmax(err))
    assert err.max() <= bounds[name], (
        f"{name}/{elem}: {err.max():.2f} ulp at x={x[worst]!r}: got {got[worst]!r}")


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 5e-324, 1e-310,
                     3.4e38, 1.7e308, -1e-300], np.float64)


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("name", ["exp", "exp2", "log", "log2", "sin", "cos", "erf", "sqrt",
                                  "rsqrt", "floor", "ceil", "abs"])
def test_special_values(name, elem, dtype):
    with np.errstate(all="ignore"):
        x = SPECIALS.astype(dtype)
    ref_fn = dict(REFS, sqrt=np.sqrt, rsqrt=lambda v: 1 / np.sqrt(v), floor=np.floor,
                  ceil=np.ceil, abs=np.abs)[name]
    if name in ("sin", "cos"):  # documented domain: |x| < 2^30 (f32) / 2^50 (f64)
        x = x[~(np.abs(x) > 1e6)]
    got = host_function(name, elem, 1)(x)
    ref = _ref(ref_fn, x).astype(dtype)
    for xi, g, r in zip(x, got, ref):
        if np.isnan(r):
            assert np.isnan(g), f"{name}({xi!r}) = {g!r}, expected nan"
        elif np.isinf(r) or r == 0:
            assert g == r and np.signbit(g) == np.signbit(r), f"{name}({xi!r}) = {g!r} != {r!r}"
        else:
            assert abs(g - r) <= 4 * np.spacing(abs(r)), f"{name}({xi!r}) = {g!r} != {r!r}"


def test_sin_cos_large_arguments_stay_bounded():
    x = np.array([1e9, -3e20, 3.4e38, 2.0 ** 31], np.float32)
    for name in ("sin", "cos"):
        got = host_function(name, "f32", 1)(x)
        assert np.all(np.abs(got) <= 1.0)
    x64 = np.array([1e17, -1e300, 2.0 ** 60], np.float64)
    for name in ("sin", "cos"):
        got = host_function(name, "f64", 1)(x64)
        assert np.all(np.abs(got) <= 1.0)


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_fma_single_rounding(elem, dtype):
    a = RNG.uniform(-1, 1, N).astype(dtype)
    b = RNG.uniform(-1, 1, N).astype(dtype)
    c = RNG.uniform(-1, 1, N).astype(dtype)
    got = host_function("fma", elem, 3)(a, b, c)
    if dtype == np.float32:  # exact in float64, then one rounding
        ref = (a.astype(np.float64) * b + c).astype(np.float32)
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, a * b + c, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("elem,dtype,bits", [("u32", np.uint32, 32), ("i32", np.int32, 32),
                                             ("u64", np.uint64, 64), ("i64", np.int64, 64)])
def test_umulhi_and_abs(elem, dtype, bits):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    got = host_function("umulhi", elem, 2)(a, b)
    mask = (1 << bits) - 1
    ref = [((int(x) & mask) * (int(y) & mask)) >> bits for x, y in zip(a[:500], b[:500])]
    assert [int(v) & mask for v in got[:500]] == ref
    absv = host_function("abs", elem, 1)(a)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(absv, np.abs(a) if elem[0] == "i" else a)


def test_constants_match_their_generator():
    """_math_constants.py is exactly what tools/gen_math_constants.py produces."""
    import importlib.util
    import os

    import naiad_nvidia

    pkg = os.path.dirname(naiad_nvidia.__file__)
    gen_path = os.path.join(os.path.dirname(pkg), "tools", "gen_math_constants.py")
    spec = importlib.util.spec_from_file_location("nv_gen_math_constants", gen_path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(pkg, "lowering", "_math_constants.py")) as f:
        assert f.read() == gen.render(gen.build())
