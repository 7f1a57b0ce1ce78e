"""Conversions between every pair of scalar types (value casts) and bitcasts."""
import numpy as np
import pytest

import naiad
import naiad.language as tl

from .harness import np_dtype

N, BLOCK = 500, 128
GRID = (4,)

TL = {"int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
      "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
      "float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32,
      "float64": tl.float64}


@naiad.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BITCAST: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(DST, bitcast=BITCAST), mask=mask)


def _source_values(conf, src, dst):
    """Inputs whose conversion is defined: in range of dst, and exactly representable."""
    sd, dd = np_dtype(src), np_dtype(dst)
    if sd.kind in "iu" and dd.kind in "iu":
        return conf.rand(N, src)  # wraps/truncates like C: defined for ints
    if sd.kind in "iu":
        return conf.rand(N, src, low=-2000, high=2000)
    lo, hi = -120.0, 120.0
    if dd.kind == "u":
        lo = 0.0
    return conf.rand(N, src, low=lo, high=hi)


PAIRS = [(s, d) for s in TL for d in TL if s != d]


@pytest.mark.parametrize("src,dst", PAIRS)
def test_value_cast(conf, src, dst):
    x = _source_values(conf, src, dst)
    dd = np_dtype(dst)
    if np_dtype(src).kind == "f" or src == "bfloat16":
        if dd.kind in "iu":
            want = np.trunc(x.astype(np.float64)).astype(np.int64).astype(dd)
        else:
            want = x.astype(np.float64).astype(dd)
    else:
        want = x.astype(dd)
    out = conf.poison(N, dst)
    conf.check(cast_kernel, GRID, [x, out, N], {1: want},
               dict(DST=TL[dst], BITCAST=False, BLOCK=BLOCK), rtol=0 if dd.kind in "iu" else None,
               atol=0 if dd.kind in "iu" else None)


BITCASTS = [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
            ("uint16", "float16"), ("float64", "uint64"), ("int64", "float64"),
            ("bfloat16", "int16"), ("int32", "uint32")]


@pytest.mark.parametrize("src,dst", BITCASTS)
def test_bitcast(conf, src, dst):
    x = conf.rand(N, src)
    want = x.view(np_dtype(dst))
    out = conf.poison(N, dst)
    conf.check(cast_kernel, GRID, [x, out, N], {1: want},
               dict(DST=TL[dst], BITCAST=True, BLOCK=BLOCK),
               compare=lambda have, exp: np.testing.assert_array_equal(
                   have.view(np.uint8), exp.view(np.uint8)))
