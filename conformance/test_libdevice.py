"""tl.extra.libdevice: portable compositions of the core math, on every backend."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.language.extra import libdevice


@naiad.jit
def libdevice_unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5)
    tl.store(out_ptr + offs, getattr(libdevice, FN)(x), mask=mask)


@naiad.jit
def libdevice_atan2_kernel(y_ptr, x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.atan2(tl.load(y_ptr + offs), tl.load(x_ptr + offs)))


UNARY = {"asin": (np.arcsin, -1, 1), "atan": (np.arctan, -20, 20), "tanh": (np.tanh, -8, 8),
         "expm1": (np.expm1, -3, 3), "log1p": (np.log1p, -0.5, 5), "rint": (np.rint, -50, 50),
         "cbrt": (np.cbrt, -100, 100), "acosh": (np.arccosh, 1, 50)}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("fn", sorted(UNARY))
def test_libdevice_unary(conf, fn, dtype):
    ref, lo, hi = UNARY[fn]
    n = 1000
    x = conf.rand(n, dtype, low=lo, high=hi)
    want = ref(x.astype(np.float64)).astype(x.dtype)
    out = conf.poison(n, dtype)
    rtol = {"float32": 2e-6, "float64": 1e-14, "float16": 2e-3}[dtype]
    conf.check(libdevice_unary_kernel, (4,), [x, out, n], {1: want}, dict(FN=fn, BLOCK=256),
               rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_libdevice_popc_clz(conf, dtype):
    x = conf.rand(256, dtype)
    u = x.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    for fn, want in (("popc", [bin(int(v)).count("1") for v in u]),
                     ("clz", [32 - int(v).bit_length() for v in u])):
        out = conf.poison(256, "int32")
        conf.check(libdevice_unary_kernel, (1,), [x, out, 256], {1: np.array(want, np.int32)},
                   dict(FN=fn, BLOCK=256))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_libdevice_atan2(conf, dtype):
    y, x = conf.rand(128, dtype, low=-3, high=3), conf.rand(128, dtype, low=-3, high=3)
    x[:4] = [0.0, -0.0, 1.0, -1.0]
    y[:4] = [1.0, -1.0, 0.0, 0.0]
    out = conf.poison(128, dtype)
    conf.check(libdevice_atan2_kernel, (1,), [y, x, out],
               {2: np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(x.dtype)},
               dict(BLOCK=128), rtol=2e-6 if dtype == "float32" else 1e-14, atol=1e-7)
