"""Numerics every backend must share, where naiad's backends once disagreed with each other or
with Triton (issue #13): per-program atomics, unsigned umulhi, ``>>`` by the left operand's
signedness, (int, bf16) -> f32, exact float ``%``, ``fp_downcast_rounding="rtz"``, saturating
float -> int casts, half-precision sums, and argmax/argmin that ignore NaN.

Expected values are computed here with numpy/Python from the rules in docs/language.md."""
import math

import numpy as np
import pytest

import naiad
import naiad.language as tl

from .harness import np_dtype

N = 128


@naiad.jit
def counter_kernel(ctr_ptr, val):
    tl.atomic_add(ctr_ptr, 1)
    tl.atomic_xor(ctr_ptr + 1, val)


def test_uniform_atomics_apply_once_per_program(conf):
    ctr = np.array([conf.rng.integers(-100, 100), 12345], np.int32)
    val = int(conf.rng.integers(1, 1 << 20)) | 1
    want = np.array([ctr[0] + 8, ctr[1]], np.int32)  # xor'ed 8 times: back to the start
    want3 = np.array([ctr[0] + 3, ctr[1] ^ val], np.int32)
    conf.check(counter_kernel, (8,), [ctr, val], {0: want})
    conf.check(counter_kernel, (3,), [ctr, val], {0: want3})


@naiad.jit
def int_binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "shr":
        r = x >> y
    elif OP == "mul":
        r = x * y
    else:
        tl.static_assert(OP == "mod", "unknown OP")
        r = x % y
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_umulhi_of_signed_ints_is_the_unsigned_high_half(conf, dtype):
    dt = np_dtype(dtype)
    udt = np.dtype(f"u{dt.itemsize}")
    x, y = conf.rand(N, dtype), conf.rand(N, dtype)
    x[0] = y[0] = -1
    bits = dt.itemsize * 8
    want = np.array([(int(a) * int(b)) >> bits for a, b in zip(x.view(udt), y.view(udt))],
                    dtype=udt).view(dt)
    assert dtype != "int32" or want[0] == -2
    conf.check(int_binary_kernel, (1,), [x, y, conf.poison(N, dtype)], {2: want},
               dict(OP="umulhi", N=N))


def test_signed_shr_by_unsigned_is_arithmetic(conf):
    x = conf.rand(N, "int32")
    x[:2] = [-1000, -2**31]
    y = conf.rand(N, "uint32", 0, 31)
    want = (x >> y.astype(np.int32)).view(np.uint32)
    conf.check(int_binary_kernel, (1,), [x, y, conf.poison(N, "uint32")], {2: want},
               dict(OP="shr", N=N))


def test_int_times_bf16_is_float32(conf):
    x = conf.rand(N, "int16", -300, 300)
    y = conf.rand(N, "bfloat16")
    x[0], y[0] = 99, 1.0078125  # 99 * 1.0078125 is not a bf16
    want = x.astype(np.float32) * y.astype(np.float32)
    conf.check(int_binary_kernel, (1,), [x, y, conf.poison(N, "float32")], {2: want},
               dict(OP="mul", N=N), rtol=0, atol=0)


def _fmod_inputs(conf, dtype):
    dt = np_dtype(dtype)
    f = np.finfo(dt)
    x = (conf.rng.standard_normal(N) * 10.0 ** conf.rng.integers(-20, 20, N)).astype(dt)
    y = (conf.rng.standard_normal(N) * 10.0 ** conf.rng.integers(-20, 20, N)).astype(dt)
    edges = [(2.0 ** 32, 7.0), (np.inf, np.inf), (np.inf, 2.0), (5.0, np.inf),
             (float(f.max), np.inf), (float(f.max), 3.0), (1.0, 0.0), (-0.0, 3.0), (-6.0, 3.0),
             (np.nan, 1.0), (float(f.smallest_subnormal) * 7, float(f.smallest_subnormal) * 2),
             (float(f.max), float(f.smallest_subnormal)), (1e30, 1e-30), (123456.789, 0.1)]
    x[:len(edges)] = [e[0] for e in edges]
    y[:len(edges)] = [e[1] for e in edges]
    return x, y


