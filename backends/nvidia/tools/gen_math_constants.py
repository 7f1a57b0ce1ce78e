"""Regenerate ``naiad_nvidia/lowering/_math_constants.py``: the constants of the NVPTX math expansions.

Why a generator: every constant (split pi/2 and ln 2, Taylor and Chebyshev coefficients) is
derived here from first principles with 90-digit ``decimal`` arithmetic, so the numbers in the
backend are reproducible and auditable, and the emitted binary never depends on a platform's
floating-point library. Run from the repository root:

    .venv/bin/python backends/nvidia/tools/gen_math_constants.py > \
        backends/nvidia/naiad_nvidia/lowering/_math_constants.py
"""
from __future__ import annotations

import struct
from decimal import Decimal as D, getcontext
from fractions import Fraction
from math import factorial

getcontext().prec = 90

PI = D("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803"
       "482534211706798214808651328230664709384460955058223172535940812848111745028410270193852")
LN2 = D(2).ln()
LOG2E = 1 / LN2
SQRTPI = PI.sqrt()


def f64(x) -> float:
    return float(x)


def f32(x) -> float:
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def split(value: D, rnd, parts: int) -> list[float]:
    """Split ``value`` into ``parts`` floats whose exact sum approximates it (Cody-Waite)."""
    out, rest = [], value
    for _ in range(parts):
        c = rnd(rest)
        out.append(c)
        rest -= D(c)
    return out


def quantize(value: D, bits: int) -> float:
    """``value`` (in [0.5, 1)) rounded to ``bits`` significant bits, so ``k * it`` is exact."""
    scale = D(2) ** bits
    return float((value * scale).to_integral_value() / scale)


def dcos(x: D) -> D:
    s, term, n = D(0), D(1), 0
    while abs(term) > D(10) ** -85:
        s += term
        n += 2
        term = -term * x * x / (n * (n - 1))
    return s


def erf_dec(x: D) -> D:
    s, term, n, x2 = D(0), x, 0, x * x
    while True:
        t = term / (2 * n + 1)
        s += t
        if abs(t) < D(10) ** -75:
            return 2 * s / SQRTPI
        n += 1
        term = -term * x2 / n


def erfcx_dec(x: D) -> D:
    """erfc(x) * exp(x^2), the smooth factor of erfc for x >= 1."""
    return (1 - erf_dec(x)) * (x * x).exp()


def chebyshev_to_monomial(a: float, b: float, deg: int, fn) -> list[D]:
    """Interpolate ``fn`` on [a, b] at Chebyshev nodes (exact nodes, 90 digits) and return the
    monomial coefficients (low to high) in ``u = (2x - a - b) / (b - a)``."""
    n = deg + 1
    a_, b_ = D(a), D(b)
    us = [dcos(PI * (j + D("0.5")) / n) for j in range(n)]
    fs = [fn(a_ + (b_ - a_) * (u + 1) / 2) for u in us]
    cheb = []
    for k in range(n):
        s = D(0)
        for u, fv in zip(us, fs):
            t0, t1 = D(1), u
            if k == 0:
                tk = t0
            else:
                for _ in range(k - 1):
                    t0, t1 = t1, 2 * u * t1 - t0
                tk = t1
            s += fv * tk
        cheb.append(s / n if k == 0 else 2 * s / n)
    # T_k as monomials (exact integer arithmetic), then sum.
    polys = [[1], [0, 1]]
    for k in range(2, n):
        p = [0] + [2 * c for c in polys[k - 1]]
        for i, c in enumerate(polys[k - 2]):
            p[i] -= c
        polys.append(p)
    mono = [D(0)] * n
    for ck, pk in zip(cheb, polys):
        for i, c in enumerate(pk):
            mono[i] += ck * c
    return mono


def taylor_erf(terms: int) -> list[D]:
    """erf(x) = x * sum_n c_n x^(2n): c_n = 2/sqrt(pi) (-1)^n / (n! (2n+1))."""
    return [2 / SQRTPI * D((-1) ** n) / D(factorial(n) * (2 * n + 1)) for n in range(terms)]


