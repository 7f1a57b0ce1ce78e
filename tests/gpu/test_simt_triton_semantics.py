"""Issue #13's semantics on the GPU lowering, executed on the CPU SIMT device (see simt.py):
the same numbers as the reference executor, for the cases where they used to differ."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from simt import run
from gpu_kernels import binary_kernel, cast_kernel, reduce_rows, scan_kernel

RNG = np.random.default_rng()


def poison(n, dtype):
    dtype = np.dtype(dtype)
    return np.full(n, np.nan, dtype) if dtype.kind == "f" else np.full(n, 7, dtype)


def test_signed_shr_by_unsigned_is_arithmetic():
    x = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    x[:3] = [-1, -1000, -2**31]
    y = RNG.integers(0, 32, 64).astype(np.uint32)
    out = poison(64, np.uint32)
    run(binary_kernel, (1,), [x, y, out], {"OP": "shr", "BLOCK": 64})
    np.testing.assert_array_equal(out, (x >> y.astype(np.int32)).view(np.uint32))


def test_umulhi_of_signed_ints_is_the_unsigned_high_half():
    x = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    y = RNG.integers(-2**31, 2**31, 64).astype(np.int32)
    x[0] = y[0] = -1
    out = poison(64, np.int32)
    run(binary_kernel, (1,), [x, y, out], {"OP": "umulhi", "BLOCK": 64})
    ux, uy = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(out, ((ux * uy) >> np.uint64(32)).astype(np.uint32).view(np.int32))
    assert out[0] == -2


# -- float % is an exact fmod (never LLVM's frem, which NVPTX expands to x - trunc(x/y)*y) ------
def _fmod_edges(dtype):
    f = np.finfo(dtype)
    tiny_sub = np.array(f.smallest_subnormal, dtype)
    pairs = [(2.0 ** 32, 7.0), (np.inf, np.inf), (np.inf, 2.0), (5.0, np.inf), (-5.0, np.inf),
             (float(f.max), np.inf), (float(f.max), 3.0), (-float(f.max), 1.5), (1.0, 0.0),
             (0.0, 0.0), (-0.0, 3.0), (0.0, -3.0), (-6.0, 3.0), (6.0, -3.0), (np.nan, 1.0),
             (1.0, np.nan), (-7.5, 2.0), (7.5, -2.0), (3.0, 3.0), (-3.0, 3.0),
             (float(tiny_sub) * 7, float(tiny_sub) * 2), (float(f.tiny) * 1.75, float(tiny_sub) * 3),
             (float(f.max), float(tiny_sub)), (1.0, float(tiny_sub) * 5),
             (float(f.tiny), float(f.tiny) * 0.75), (1e30, 1e-30), (123456.789, 0.1)]
    x = np.array([p[0] for p in pairs], dtype)
    y = np.array([p[1] for p in pairs], dtype)
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_mod_is_exact_fmod(dtype):
    ex, ey = _fmod_edges(dtype)
    n = 128
    x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-30, 30, n)).astype(dtype)
    y = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-30, 30, n)).astype(dtype)
    x[:len(ex)], y[:len(ey)] = ex, ey
    out = poison(n, dtype)
    run(binary_kernel, (1,), [x, y, out], {"OP": "mod", "BLOCK": n})
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    same = (out.view(bits) == want.view(bits)) | (np.isnan(out) & np.isnan(want))
    assert same.all(), list(zip(x[~same], y[~same], out[~same], want[~same]))
    if dtype == np.float32:
        assert out[0] == 4.0  # 2**32 % 7 (LLVM's NVPTX frem expansion gives -192)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_float_mod_is_exact(dtype):
    import ml_dtypes  # noqa: F401

    n = 64
    x = (RNG.standard_normal(n) * 100).astype(np.float32).astype(dtype)
    y = (RNG.standard_normal(n)).astype(np.float32).astype(dtype)
    x[:4] = np.array([np.inf, 5.0, -0.0, 2048.0], np.float32).astype(dtype)
    y[:4] = np.array([2.0, np.inf, 3.0, 0.75], np.float32).astype(dtype)
    out = np.full(n, np.nan, np.float32)  # f16 % f16 computes in f32 (Triton's rule)
    run(binary_kernel, (1,), [x, y, out], {"OP": "mod", "BLOCK": n})
    with np.errstate(all="ignore"):
        want = np.fmod(x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
@pytest.mark.parametrize("ty", ["fp16", "fp32", "fp64"])
def test_float_mod_never_reaches_llvm_frem(target, ty):
    from test_lower_targets import lower
    lowered, _, _ = lower(binary_kernel, {"x_ptr": "*" + ty, "y_ptr": "*" + ty,
                                          "out_ptr": "*" + ("fp32" if ty == "fp16" else ty)},
                          {"OP": "mod", "BLOCK": 128}, target)
    assert " frem " not in lowered.llvm_ir
    assert "naiad.fmod" in lowered.llvm_ir


# -- fp_downcast_rounding="rtz" --------------------------------------------------------------------


@naiad.jit
def rtz_cast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, DST: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST, fp_downcast_rounding="rtz"))


def assert_rounded_toward_zero(x, out):
    """Independent check: |out| <= |x| and the next value away from zero exceeds |x| (so out is
    the largest-magnitude value not beyond x); NaN stays NaN, inf stays inf."""
    import ml_dtypes  # noqa: F401

    xf = x.astype(np.float64)
    of = out.astype(np.float64)
    nan = np.isnan(xf)
    assert np.isnan(of[nan]).all()
    ok = ~nan
    assert (np.sign(of[ok]) * np.sign(xf[ok]) >= 0).all()
    assert (np.abs(of[ok]) <= np.abs(xf[ok])).all()
    bits = out.view(np.dtype(f"u{out.dtype.itemsize}"))
    finite = ok & np.isfinite(of)
    up = (bits[finite] + 1).view(out.dtype).astype(np.float64)  # next magnitude up, same sign
    assert (np.abs(up) > np.abs(xf[finite])).all()
    assert (of[np.isinf(xf)] == xf[np.isinf(xf)]).all()


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"),
                                     ("float64", "float32"), ("float64", "bfloat16"),
                                     ("float64", "float16")])
def test_rtz_downcast_rounds_toward_zero(src, dst):
    import ml_dtypes  # noqa: F401

    n = 128
    x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-8, 8, n)).astype(src)
    big = float(np.finfo(np.dtype(dst) if dst != "bfloat16" else np.float32).max)
    x[:6] = np.array([-8620.0, 1e300 if src == "float64" else 3e38, -big * 1.0000001 if
                      src == "float64" else -3e38, np.inf, np.nan, -0.0]).astype(src)
    out = poison(n, dst) if dst != "bfloat16" else np.zeros(n, dst)
    run(rtz_cast_kernel, (1,), [x, out], {"BLOCK": n, "DST": getattr(tl, dst)})
    assert_rounded_toward_zero(x, out)
    if dst == "bfloat16":
        assert float(out[0]) == -8576.0  # nearest-even gives -8640
    with np.errstate(over="ignore"):
        nearest = x.astype(dst) if dst != "bfloat16" else x.astype(np.float32).astype(dst)
    assert (out != nearest).any()  # the inputs do exercise the difference


# -- f16/bf16 reductions and scans accumulate in their own type on every backend ----------------


def run_reference(fn, args, constexprs, signature):
    from naiad.frontend import generate
    from naiad.passes import run_generic_pipeline
    from naiad_reference import execute

    module = generate(fn, signature, constexprs, {})
    run_generic_pipeline(module)
    execute(module, fn.__name__, (1,), args)


# (bfloat16 has float32's range: only float16 can show an overflow that f32 accumulation hides)
def test_f16_sum_overflows_in_half_on_reference_and_gpu():
    """Row 0 is +40000, +40000, -40000, -40000, ...: summed in f32 it is 0, summed in f16 (what
    Triton and naiad's GPU code compute) a partial sum overflows in any combine order whose
    first level does not pair elements 2 apart. The other rows are ordinary values, where both
    agree within f16 rounding."""
    M, N = 4, 64
    x = RNG.uniform(-4, 4, (M, N)).astype(np.float32)
    x[0] = np.where(np.arange(N) // 2 % 2 == 0, 40000.0, -40000.0)
    x = x.astype(np.float16)
    sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "stride": "i32"}
    consts = {"M": M, "N": N, "AXIS": 1, "OP": "sum"}
    gpu, ref = np.zeros(M, np.float16), np.zeros(M, np.float16)
    run(reduce_rows, (1,), [x, gpu, N], consts, signature=sig)
    run_reference(reduce_rows, [x, ref, N], consts, sig)
    for out in (gpu, ref):
        assert not np.isfinite(float(out[0])), out  # f32 accumulation would give 0
        np.testing.assert_allclose(out[1:].astype(np.float64),
                                   x[1:].astype(np.float64).sum(axis=1), rtol=0.05, atol=0.05)


def test_f16_cumsum_overflows_in_half_on_reference_and_gpu():
    M, N = 2, 32
    x = RNG.uniform(-4, 4, (M, N)).astype(np.float32)
    # the prefix x0+x1+x2+x3 is 0 in f32; in f16 x0+x1 overflows (both backends pair (x0+x1)
    # with (x2+x3): inf + -inf is NaN; a strictly sequential order would give inf)
    x[0, :2], x[0, 2:4] = 40000.0, -40000.0
    x = x.astype(np.float16)
    sig = {"x_ptr": "*fp16", "out_ptr": "*fp16"}
    consts = {"M": M, "N": N, "AXIS": 1, "REVERSE": False, "OP": "sum"}
    gpu, ref = np.zeros((M, N), np.float16), np.zeros((M, N), np.float16)
    run(scan_kernel, (1,), [x, gpu], consts, signature=sig)
    run_reference(scan_kernel, [x, ref], consts, sig)
    for out in (gpu, ref):
        assert not np.isfinite(out[0, [1, 3]].astype(np.float64)).any(), out[0, :4]
        np.testing.assert_allclose(out[1].astype(np.float64),
                                   np.cumsum(x[1].astype(np.float64)), rtol=0.05, atol=0.5)


# -- out-of-range float -> int casts saturate (NaN -> 0), on the GPU and on the reference ---------


def _saturated(x, dst):
    import math

    info = np.iinfo(dst)
    out = []
    for v in x.astype(np.float64):
        out.append(0 if math.isnan(v) else info.max if v >= info.max + 1.0 else
                   info.min if v <= info.min - 1.0 else math.trunc(v))
    return np.array(out, dtype=dst)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "int8"),
                                     ("float32", "uint8"), ("float64", "int64"),
                                     ("float64", "uint64"), ("float32", "uint32"),
                                     ("float16", "int16"), ("bfloat16", "int32")])
def test_float_to_int_cast_saturates(src, dst):
    import ml_dtypes  # noqa: F401

    n = 64
    x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(0, 25, n)).astype(np.float64)
    x[:8] = [np.nan, np.inf, -np.inf, -0.5, 2.0 ** 63, -2.0 ** 70, 300.7, -129.9]
    with np.errstate(over="ignore"):
        x = x.astype(np.float32).astype(src)
    want = _saturated(x, dst)
    sig = {"x_ptr": "*" + {"float32": "fp32", "float64": "fp64", "float16": "fp16",
                           "bfloat16": "bf16"}[src], "out_ptr": "*" + dst.replace("int", "i")
           .replace("ui", "u")}
    gpu = np.full(n, 5, dst)
    run(cast_kernel, (1,), [x, gpu], {"BLOCK": n, "DST": getattr(tl, dst)}, signature=sig)
    np.testing.assert_array_equal(gpu, want)
    ref = np.full(n, 5, dst)
    run_reference(cast_kernel, [x, ref], {"BLOCK": n, "DST": getattr(tl, dst)}, sig)
    np.testing.assert_array_equal(ref, want)


# -- argmin/argmax ignore NaN, as tl.max/tl.min do ------------------------------------------------
@naiad.jit
def arg_rows(x_ptr, idx_ptr, val_ptr, M: tl.constexpr, N: tl.constexpr, MAX: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if MAX:
        v, i = tl.max(x, axis=1, return_indices=True)
    else:
        v, i = tl.min(x, axis=1, return_indices=True)
    tl.store(idx_ptr + rm, i)
    tl.store(val_ptr + rm, v)


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_argmax_argmin_ignore_nan_on_gpu_and_reference(is_max, dtype):
    M, N = 8, 32
    npt = np.float32 if dtype == "fp32" else np.float16
    x = RNG.integers(-20, 20, (M, N)).astype(npt)  # ties too: the first index must win
    x[RNG.random((M, N)) < 0.2] = np.nan
    x[0, 0] = np.nan                 # NaN before the extremum
    x[1, :] = np.nan                 # all NaN: the first index, value NaN
    x[2, -1] = np.nan                # NaN last
    x[3, 5] = 99 if is_max else -99  # a unique extremum after NaNs
    sig = {"x_ptr": "*" + dtype, "idx_ptr": "*i32", "val_ptr": "*" + dtype}
    consts = {"M": M, "N": N, "MAX": is_max}
    rows = [r for r in range(M) if r != 1]
    pick = np.nanargmax if is_max else np.nanargmin
    extreme = np.nanmax if is_max else np.nanmin
    want_idx = np.array([pick(x[r]) for r in rows])
    want_val = np.array([extreme(x[r]) for r in rows])
    for backend in ("gpu", "reference"):
        idx, val = np.full(M, -7, np.int32), np.zeros(M, npt)
        if backend == "gpu":
            run(arg_rows, (1,), [x, idx, val], consts, signature=sig)
        else:
            run_reference(arg_rows, [x, idx, val], consts, sig)
        np.testing.assert_array_equal(idx[rows], want_idx, err_msg=backend)
        np.testing.assert_array_equal(val[rows], want_val, err_msg=backend)
        assert idx[1] == 0 and np.isnan(val[1]), backend
