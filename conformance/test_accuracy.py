"""The approximate ops (float ``/``, ``tl.exp``) stay within the bounds docs/language.md states for
the backend under test (conformance/accuracy.py), and their exact spellings (``tl.div_rn``,
``libdevice.exp``) within theirs: max float32 ulp error against numpy float64 on fresh random
inputs over the whole range (wide exponents, subnormal operands and results, large |x|).

The execute tier compares with float64 and with the reference executor's result (which is itself
within its own bound, so that comparison gets the reference's share on top)."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.language.extra import libdevice

from .accuracy import bound, ulp_error

N = 4096
BLOCK = 256


@naiad.jit
def approx_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "div":
        r = x / y
    elif OP == "div_rn":
        r = tl.math.div_rn(x, y)
    elif OP == "exp":
        r = tl.exp(x)
    else:
        tl.static_assert(OP == "libdevice_exp", "unknown OP")
        r = libdevice.exp(x)
    tl.store(out_ptr + offs, r, mask=m)


def _wide(rng, k, lo, hi):
    return rng.choice([-1.0, 1.0], k) * np.exp2(rng.uniform(lo, hi, k))


def _inputs(rng, op):
    q = N // 4
    if op.endswith("exp"):
        x = np.concatenate([rng.uniform(-1, 1, q), rng.uniform(-87, 88.7, q),
                            rng.uniform(-103.9, -87.3, q), _wide(rng, q, -149, 0)])
        return x.astype(np.float32), np.ones(N, np.float32)
    x = np.concatenate([rng.uniform(-4, 4, q), _wide(rng, q, -126, 127), _wide(rng, q, -149, -126),
                        _wide(rng, q, -20, 20)])
    y = np.concatenate([rng.uniform(0.25, 4, q), _wide(rng, q, -126, 127), _wide(rng, q, -10, 10),
                        _wide(rng, q, 100, 127.9)])
    return x.astype(np.float32), y.astype(np.float32)


def _truth(op, x, y):
    with np.errstate(all="ignore"):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        return np.exp(x64) if op.endswith("exp") else x64 / y64


@pytest.mark.parametrize("op", ["div", "div_rn", "exp", "libdevice_exp"])
def test_within_documented_bound(conf, op):
    x, y = _inputs(conf.rng, op)
    allowed = bound(op, conf.backend, x)
    reference_share = bound(op, "reference", x)

    def compare(have, want):
        err = ulp_error(have, want)
        # the reference executor's float32 result is itself off by up to its own bound
        limit = allowed if want.dtype == np.float64 else allowed + reference_share
        worst = int(np.argmax(err - limit))
        assert np.all(err <= limit), (
            f"{op} on {conf.backend}: {err[worst]:.2f} ulp > {limit[worst]:.2f} at "
            f"x={x[worst]!r}, y={y[worst]!r}: got {have[worst]!r}, expected {want[worst]!r}")

    out = conf.poison(N, "float32")
    conf.check(approx_kernel, ((N + BLOCK - 1) // BLOCK,), [x, y, out, N], {2: _truth(op, x, y)},
               dict(OP=op, BLOCK=BLOCK), compare=compare)