def _bit_exact(have, want):
    bits = np.dtype(f"u{want.dtype.itemsize}")
    same = (have.view(bits) == want.view(bits)) | (np.isnan(have) & np.isnan(want))
    assert same.all(), f"{(~same).sum()} differ; first: got {have[~same][:3]}, want {want[~same][:3]}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mod_is_exact_fmod(conf, dtype):
    x, y = _fmod_inputs(conf, dtype)
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    conf.check(int_binary_kernel, (1,), [x, y, conf.poison(N, dtype)], {2: want},
               dict(OP="mod", N=N), compare=_bit_exact)


@naiad.jit
def rtz_kernel(x_ptr, out_ptr, DST: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST, fp_downcast_rounding="rtz"))


def _toward_zero(x, dst):
    """Nearest, then one ulp toward zero where that overshot (independent of the backends)."""
    with np.errstate(over="ignore"):
        r = (x.astype(np.float32) if dst.name == "bfloat16" else x).astype(dst)
    over = np.abs(r.astype(np.float64)) > np.abs(x.astype(np.float64))
    bits = r.view(np.dtype(f"u{dst.itemsize}"))
    return np.where(over & ~np.isnan(x), bits - bits.dtype.type(1), bits).view(dst)


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"),
                                     ("float64", "float32")])
def test_rtz_downcast(conf, src, dst):
    x = (conf.rng.standard_normal(N) * 10.0 ** conf.rng.integers(-6, 6, N)).astype(src)
    x[:4] = [-8620.0, 1e30 if src == "float32" else 1e300, np.nan, np.inf]
    want = _toward_zero(x, np_dtype(dst))
    conf.check(rtz_kernel, (1,), [x, conf.poison(N, dst)], {1: want},
               dict(DST={"float16": tl.float16, "bfloat16": tl.bfloat16,
                         "float32": tl.float32}[dst], N=N), compare=_bit_exact)


@naiad.jit
def cast_kernel(x_ptr, out_ptr, DST: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST))


@pytest.mark.parametrize("src,dst", [("float32", "int8"), ("float32", "int32"),
                                     ("float32", "uint32"), ("float64", "int64"),
                                     ("float64", "uint8")])
def test_float_to_int_saturates(conf, src, dst):
    x = (conf.rng.standard_normal(N) * 10.0 ** conf.rng.integers(0, 22, N)).astype(src)
    x[:6] = [np.nan, np.inf, -np.inf, -0.5, 2.0 ** 63, 300.7]
    info = np.iinfo(np_dtype(dst))
    want = np.array([0 if math.isnan(v) else info.max if v >= info.max + 1.0 else
                     info.min if v <= info.min - 1.0 else math.trunc(v)
                     for v in x.astype(np.float64)], dtype=np_dtype(dst))
    conf.check(cast_kernel, (1,), [x, conf.poison(N, dst)], {1: want},
               dict(DST=getattr(tl, dst), N=N))