def frac(q: Fraction) -> D:
    return D(q.numerator) / D(q.denominator)


def build() -> dict[str, object]:
    c: dict[str, object] = {}
    for tag, rnd, cw_bits in (("F32", f32, 16), ("F64", f64, 42)):
        c[f"{tag}_LOG2E"] = rnd(LOG2E)
        c[f"{tag}_LOG2E_LO"] = rnd(LOG2E - D(rnd(LOG2E)))
        c[f"{tag}_LN2"] = rnd(LN2)
        c[f"{tag}_LN2_LO"] = rnd(LN2 - D(rnd(LN2)))
        hi = quantize(LN2, cw_bits)
        c[f"{tag}_LN2_CW_HI"] = hi
        c[f"{tag}_LN2_CW_LO"] = rnd(LN2 - D(hi))
        c[f"{tag}_TWO_OVER_PI"] = rnd(2 / PI)
        c[f"{tag}_PIO2"] = split(PI / 2, rnd, 3)
    # log: R(z) = z * P(z), P = 2/3, 2/5, 2/7, ... (atanh series in s = f / (2 + f)).
    c["F32_LOG_P"] = [f32(frac(Fraction(2, 2 * k + 1))) for k in range(1, 6)]
    c["F64_LOG_P"] = [f64(frac(Fraction(2, 2 * k + 1))) for k in range(1, 11)]
    # exp (f64): Taylor 1/n!, n = 0..13 on |r| <= ln2/2.
    c["F64_EXP_P"] = [f64(frac(Fraction(1, factorial(n)))) for n in range(14)]
    # sin(r) = r + r z S(z), cos(r) = 1 - z/2 + z^2 C(z).
    c["F32_SIN_P"] = [f32(frac(Fraction((-1) ** k, factorial(2 * k + 1)))) for k in range(1, 7)]
    c["F32_COS_P"] = [f32(frac(Fraction((-1) ** k, factorial(2 * k)))) for k in range(2, 8)]
    c["F64_SIN_P"] = [f64(frac(Fraction((-1) ** k, factorial(2 * k + 1)))) for k in range(1, 11)]
    c["F64_COS_P"] = [f64(frac(Fraction((-1) ** k, factorial(2 * k)))) for k in range(2, 12)]
    # erf: Taylor on |x| < 1; for 1 <= |x| < X_MAX, erf = 1 - exp(-x^2) * erfcx(x) with erfcx a
    # polynomial in u = (2x - a - b) / (b - a).
    c["F32_ERF_SMALL"] = [f32(v) for v in taylor_erf(12)]
    c["F64_ERF_SMALL"] = [f64(v) for v in taylor_erf(20)]
    c["F32_ERF_C0"] = split(2 / SQRTPI, f32, 2)
    c["F64_ERF_C0"] = split(2 / SQRTPI, f64, 2)
    c["F32_ERF_RANGE"] = (1.0, 4.0)
    c["F64_ERF_RANGE"] = (1.0, 6.0)
    c["F32_ERFCX"] = [f32(v) for v in chebyshev_to_monomial(1.0, 4.0, 11, erfcx_dec)]
    c["F64_ERFCX"] = [f64(v) for v in chebyshev_to_monomial(1.0, 6.0, 28, erfcx_dec)]
    return c


def render(consts: dict[str, object]) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"float.fromhex({v.hex()!r})"
        if isinstance(v, (list, tuple)):
            inner = ",\n    ".join(fmt(x) for x in v)
            return ("(\n    " + inner + ",\n)") if isinstance(v, list) else f"({inner},)"
        return repr(v)

    lines = ['"""Constants of the NVPTX math expansions. Generated by',
             'backends/nvidia/tools/gen_math_constants.py -- do not edit by hand."""', ""]
    for name, value in consts.items():
        lines.append(f"{name} = {fmt(value)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(build()), end="")
