"""tl.dot_scaled on the reference executor against a float64 numpy oracle: every MX format
pair, e2m1 packing, scales on either side, and the errors Triton reports."""
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))
from scaled_dot_kernels import oracle, random_operand, scaled_dot  # noqa: E402

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


def launch(fa, fb, M, N, K, scale_a, scale_b, run=None):
    a, av = random_operand(RNG, fa, M, K, pack_axis=1)
    b, bv = random_operand(RNG, fb, K, N, pack_axis=0)
    sa = RNG.integers(120, 134, (M, K // 32)).astype(np.uint8) if scale_a else None
    sb = RNG.integers(120, 134, (N, K // 32)).astype(np.uint8) if scale_b else None
    out = np.full((M, N), np.nan, np.float32)
    dummy = np.zeros(1, np.uint8)
    args = [a, sa if scale_a else dummy, b, sb if scale_b else dummy, out]
    meta = dict(M=M, N=N, K=K, FA=fa, FB=fb, KA=a.shape[1], KB=b.shape[0], SCALE_A=scale_a,
                SCALE_B=scale_b)
    if run is None:
        scaled_dot[(1,)](*args, **meta)
    else:
        run(args, meta)
    # f32 accumulation: each of the K steps may round, relative to the magnitudes involved
    bound = K * 2.0 ** -24 * oracle(np.abs(av), sa, np.abs(bv), sb)
    return out, oracle(av, sa, bv, sb), bound


@pytest.mark.parametrize("fa", ["e2m1", "e4m3", "e5m2"])
@pytest.mark.parametrize("fb", ["e2m1", "e4m3", "e5m2", "bf16", "fp16"])
@pytest.mark.parametrize("scale_b", [False, True])
def test_dot_scaled_matches_oracle(fa, fb, scale_b):
    out, want, bound = launch(fa, fb, 16, 32, 64, True, scale_b)
    assert (np.abs(out - want) <= bound).all(), np.max(np.abs(out - want) - bound)


@pytest.mark.parametrize("fmt,np_type,tiny", [
    ("bf16", ml_dtypes.bfloat16, 2.0 ** -127),   # a bf16 subnormal: kept
    ("fp16", np.float16, 0.0),                   # below fp16's range: 0, as Triton
])
def test_scale_255_is_nan_and_0_is_tiny(fmt, np_type, tiny):
    """Operands are rounded to the compute type (fp16 if either format is, else bf16)."""
    M, N, K = 16, 16, 32
    a = np.ones((M, K), np_type)
    b = np.ones((K, N), np_type)
    sa = np.full((M, 1), 127, np.uint8)
    sa[3] = 255
    sa[5] = 0
    out = np.full((M, N), 7.0, np.float32)
    scaled_dot[(1,)](a, sa, b, np.zeros(1, np.uint8), out, M=M, N=N, K=K, FA=fmt, FB=fmt,
                     KA=K, KB=K, SCALE_A=True, SCALE_B=False)
    assert np.isnan(out[3]).all()
    np.testing.assert_array_equal(out[5], np.float32(32 * tiny))
    np.testing.assert_array_equal(out[0], 32.0)


@naiad.jit
def bad_format(a_ptr, out_ptr):
    a = tl.load(a_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])
    c = tl.dot_scaled(a, None, "e3m2", a, None, "e4m3")
    tl.store(out_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)


def test_unknown_format_names_the_line():
    with pytest.raises(CompilationError, match=r"test_reference_scaled_dot.py:\d+.*NYI: "
                                               r"lhs_format 'e3m2'"):
        bad_format[(1,)](np.zeros((32, 32), np.uint8), np.zeros((32, 32), np.float32))
