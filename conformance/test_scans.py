"""Scans: cumsum, cumprod and associative_scan along each axis, forward and reverse."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def scan2d_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                  M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        r = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    else:
        tl.static_assert(OP == "cumprod", "unknown OP")
        r = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    tl.store(out_ptr + offs, r)


def _np_scan(op, x, axis, reverse):
    f = np.cumsum if op == "cumsum" else np.cumprod
    if reverse:
        return np.flip(f(np.flip(x, axis), axis=axis), axis)
    return f(x, axis=axis)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(16, 64), (64, 4)])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_cumsum(conf, dtype, shape, axis, reverse):
    x = conf.rand(shape, dtype, low=-100, high=100) if "int" in dtype else conf.rand(shape, dtype)
    if "float" in dtype:
        want = _np_scan("cumsum", x.astype(np.float64), axis, reverse).astype(x.dtype)
    else:
        want = _np_scan("cumsum", x, axis, reverse).astype(x.dtype)
    out = conf.poison(shape, dtype)
    rtol = atol = None
    if "float" in dtype:
        # any association order is right: each prefix's rounding is bounded by (terms) * ulp of
        # that prefix's sum of |x|, not of the (possibly cancelled) prefix itself -- a fixed
        # tolerance failed on float64 where a prefix cancelled to 3e-4 from terms near 4
        abs_prefix = _np_scan("cumsum", np.abs(x.astype(np.float64)), axis, reverse)
        atol = shape[axis] * np.finfo(x.dtype).eps * abs_prefix
        rtol = 1e-5 if dtype == "float32" else 1e-12
    conf.check(scan2d_kernel, (1,), [x, out], {1: want},
               dict(OP="cumsum", AXIS=axis, REVERSE=reverse, M=shape[0], N=shape[1]),
               rtol=rtol, atol=atol)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_cumprod(conf, dtype, axis):
    shape = (8, 16)
    if "int" in dtype:
        x = conf.rand(shape, dtype, low=-2, high=2)
        want = _np_scan("cumprod", x, axis, False).astype(x.dtype)
    else:
        x = conf.rand(shape, dtype, low=0.9, high=1.1)
        want = _np_scan("cumprod", x.astype(np.float64), axis, False).astype(x.dtype)
    out = conf.poison(shape, dtype)
    conf.check(scan2d_kernel, (1,), [x, out], {1: want},
               dict(OP="cumprod", AXIS=axis, REVERSE=False, M=shape[0], N=shape[1]),
               rtol=1e-5 if dtype == "float32" else None)


@naiad.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@naiad.jit
def running_max_kernel(x_ptr, out_ptr, N: tl.constexpr):
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + rn)
    tl.store(out_ptr + tl.program_id(0) * N + rn, tl.associative_scan(x, 0, _max_combine))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
def test_associative_scan_running_max(conf, dtype):
    rows, n = 4, 256
    x = conf.rand((rows, n), dtype, low=-1000, high=1000) if "int" in dtype \
        else conf.rand((rows, n), dtype)
    want = np.maximum.accumulate(x, axis=1)
    out = conf.poison((rows, n), dtype)
    conf.check(running_max_kernel, (rows,), [x, out], {1: want}, dict(N=n))
