"""float8 dtypes on the reference executor: conversions from every float type (bit-exact against
an independent oracle and ml_dtypes), ml_dtypes arrays and torch float8 tensors as arguments,
constants, and the errors a user meets (arithmetic in float8, rtz rounding)."""
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))
from float8_kernels import abs_where_dot, negate  # noqa: E402
from float8_oracle import inputs, oracle, value_of  # noqa: E402
from float8_ops_check import FINITE_FORMATS, check, inputs as op_inputs  # noqa: E402

ML = {"float8e5": ml_dtypes.float8_e5m2, "float8e4nv": ml_dtypes.float8_e4m3fn,
      "float8e4b8": ml_dtypes.float8_e4m3fnuz, "float8e5b16": ml_dtypes.float8_e5m2fnuz}


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


@naiad.jit
def convert(x_ptr, y_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(back_ptr + offs, y.to(tl.float32), mask=mask)


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", list(ML))
def test_conversions_match_oracle(fmt, src):
    np_src = ml_dtypes.bfloat16 if src == "bfloat16" else np.dtype(src)
    with np.errstate(over="ignore"):
        x = inputs(fmt).astype(np_src)
    n = x.size
    y = np.full(n + 3, 0x5A, np.uint8).view(ML[fmt])    # poison
    back = np.full(n + 3, 1234.5, np.float32)
    convert[(naiad.cdiv(n, 128),)](x, y, back, n, BLOCK=128)
    bits = y.view(np.uint8)
    want = oracle(x.astype(np.float64), fmt)
    bad = np.nonzero(bits[:n] != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(bits[i]), hex(want[i])) for i in bad[:8]]
    assert (bits[n:] == 0x5A).all() and (back[n:] == 1234.5).all()
    np.testing.assert_array_equal(back[:n], y[:n].astype(np.float32))


@naiad.jit
def to_e4b15(x_ptr, bits_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(tl.float8e4b15)
    tl.store(bits_ptr + offs, y.to(tl.uint8, bitcast=True), mask=mask)
    tl.store(back_ptr + offs, y.to(tl.float32), mask=mask)


def test_float8e4b15_has_no_numpy_type_but_converts():
    x = inputs("float8e4b15").astype(np.float32)
    n = x.size
    bits, back = np.full(n, 0x5A, np.uint8), np.full(n, 1234.5, np.float32)
    to_e4b15[(1,)](x, bits, back, n, BLOCK=triton_pow2(n))
    np.testing.assert_array_equal(bits, oracle(x, "float8e4b15"))
    want = [(-1 if c & 0x80 else 1) * value_of(c & 0x7F, "float8e4b15") for c in bits]
    np.testing.assert_array_equal(back, np.array(want, np.float32))


def triton_pow2(n):
    return 1 << (n - 1).bit_length()


@naiad.jit
def fp8_copy_scaled(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    two = tl.full((N,), 2.0, x.dtype)           # a float8 constant
    tl.store(out_ptr + offs, (x.to(tl.float32) * two.to(tl.float32)).to(x.dtype))


def test_torch_float8_tensors_as_arguments():
    torch = pytest.importorskip("torch")
    for tdt, fmt in ((torch.float8_e4m3fn, "float8e4nv"), (torch.float8_e5m2, "float8e5")):
        x = (torch.randn(64) * 10).to(tdt)
        out = torch.full((64,), float("nan")).to(tdt)
        fp8_copy_scaled[(1,)](x, out, N=64)
        want = (x.to(torch.float32) * 2).to(tdt)  # torch saturates differently only off-range
        assert torch.equal(out.view(torch.uint8), want.view(torch.uint8)), fmt


@naiad.jit
def fp8_add(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + x)


def test_arithmetic_in_float8_is_a_clear_error():
    x = np.ones(16, ml_dtypes.float8_e5m2)
    with pytest.raises(CompilationError, match=r"test_reference_float8.py:\d+.*arithmetic on "
                                               r"f8e5 values is not supported"):
        fp8_add[(1,)](x, x.copy(), N=16)


@naiad.jit
def fp8_rtz(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e5, fp_downcast_rounding="rtz"))


def test_rtz_to_float8_is_refused():
    with pytest.raises(CompilationError, match="float8 conversions round to nearest even"):
        fp8_rtz[(1,)](np.ones(16, np.float32), np.ones(16, ml_dtypes.float8_e5m2), N=16)


def test_mixed_promotion_follows_triton():
    from naiad.ir import types as irt
    from naiad.language.promotion import computation_type

    e5, e4 = irt.ScalarType("f8e5"), irt.ScalarType("f8e4nv")
    assert computation_type(e5, False, e4, False) == irt.f16
    assert computation_type(e5, False, irt.f32, False) == irt.f32
    assert computation_type(e5, False, irt.bf16, False) == irt.f32
    assert computation_type(e5, False, e5, False, div_or_mod=True) == irt.f32


@naiad.jit
def fp8_atomic(x_ptr, out_ptr):
    tl.atomic_add(out_ptr, tl.load(x_ptr))


def test_atomics_on_float8_are_refused():
    x = np.ones(1, ml_dtypes.float8_e4m3fn)
    with pytest.raises(CompilationError, match="tl.atomic_add does not support f8e4nv"):
        fp8_atomic[(1,)](x, x.copy())



@pytest.mark.parametrize("fmt,fmt_b", [(f, f) for f in FINITE_FORMATS]
                         + [("float8e5", "float8e4nv")])
def test_abs_compare_where_and_dot_on_float8(fmt, fmt_b):
    rng = np.random.default_rng(77)
    codes, a, b = op_inputs(rng, fmt, fmt_b)
    abs_out, pos_out = np.full(256, 0x5A, np.uint8), np.full(256, 0x5A, np.uint8)
    c = np.full((16, 16), np.nan, np.float32)
    abs_where_dot[(1,)](codes, abs_out, pos_out, a, b, c, DT=getattr(tl, fmt),
                        DB=getattr(tl, fmt_b))
    check(fmt, fmt_b, codes, a, b, abs_out, pos_out, c)


def test_negating_float8_is_a_clear_error():
    with pytest.raises(CompilationError, match=r"float8_kernels.py:\d+.*arithmetic on f8e4nv"):
        negate[(1,)](np.ones(16, ml_dtypes.float8_e4m3fn), N=16)


@naiad.jit
def e4b15_roundtrip(x_ptr, out_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(out_ptr + o, tl.load(x_ptr + o).to(tl.float32))


def test_float8e4b15_torch_bytes_through_reinterpret():
    torch = pytest.importorskip("torch")
    from naiad.compat.triton_root import reinterpret

    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    out = torch.full((256,), float("nan"))
    e4b15_roundtrip[(1,)](reinterpret(codes, tl.float8e4b15), out, N=256)
    want = [(-1 if c & 0x80 else 1) * value_of(c & 0x7F, "float8e4b15") for c in range(256)]
    np.testing.assert_array_equal(out.numpy(), np.array(want, np.float32))
