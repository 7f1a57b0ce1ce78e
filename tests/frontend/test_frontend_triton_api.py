"""Triton's tensor API conveniences, on the reference executor against numpy."""
import re

import numpy as np
import pytest

import naiad
from naiad.errors import CompilationError
import triton_api_kernels as tk


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


def test_shape_compares_with_lists_item_and_cast():
    x = np.random.default_rng().integers(-100, 100, (4, 8)).astype(np.int32)
    out = np.full((4, 8), np.nan, np.float32)
    tk.shape_kernel[(1,)](x, out, 4, 8)
    np.testing.assert_array_equal(out, x.astype(np.float32) + x.sum())


def test_tuples_of_tensors_through_calls_and_runtime_constexpr():
    rng = np.random.default_rng()
    x, y = rng.integers(-50, 50, 16).astype(np.int32), rng.integers(-50, 50, 16).astype(np.int32)
    s = int(rng.integers(2, 9))
    out = np.full(16, -1, np.int32)
    tk.tuple_call_kernel[(1,)](x, y, out, s, 16)
    np.testing.assert_array_equal(out, (x + y) * s + (x - y) * y + 3)


def test_list_of_tensors_through_a_call():
    x = np.random.default_rng().standard_normal(32).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    tk.list_call_kernel[(1,)](x, out, 32)
    np.testing.assert_allclose(out, x + x * 2 + x * 3, rtol=1e-6)


def test_item_needs_one_element():
    with pytest.raises(CompilationError, match=r"triton_api_kernels.py:\d+.*exactly one element"):
        naiad.compile(tk.item_error_kernel, signature="*fp32", constexprs={"N": 8})


@pytest.mark.parametrize("kernel, sig, consts, phrase", [
    (tk.bad_pid_axis_kernel, "*i32", {}, r"program_id axis must be 0, 1, or 2 but got 20"),
    (tk.bad_expand_dims_kernel, "*i32", {"N": 8, "AXES": -3}, r"invalid axis -3"),
    (tk.bad_expand_dims_kernel, "*i32", {"N": 8, "AXES": (0, 0)},
     r"duplicate axes, normalized axes = \[0, 0\]"),
    (tk.bad_slice_kernel, "*fp32", {}, r"unsupported tensor index"),
    (tk.bad_bitwise_kernel, "*fp32", {}, r"invalid operands of type"),
    (tk.bad_signedness_kernel, "*i32,*u32", {},
     r"Cannot use .* because they have different signedness"),
])
def test_triton_key_phrases(kernel, sig, consts, phrase):
    """Triton's own tests match these phrases (on the error or its __cause__); naiad keeps its
    file:line:caret format around them."""
    with pytest.raises(CompilationError) as info:
        naiad.compile(kernel, signature=sig, constexprs=consts)
    err = info.value
    assert str(err).startswith(f"{err.filename}:{err.lineno}:")
    assert re.search(phrase, str(err)) and re.search(phrase, str(err.__cause__))


def test_squeeze_unsqueeze_to_tensor():
    x = np.random.default_rng().integers(-50, 50, 16).astype(np.int32)
    out = np.full(16, -1, np.int32)
    tk.squeeze_kernel[(1,)](x, out, 16)
    np.testing.assert_array_equal(out, 2 * x + 1)
    with pytest.raises(CompilationError, match=r"invalid axis -3"):
        naiad.compile(tk.bad_squeeze_kernel, signature="*i32", constexprs={"N": 8})


def test_pair_of_scalars_and_isinstance():
    z = np.full(3, -1, np.int32)
    tk.scalar_pair_kernel[(1,)](10, 20, z)
    np.testing.assert_array_equal(z, [10, 20, 210])