@naiad.jit
def half_sum_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    x = tl.load(x_ptr + rm[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(out_ptr + rm, tl.sum(x, axis=1))


def test_half_sum_accumulates_in_half(conf):
    """Row 0 is +40000, +40000, -40000, -40000, ... : 0 in f32, but in f16 (Triton's and
    naiad's compiled adds) a partial sum overflows whatever the combine order, unless the first
    level pairs elements 2 apart, which no backend does. Other rows: ordinary values."""
    M, K = 4, 64
    x = conf.rand((M, K), "float16")
    x[0] = np.where(np.arange(K) // 2 % 2 == 0, 40000, -40000)
    want = x.astype(np.float64).sum(axis=1)

    def compare(have, expected):
        assert not np.isfinite(float(have[0])), f"f16 sum of row 0 is finite: {have[0]}"
        np.testing.assert_allclose(have[1:].astype(np.float64), want[1:], rtol=0.02, atol=0.1)

    conf.check(half_sum_kernel, (1,), [x, conf.poison(M, "float16")], {1: want},
               dict(M=M, K=K), compare=compare)


@naiad.jit
def argmax_kernel(x_ptr, idx_ptr, M: tl.constexpr, K: tl.constexpr, MAX: tl.constexpr):
    rm = tl.arange(0, M)
    x = tl.load(x_ptr + rm[:, None] * K + tl.arange(0, K)[None, :])
    if MAX:
        tl.store(idx_ptr + rm, tl.argmax(x, axis=1))
    else:
        tl.store(idx_ptr + rm, tl.argmin(x, axis=1))


@pytest.mark.parametrize("is_max", [True, False])
def test_argmax_argmin_ignore_nan(conf, is_max):
    M, K = 8, 32
    x = conf.rand((M, K), "int8", -20, 20).astype(np.float32)  # ties: the first index wins
    x[conf.rng.random((M, K)) < 0.2] = np.nan
    x[0, 0] = np.nan
    x[1, :] = np.nan
    want = np.array([0 if np.isnan(r).all() else (np.nanargmax(r) if is_max else np.nanargmin(r))
                     for r in x], np.int32)
    conf.check(argmax_kernel, (1,), [x, conf.poison(M, "int32")], {1: want},
               dict(M=M, K=K, MAX=is_max))


@naiad.jit
def narrow_neg_kernel(x_ptr, y_ptr, out_ptr, abs_ptr, lt_ptr, shr_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    neg = -x
    tl.store(out_ptr + offs, neg & tl.load(y_ptr + offs))
    tl.store(abs_ptr + offs, tl.abs(x).to(tl.int32))
    tl.store(lt_ptr + offs, (neg < 0).to(tl.int32))
    tl.store(shr_ptr + offs, (neg >> 3).to(tl.int32))


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
def test_narrow_negation_wraps_before_widening(conf, dtype):
    """-x and abs(x) of the narrow type's minimum wrap to the minimum (integer arithmetic wraps
    at the operand's width), and what reads them (``&`` with an int32, a widening cast, ``<``,
    ``>>``) sees the wrapped value. Fuzz seeds 10515 and 13864 on the H200 computed
    ``-int16(-32768) & y`` as ``32768 & y``: ptxas 12.x folds ``neg.s16``/``abs.s16`` into a
    32-bit negate without re-normalising, so the NVIDIA backend never hands it those
    instructions (toolchain.harden_narrow_ints; the SASS is checked in
    backends/nvidia/tests/test_nv_narrow_ints.py)."""
    dt = np_dtype(dtype)
    x = conf.rand(N, dtype)
    x[:4] = np.iinfo(dt).min
    x[4:8] = np.iinfo(dt).max
    y = conf.rand(N, "int32")
    y[:4] = [-1, -65535, -7, 2**31 - 1]
    with np.errstate(over="ignore"):
        neg = -x                      # numpy negates in dtype (wraps), then widens exactly
    want = neg.astype(np.int32) & y
    want_abs = (np.abs(x) if dt.kind == "i" else x).astype(np.int32)
    want_lt = (neg < 0).astype(np.int32)
    want_shr = (neg >> 3).astype(np.int32)
    if dt.kind == "i":
        assert want[0] == np.iinfo(dt).min and want_abs[0] == np.iinfo(dt).min
    outs = [conf.poison(N, "int32") for _ in range(4)]
    conf.check(narrow_neg_kernel, (1,), [x, y, *outs],
               {2: want, 3: want_abs, 4: want_lt, 5: want_shr}, dict(N=N))


@naiad.jit
def narrow_wrap_kernel(x_ptr, y_ptr, sum_ptr, diff_ptr, prod_ptr, shl_ptr, lt_ptr,
                       N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(sum_ptr + offs, (x + y).to(tl.int32))
    tl.store(diff_ptr + offs, (x - y).to(tl.int32))
    tl.store(prod_ptr + offs, (x * y).to(tl.int32))
    tl.store(shl_ptr + offs, (x << (y & 3)).to(tl.int32))
    tl.store(lt_ptr + offs, ((x + y) < (x - y)).to(tl.int32))


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
def test_narrow_arithmetic_wraps_before_widening(conf, dtype):
    """+, -, *, << of 8/16-bit integers wrap at their width before a widening cast or a
    comparison reads them (the hazard of the narrow negation above; ptxas 12.9 re-normalises
    these, checked in SASS, and this case checks it on the device)."""
    dt = np_dtype(dtype)
    info = np.iinfo(dt)
    x = conf.rand(N, dtype)
    y = conf.rand(N, dtype)
    x[:6] = [info.min, info.max, info.max, info.min, info.max, info.min]
    y[:6] = [info.max, info.max, 1, 1, 3, 2]
    with np.errstate(over="ignore"):
        want = [(x + y), (x - y), (x * y), (x << (y & 3)).astype(dt)]
        lt = ((x + y) < (x - y)).astype(np.int32)
    outs = [conf.poison(N, "int32") for _ in range(5)]
    conf.check(narrow_wrap_kernel, (1,), [x, y, *outs],
               {2 + i: w.astype(np.int32) for i, w in enumerate(want)} | {6: lt}, dict(N=N))
