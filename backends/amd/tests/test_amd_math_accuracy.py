"""Accuracy of naiad_amd's own math expansions, run on the host CPU through MCJIT (same IR)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from amd_hostjit import compiled, ulp_error

RNG = np.random.default_rng(1234)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0])


def _check(name, elem, x, ref, max_ulp):
    dt = np.float32 if elem == "f32" else np.float64
    x = np.asarray(x, dtype=dt)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    for contract in (False, True):  # enable_fp_fusion (the default) lets LLVM contract a*b+c
        got = compiled(name, elem, contract)(x)
        err = ulp_error(got, want, dt)
        worst = int(np.argmax(err))
        assert err[worst] <= max_ulp, (f"{name}/{elem} (contract={contract}): {err[worst]} ulp at "
                                       f"x={x[worst]!r}: {got[worst]!r} vs {want[worst]!r}")


def test_exp_f64():
    x = np.concatenate([RNG.uniform(-745, 710, 50000), RNG.standard_normal(20000), SPECIAL,
                        [709.78, 709.79, -745.13, -746.0, 1e-300]])
    _check("exp", "f64", x, np.exp, 1)


def test_exp2_f64():
    x = np.concatenate([RNG.uniform(-1075, 1024, 50000), RNG.standard_normal(20000), SPECIAL, [1023.9, 1024.0, -1074.0, -1075.0]])
    _check("exp2", "f64", x, np.exp2, 1)


@pytest.mark.parametrize("name, ref, tol", [("log", np.log, 1), ("log2", np.log2, 2)])
def test_log_f64(name, ref, tol):
    x = np.concatenate([np.exp(RNG.uniform(-740, 709, 50000)), RNG.uniform(0.5, 2.0, 20000), SPECIAL,
                        [5e-324, 2.2e-308, 1.7976931348623157e308, -1.0, -np.inf]])
    _check(name, "f64", x, ref, tol)


@pytest.mark.parametrize("name, ref", [("sin", np.sin), ("cos", np.cos)])
def test_trig_f64(name, ref):
    x = np.concatenate([RNG.uniform(-10, 10, 30000), RNG.uniform(-1e6, 1e6, 30000), RNG.uniform(-1e12, 1e12, 10000), SPECIAL, [1e-310, np.pi, np.pi / 2]])
    _check(name, "f64", x, ref, 1)


@pytest.mark.parametrize("name, ref", [("sin", np.sin), ("cos", np.cos)])
def test_trig_f32(name, ref):
    x = np.concatenate([RNG.uniform(-10, 10, 30000), RNG.uniform(-1e5, 1e5, 30000), RNG.uniform(-1e6, 1e6, 10000), SPECIAL])
    _check(name, "f32", x, ref, 2)


@pytest.mark.parametrize("name, ref", [("sin", np.sin), ("cos", np.cos)])
@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_trig_huge_arguments_stay_in_range(name, ref, elem):
    dt = np.float32 if elem == "f32" else np.float64
    x = RNG.uniform(-3e38, 3e38, 20000).astype(dt)
    got = compiled(name, elem)(x)
    assert np.all(np.abs(got) <= 1)
    if elem == "f32":  # |err| stays small while k still fits the reduction
        x = RNG.uniform(-1e7, 1e7, 20000).astype(dt)
        assert np.max(np.abs(compiled(name, elem)(x) - ref(x.astype(np.float64)))) < 2e-7


@pytest.mark.parametrize("elem, tol", [("f32", 3), ("f64", 2)])
def test_erf(elem, tol):
    x = np.concatenate([RNG.uniform(-7, 7, 40000), RNG.standard_normal(10000) * 1e-3,
                        np.linspace(0.99, 1.01, 2001), np.linspace(3.9, 6.1, 2001), SPECIAL, [1e-30, -1e-30]])
    _check("erf", elem, x, np.vectorize(math.erf), tol)


def test_signed_zero_and_specials():
    for elem, dt in (("f32", np.float32), ("f64", np.float64)):
        sin = compiled("sin", elem)(np.array([-0.0, np.nan, np.inf], dt))
        assert np.signbit(sin[0]) and np.isnan(sin[1]) and np.isnan(sin[2])
        erf = compiled("erf", elem)(np.array([-0.0, np.inf, -np.inf, np.nan], dt))
        assert np.signbit(erf[0]) and erf[1] == 1 and erf[2] == -1 and np.isnan(erf[3])
    log = compiled("log", "f64")(np.array([0.0, -0.0, -1.0, np.inf, np.nan]))
    assert log[0] == -np.inf and log[1] == -np.inf and np.isnan(log[2]) and log[3] == np.inf and np.isnan(log[4])
    exp = compiled("exp", "f64")(np.array([np.inf, -np.inf, np.nan, 800.0, -800.0]))
    assert exp[0] == np.inf and exp[1] == 0 and np.isnan(exp[2]) and exp[3] == np.inf and exp[4] == 0


def test_exp_f32_is_exp2_of_the_rounded_product():
    """f32 exp is Triton's exp2(fl(x*log2 e)): its error is the product's rounding (scaled by
    ln2), so it grows with |x|. Bounds as documented in mathlib: <= 2 ulp for |x| <= 1, relative
    <= 4e-6 over the whole range (the host's exp2f stands in for v_exp_f32 here)."""
    small = RNG.uniform(-1, 1, 50000).astype(np.float32)
    _check("exp", "f32", small, np.exp, 2)
    wide = RNG.uniform(-103, 88.7, 50000).astype(np.float32)
    want = np.exp(wide.astype(np.float64))
    got = compiled("exp", "f32")(wide).astype(np.float64)
    normal = want > np.finfo(np.float32).tiny
    rel = np.abs(got[normal] - want[normal]) / want[normal]
    assert rel.max() <= 4e-6, f"exp/f32 relative error {rel.max():.3g}"
    spec = compiled("exp", "f32")(np.array([np.inf, -np.inf, np.nan, 89.0, -104.0, 0.0], np.float32))
    assert spec[0] == np.inf and spec[1] == 0 and np.isnan(spec[2]) and spec[3] == np.inf
    assert spec[4] == 0 and spec[5] == 1
