"""Triton details its own tests rely on: a number's ``.dtype`` in a kernel, ``:`` beyond a
tensor's rank, a one-element tensor as an ``if`` condition, ``hasattr`` on tensors, effect-only
conditional expressions, ``tl.pi32_t``, ``x.sqrt_rn()`` and the ``.cs`` load modifier."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError


@pytest.fixture(autouse=True)
def reference():
    naiad.set_target("reference")


@naiad.jit
def fill_with_number_dtype(out, N: tl.constexpr, BIG: tl.constexpr):
    value = 3
    big = BIG
    half = 0.5
    offs = tl.arange(0, N)
    tl.store(out + offs, tl.full([N], value, dtype=value.dtype).to(tl.float64) * 100
             + (big.dtype == tl.int64) * 10 + (half.dtype == tl.float32))


def test_a_number_in_a_kernel_has_the_dtype_triton_gives_it():
    out = np.full(8, np.nan)
    fill_with_number_dtype[(1,)](out, N=8, BIG=2**40)
    np.testing.assert_array_equal(out, np.full(8, 311.0))


@naiad.jit
def scalar_pointer_indexed(x_ptr, out_ptr):
    p = out_ptr[None, None, :]        # a scalar pointer: ':' beyond the rank changes nothing
    tl.store(p, tl.load(x_ptr)[None, None] * 2)


def test_colons_beyond_the_rank_are_ignored_as_in_triton():
    x = np.random.default_rng(1).standard_normal(1).astype(np.float32)
    out = np.full(1, np.nan, np.float32)
    scalar_pointer_indexed[(1,)](x, out)
    np.testing.assert_array_equal(out, x * 2)


@naiad.jit
def one_element_condition(x_ptr, EXPLICIT: tl.constexpr):
    cond = tl.load(x_ptr + tl.arange(0, 1)) > 42
    if EXPLICIT:
        cond = cond.item()
    if cond:
        tl.store(x_ptr, 42)


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("start, end", [(41, 41), (43, 42)])
def test_a_one_element_tensor_is_an_if_condition(explicit, start, end):
    x = np.array([start], np.int32)
    one_element_condition[(1,)](x, EXPLICIT=explicit)
    assert x[0] == end


@naiad.jit
def two_element_condition(x_ptr):
    if tl.load(x_ptr + tl.arange(0, 2)) > 0:
        tl.store(x_ptr, 1)


def test_a_larger_tensor_condition_is_still_an_error():
    with pytest.raises(CompilationError, match="must be a scalar"):
        two_element_condition[(1,)](np.zeros(2, np.int32))


@naiad.jit
def guarded_by_hasattr(x):
    if (x is not None) and hasattr(x, "dtype") and isinstance(x.dtype, tl.pointer_type) \
            and (x.dtype.element_ty == tl.int32) and (tl.load(x) > 42):
        tl.store(x, 42)


def test_hasattr_on_tensors_and_numbers_short_circuits():
    guarded_by_hasattr[(1,)](None)
    guarded_by_hasattr[(1,)](1)
    guarded_by_hasattr[(1,)](7)
    f = np.array([84.0], np.float32)
    guarded_by_hasattr[(1,)](f)
    big, small = np.array([100000], np.int32), np.array([-5], np.int32)
    guarded_by_hasattr[(1,)](big)
    guarded_by_hasattr[(1,)](small)
    assert (f[0], big[0], small[0]) == (84.0, 42, -5)


@naiad.jit
def store_by_conditional_expression(ret, a, b):
    pid = tl.program_id(0)
    tl.store(ret + pid, tl.load(a)) if pid % 2 == 0 else tl.store(ret + pid, tl.load(b))


def test_an_effect_only_conditional_expression_runs_one_side():
    a, b = np.array([1.5], np.float32), np.array([-2.5], np.float32)
    out = np.full(4, np.nan, np.float32)
    store_by_conditional_expression[(4,)](out, a, b)
    np.testing.assert_array_equal(out, [1.5, -2.5, 1.5, -2.5])


@naiad.jit
def select_pointers(cond_ptr, a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs).to(tl.pi32_t)
    b = tl.load(b_ptr + offs).to(tl.pi32_t)
    tl.store(out_ptr + offs, tl.where(tl.load(cond_ptr + offs), a, b))


@naiad.jit
def streaming_sqrt(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, cache_modifier=".cs").sqrt_rn())


def test_sqrt_rn_member_and_the_streaming_load_modifier():
    x = np.random.default_rng(2).uniform(0.1, 9.0, 32).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    streaming_sqrt[(1,)](x, out, N=32)
    np.testing.assert_array_equal(out, np.sqrt(x))


def test_pi32_t_is_a_pointer_to_int32():
    assert tl.pi32_t == tl.pointer_type(tl.int32)
    c = naiad.compile(select_pointers, signature="*i1,*i64,*i64,*i64", constexprs={"N": 16},
                      target="nvidia:sm_90")
    assert "ptx" in c.asm


@naiad.jit
def make_row_descriptor(ptr, rows, COLS: tl.constexpr, BR: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, shape=[rows, COLS], strides=[COLS, 1],
                                     block_shape=[BR, COLS])


@naiad.jit
def load_rows(desc, row):
    return desc.load([row, 0])


@naiad.jit
def axpy_through_descriptor_helpers(x, y, out, rows, COLS: tl.constexpr, BR: tl.constexpr):
    row = tl.program_id(0) * BR
    dx = make_row_descriptor(x, rows, COLS, BR)      # one helper, three descriptors
    dy = make_row_descriptor(y, rows, COLS, BR)
    make_row_descriptor(out, rows, COLS, BR).store([row, 0], load_rows(dx, row)
                                                   + 2 * load_rows(dy, row))


def test_descriptors_returned_by_and_passed_to_jit_helpers():
    """A @jit helper returning a descriptor (Triton tutorial 06's _maybe_make_tensor_desc): it
    crosses the call as its pointer, shape and strides."""
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal((10, 16)).astype(np.float32) for _ in range(2))
    out = np.full((10, 16), np.nan, np.float32)
    axpy_through_descriptor_helpers[(3,)](x, y, out, 10, COLS=16, BR=4)
    np.testing.assert_array_equal(out, x + 2 * y)


def test_in_kernel_descriptors_carry_their_map_across_helpers():
    """Each made descriptor has one ``descriptor_make`` (its tensor map, for a backend that
    builds maps on the device); accesses through it -- in the kernel or in a helper it was
    passed to -- are annotated with that map."""
    k = naiad.compile(axpy_through_descriptor_helpers,
                      signature={"x": "*fp32", "y": "*fp32", "out": "*fp32", "rows": "i32"},
                      constexprs=dict(COLS=16, BR=4), target="reference")
    tile = k.asm["tile"]
    assert tile.count("descriptor_make") == 3
    makes = [line.split("=")[0].strip() for line in tile.splitlines()
             if "= descriptor_make" in line]
    maps = [line.split()[1].rstrip(",") for line in tile.splitlines()
            if line.strip().startswith("descriptor_access")]
    assert sorted(maps) == sorted(makes) and len(makes) == 3, tile
