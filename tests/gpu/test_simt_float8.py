"""float8 conversions of the GPU lowering (integer arithmetic in LLVM IR), bit-exact on the CPU
SIMT device against an independent brute-force oracle and against ml_dtypes.

Inputs: every float8 value, every midpoint between neighbours (the ties), points just beside the
midpoints, values beyond the largest finite value, infinities, NaNs, signed zeros, tiny values
and random ones, in every source float type.
"""
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from simt import run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
from float8_kernels import abs_where_dot  # noqa: E402
from float8_oracle import FORMATS, SIG, inputs, oracle, value_of  # noqa: E402
from float8_ops_check import FINITE_FORMATS, check, inputs as op_inputs  # noqa: E402


@naiad.jit
def convert(x_ptr, bits_ptr, back_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(DT)
    tl.store(bits_ptr + offs, y, mask=mask)
    tl.store(back_ptr + offs, y.to(tl.float32), mask=mask)


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_float8_roundtrip_bit_exact(fmt, src):
    x64 = inputs(fmt)
    np_src = ml_dtypes.bfloat16 if src == "bfloat16" else np.dtype(src)
    with np.errstate(over="ignore"):
        x = x64.astype(np_src)
    n = x.size
    bits = np.full(n + 3, 0x5A, np.uint8)        # poison (a valid code, so misses show)
    back = np.full(n + 3, 1234.5, np.float32)
    run(convert, (naiad.cdiv(n, 64),), [x, bits, back, n],
        {"DT": getattr(tl, fmt), "BLOCK": 64}, warp_size=4, num_warps=2,
        signature={"x_ptr": "*" + {"float32": "fp32", "float64": "fp64", "float16": "fp16",
                                   "bfloat16": "bf16"}[src],
                   "bits_ptr": "*" + SIG[fmt]})
    want = oracle(x.astype(np.float64), fmt)
    bad = np.nonzero(bits[:n] != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(bits[i]), hex(want[i])) for i in bad[:8]]
    assert (bits[n:] == 0x5A).all()
    ml = FORMATS[fmt][4]
    if ml is not None:  # ml_dtypes agrees once saturation is applied
        top = float(np.array(0x7F if FORMATS[fmt][3] == "fnuz" else 0x7E if FORMATS[fmt][3] == "fn"
                             else 0x7B, np.uint8).view(ml).astype(np.float64))
        clipped = x.astype(np.float64) if FORMATS[fmt][3] == "ieee" else \
            np.clip(x.astype(np.float64), -top, top)
        np.testing.assert_array_equal(bits[:n], clipped.astype(ml).view(np.uint8))
        decoded = bits[:n].view(ml).astype(np.float32)
    else:
        decoded = np.array([(-1 if c & 0x80 else 1) * value_of(c & 0x7F, fmt) for c in bits[:n]],
                           np.float32)
    np.testing.assert_array_equal(back[:n], decoded)


@naiad.jit
def decode_all(bits_ptr, out16_ptr, out64_ptr, outi_ptr, outb_ptr, DT: tl.constexpr):
    offs = tl.arange(0, 256)
    v = tl.load(bits_ptr + offs)
    tl.store(out16_ptr + offs, v.to(tl.float16))
    tl.store(out64_ptr + offs, v.to(tl.float64))
    tl.store(outi_ptr + offs, v.to(tl.int32))
    tl.store(outb_ptr + offs, v.to(tl.bfloat16))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_float8_decode_every_code(fmt):
    bits = np.arange(256, dtype=np.uint8)
    o16, o64 = np.full(256, 7.0, np.float16), np.full(256, 7.0, np.float64)
    oi, ob = np.full(256, -77, np.int32), np.full(256, 7.0, ml_dtypes.bfloat16)
    run(decode_all, (1,), [bits, o16, o64, oi, ob], {"DT": getattr(tl, fmt)}, warp_size=8,
        num_warps=2, signature={"bits_ptr": "*" + SIG[fmt]})
    want = []
    for c in range(256):
        v = value_of(c & 0x7F, fmt)
        specials = FORMATS[fmt][3]
        if v is None:  # inf or NaN codes
            e_bits, m_bits = FORMATS[fmt][:2]
            v = np.inf if (specials == "ieee" and c & 0x7F == 0x7C) else np.nan
        if specials == "fnuz" and c == 0x80:
            v = np.nan
        want.append(-v if c & 0x80 else v)
    want = np.array(want)
    np.testing.assert_array_equal(o64, want)
    np.testing.assert_array_equal(o16, want.astype(np.float16))
    np.testing.assert_array_equal(ob.astype(np.float64), want)
    with np.errstate(invalid="ignore"):
        wi = np.where(np.isnan(want), 0, np.clip(want, -2**31, 2**31 - 1)).astype(np.int64)
    np.testing.assert_array_equal(oi, wi.astype(np.int32))



@pytest.mark.parametrize("fmt,fmt_b", [(f, f) for f in FINITE_FORMATS]
                         + [("float8e5", "float8e4nv")])
def test_abs_compare_where_and_dot_on_float8(fmt, fmt_b):
    rng = np.random.default_rng(77)
    codes, a, b = op_inputs(rng, fmt, fmt_b)
    abs_out, pos_out = np.full(256, 0x5A, np.uint8), np.full(256, 0x5A, np.uint8)
    c = np.full((16, 16), np.nan, np.float32)
    run(abs_where_dot, (1,), [codes, abs_out, pos_out, a, b, c],
        {"DT": getattr(tl, fmt), "DB": getattr(tl, fmt_b)}, warp_size=8, num_warps=2)
    check(fmt, fmt_b, codes, a, b, abs_out, pos_out, c)
