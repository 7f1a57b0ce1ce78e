"""Elementwise arithmetic, comparisons, bitwise ops and math functions against numpy."""
import math

import numpy as np
import pytest

from .harness import FLOAT_DTYPES, INT_DTYPES, UINT_DTYPES, np_dtype
from .kernels import binary_kernel, unary_kernel

N, BLOCK = 1000, 256
GRID = (4,)


def _trunc_div(x, y):
    """Integer division rounding toward zero, exact for every width and signedness."""
    q = [abs(int(a)) // abs(int(b)) * (1 if (a < 0) == (b < 0) else -1) for a, b in zip(x, y)]
    return np.array(q, dtype=object).astype(x.dtype)


def _ints(conf, dtype, nonzero=False):
    dt = np_dtype(dtype)
    info = np.iinfo(dt)
    # stay away from MIN so that -MIN and MIN / -1 never occur
    x = conf.rand(N, dtype, low=info.min + 1, high=info.max)
    y = conf.rand(N, dtype, low=info.min + 1, high=info.max)
    if nonzero:
        y[y == 0] = 1
    return x, y


@pytest.mark.parametrize("dtype", INT_DTYPES + UINT_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "and", "or", "xor", "maximum", "minimum"])
def test_int_binary(conf, op, dtype):
    x, y = _ints(conf, dtype)
    with np.errstate(over="ignore"):
        want = {"add": x + y, "sub": x - y, "mul": x * y, "and": x & y, "or": x | y,
                "xor": x ^ y, "maximum": np.maximum(x, y), "minimum": np.minimum(x, y)}[op]
    out = conf.poison(N, dtype)
    conf.check(binary_kernel, GRID, [x, y, out, N], {2: want}, dict(OP=op, BLOCK=BLOCK))


@pytest.mark.parametrize("dtype", INT_DTYPES + UINT_DTYPES)
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_int_division(conf, op, dtype):
    """``//`` rounds toward zero and ``%`` takes the dividend's sign (C semantics, as Triton)."""
    x, y = _ints(conf, dtype, nonzero=True)
    if op == "floordiv":
        want = _trunc_div(x, y)
    else:
        want = np.fmod(x, y)
    out = conf.poison(N, dtype)
    conf.check(binary_kernel, GRID, [x, y, out, N], {2: want}, dict(OP=op, BLOCK=BLOCK))


@pytest.mark.parametrize("dtype", INT_DTYPES + UINT_DTYPES)
@pytest.mark.parametrize("op", ["shl", "shr"])
def test_shifts(conf, op, dtype):
    """``>>`` is arithmetic on signed and logical on unsigned types."""
    dt = np_dtype(dtype)
    x = conf.rand(N, dtype)
    y = conf.rand(N, dtype, low=0, high=dt.itemsize * 8 - 1)
    want = np.left_shift(x, y) if op == "shl" else np.right_shift(x, y)
    out = conf.poison(N, dtype)
    conf.check(binary_kernel, GRID, [x, y, out, N], {2: want}, dict(OP=op, BLOCK=BLOCK))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "mod", "maximum", "minimum"])
def test_float_binary(conf, op, dtype):
    x = conf.rand(N, dtype)
    y = conf.rand(N, dtype, low=0.5, high=3.0) * np.where(conf.rand(N, "float32") > 0, 1, -1) \
        .astype(np_dtype(dtype))
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    want = {"add": xf + yf, "sub": xf - yf, "mul": xf * yf, "truediv": xf / yf,
            "mod": np.fmod(xf, yf), "maximum": np.maximum(xf, yf),
            "minimum": np.minimum(xf, yf)}[op].astype(x.dtype)
    out = conf.poison(N, dtype)
    rtol = None
    if op == "mod":  # fmod of rounded inputs: compare in the output precision
        rtol = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    conf.check(binary_kernel, GRID, [x, y, out, N], {2: want}, dict(OP=op, BLOCK=BLOCK),
               rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons(conf, op, dtype):
    x = conf.rand(N, dtype, low=-3, high=3) if "int" in dtype else conf.rand(N, dtype)
    y = conf.rand(N, dtype, low=-3, high=3) if "int" in dtype else conf.rand(N, dtype)
    y[::7] = x[::7]  # make equality actually happen
    want = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
    out = conf.poison(N, np.bool_)
    conf.check(binary_kernel, GRID, [x, y, out, N], {2: want}, dict(OP=op, BLOCK=BLOCK))


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_neg(conf, dtype):
    x = conf.rand(N, dtype, low=-100, high=100) if "int" in dtype else conf.rand(N, dtype)
    out = conf.poison(N, dtype)
    conf.check(unary_kernel, GRID, [x, out, N], {1: -x}, dict(OP="neg", BLOCK=BLOCK))


@pytest.mark.parametrize("dtype", INT_DTYPES + UINT_DTYPES)
def test_invert(conf, dtype):
    x = conf.rand(N, dtype)
    out = conf.poison(N, dtype)
    conf.check(unary_kernel, GRID, [x, out, N], {1: ~x}, dict(OP="invert", BLOCK=BLOCK))


_erf = np.vectorize(math.erf)
MATH = {
    "exp": (np.exp, -4.0, 4.0), "exp2": (np.exp2, -4.0, 4.0), "log": (np.log, 0.05, 50.0),
    "log2": (np.log2, 0.05, 50.0), "sqrt": (np.sqrt, 0.0, 50.0),
    "rsqrt": (lambda v: 1.0 / np.sqrt(v), 0.05, 50.0), "sin": (np.sin, -6.0, 6.0),
    "cos": (np.cos, -6.0, 6.0), "erf": (_erf, -3.0, 3.0), "floor": (np.floor, -9.0, 9.0),
    "ceil": (np.ceil, -9.0, 9.0), "abs": (np.abs, -9.0, 9.0),
    "sigmoid": (lambda v: 1.0 / (1.0 + np.exp(-v)), -8.0, 8.0),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", sorted(MATH))
def test_math(conf, op, dtype):
    fn, lo, hi = MATH[op]
    x = conf.rand(N, dtype, low=lo, high=hi)
    want = fn(x.astype(np.float64)).astype(x.dtype)
    out = conf.poison(N, dtype)
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-13}[dtype]
    if dtype == "float32" and op not in ("floor", "ceil", "abs", "sqrt"):
        tol = 1e-5  # GPUs' fast paths for transcendental f32 functions: a few ulp
    conf.check(unary_kernel, GRID, [x, out, N], {1: want}, dict(OP=op, BLOCK=BLOCK),
               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_abs(conf, dtype):
    info = np.iinfo(np_dtype(dtype))
    x = conf.rand(N, dtype, low=info.min + 1, high=info.max)
    out = conf.poison(N, dtype)
    conf.check(unary_kernel, GRID, [x, out, N], {1: np.abs(x)}, dict(OP="abs", BLOCK=BLOCK))
