"""The lowering's numerics, checked against numpy on the CPU SIMT device (see simt.py).

Every kernel runs through the real pipeline with warps of 4 or 8 lanes (and 16/32 where the
shape matters), so reductions, scans, conversions and atomics cross lanes *and* warps. Outputs
are poisoned first; inputs are fresh random numbers.
"""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from simt import run
from gpu_kernels import (add_kernel, binary_kernel, cast_kernel, math_kernel, bool_copy,
                         scalar_kernel, reduce_rows, softmax_kernel, custom_reduce_kernel,
                         scan_kernel, dot_kernel, matmul_loop, histogram, atomic_small,
                         atomic_scalar, cas_kernel, trans_kernel, reshape_kernel,
                         join_split_kernel, broadcast_kernel, loops_kernel)

RNG = np.random.default_rng(1234)
ALIGNED = {"divisibility": 16}


def rand(shape, dtype="float32", low=-2.0, high=2.0):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(low), info.min), min(int(high), info.max)
        return RNG.integers(lo, hi + 1, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def poison(shape, dtype="float32"):
    if str(dtype) == "bfloat16":
        import ml_dtypes

        return np.full(shape, np.nan, np.float32).astype(ml_dtypes.bfloat16)
    if np.dtype(dtype).kind == "f":
        return np.full(shape, np.nan, dtype)
    if np.dtype(dtype).kind == "b":
        return np.zeros(shape, dtype)
    return np.full(shape, np.iinfo(dtype).min + 3, dtype)


# -- elementwise, masks, vectorization -------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 37, 256])
@pytest.mark.parametrize("ws,nw", [(4, 2), (8, 4)])
def test_vector_add_masked(n, ws, nw):
    x, y = rand(n), rand(n)
    out = poison(n + 5)
    run(add_kernel, (naiad.cdiv(n, 64),), [x, y, out, n], {"BLOCK": 64}, warp_size=ws,
            num_warps=nw, specialization={"x_ptr": ALIGNED, "y_ptr": ALIGNED, "out_ptr": ALIGNED})
    np.testing.assert_array_equal(out[:n], x + y)
    assert np.isnan(out[n:]).all()  # masked lanes wrote nothing


def test_vector_add_is_vectorized_when_aligned():
    n = 256
    x, y, out = rand(n), rand(n), poison(n)
    k = run(add_kernel, (4,), [x, y, out, n], {"BLOCK": 64},
            specialization={"x_ptr": ALIGNED, "y_ptr": ALIGNED, "out_ptr": ALIGNED,
                            "n": ALIGNED})
    np.testing.assert_array_equal(out, x + y)
    assert "load <4 x float>" in k.lowered.llvm_ir
    assert "store <4 x float>" in k.lowered.llvm_ir


def _trunc_div(x, y):
    q = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -q, q).astype(x.dtype)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16", "int64"])
@pytest.mark.parametrize("op", ["floordiv", "mod", "max", "min", "lt", "ne", "xor"])
def test_integer_ops(dtype, op):
    x = rand(64, dtype, -100, 100)
    y = rand(64, dtype, -20, 20)
    y[y == 0] = 3
    out_dtype = "bool" if op in ("lt", "ne") else dtype
    out = poison(64, out_dtype)
    run(binary_kernel, (1,), [x, y, out], {"OP": op, "BLOCK": 64})
    want = {"floordiv": lambda: _trunc_div(x, y),
            "mod": lambda: (x - _trunc_div(x, y) * y).astype(dtype),
            "max": lambda: np.maximum(x, y), "min": lambda: np.minimum(x, y),
            "lt": lambda: x < y, "ne": lambda: x != y, "xor": lambda: x ^ y}[op]()
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int8"])
def test_shifts_out_of_range(dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = rand(64, dtype, -1000, 1000)
    y = rand(64, dtype, 0, bits + 4)
    for op, fn in (("shl", np.left_shift), ("shr", np.right_shift)):
        out = poison(64, dtype)
        run(binary_kernel, (1,), [x, y, out], {"OP": op, "BLOCK": 64})
        with np.errstate(all="ignore"):
            want = np.array([fn(a, b) if b < bits else
                             (np.array(-1 if (op == "shr" and a < 0) else 0).astype(dtype))
                             for a, b in zip(x, y)], dtype=dtype)
        np.testing.assert_array_equal(out, want)


def test_umulhi():
    x = rand(64, "uint32", 0, 2**32 - 1)
    y = rand(64, "uint32", 0, 2**32 - 1)
    out = poison(64, "uint32")
    run(binary_kernel, (1,), [x, y, out], {"OP": "umulhi", "BLOCK": 64})
    want = ((x.astype(np.uint64) * y.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("op", ["truediv", "mod", "max", "min", "lt"])
def test_float_ops(dtype, op):
    import ml_dtypes  # noqa: F401

    x = rand(64, "float32").astype(dtype)
    y = rand(64, "float32", 0.5, 3).astype(dtype)
    x[:4] = np.array([np.nan, 1.0, -0.0, 3.0], dtype=np.float32).astype(dtype)
    y[:4] = np.array([1.0, np.nan, 2.0, 3.0], dtype=np.float32).astype(dtype)
    out_dtype = "bool" if op == "lt" else dtype
    out = poison(64, out_dtype) if op == "lt" else np.full(64, 7, dtype)
    run(binary_kernel, (1,), [x, y, out], {"OP": op, "BLOCK": 64})
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        want = {"truediv": lambda: (x.astype(np.float32) / y.astype(np.float32)).astype(dtype)
                if dtype in ("float16", "bfloat16") else x / y,
                "mod": lambda: np.fmod(xf, yf).astype(dtype),
                "max": lambda: np.fmax(x, y), "min": lambda: np.fmin(x, y),
                "lt": lambda: x < y}[op]()
    np.testing.assert_array_equal(out.astype(np.float64) if op != "lt" else out,
                                  want.astype(np.float64) if op != "lt" else want)


_TL = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16,
       "float64": tl.float64, "int32": tl.int32, "int8": tl.int8, "uint8": tl.uint8,
       "int64": tl.int64, "bool": tl.int1, "uint32": tl.uint32}


@pytest.mark.parametrize("src,dst", [
    ("float32", "bfloat16"), ("bfloat16", "float32"), ("float64", "bfloat16"),
    ("float16", "bfloat16"), ("bfloat16", "float16"), ("float32", "float16"),
    ("float32", "int32"), ("int32", "float32"), ("int8", "int64"), ("uint8", "int32"),
    ("int64", "int8"), ("int32", "bfloat16"), ("float32", "bool"), ("int32", "bool"),
    ("bool", "float32"), ("bool", "int32"), ("uint32", "float64"), ("float64", "float16"),
])
def test_casts(src, dst):
    import ml_dtypes  # noqa: F401

    if src == "bool":
        x = RNG.integers(0, 2, 64).astype(bool)
    elif np.dtype(src).kind in "iu":
        x = rand(64, src, -100, 100)
    else:
        x = (rand(64, "float64", -300, 300) * RNG.uniform(0.001, 1, 64)).astype(src)
        x[0] = 0.0
        x[1] = -0.0
    out = poison(64, dst)
    run(cast_kernel, (1,), [x, out], {"BLOCK": 64, "DST": _TL[dst]})
    if dst == "bool":
        want = x != 0
    elif np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        want = np.trunc(x.astype(np.float64)).astype(dst)
    else:
        want = x.astype(dst)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("op", ["exp", "sqrt", "abs", "neg", "erf", "sigmoid"])
def test_math(dtype, op):
    import math

    import ml_dtypes  # noqa: F401

    x = rand(32, "float32", 0.1 if op == "sqrt" else -3, 3).astype(dtype)
    out = poison(32, "float32").astype(dtype)
    run(math_kernel, (1,), [x, out], {"OP": op, "BLOCK": 32})
    xf = x.astype(np.float64)
    want = {"exp": np.exp(xf), "sqrt": np.sqrt(xf), "abs": np.abs(xf), "neg": -xf,
            "erf": np.array([math.erf(v) for v in xf]), "sigmoid": 1 / (1 + np.exp(-xf))}[op]
    tol = {"float32": 1e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol)


def test_i1_memory_is_bytes():
    x = RNG.integers(0, 2, 64).astype(bool)
    out = np.zeros(64, bool)
    run(bool_copy, (1,), [x, out], {"BLOCK": 64})
    np.testing.assert_array_equal(out, x ^ (np.arange(64) % 3 == 0))


# -- scalars ------------------------------------------------------------------------------------

def test_scalar_load_store_and_i1_argument():
    x = rand(8)
    out = poison(5)
    run(scalar_kernel, (5,), [x, out, 3.0, True], signature={"k": "fp32", "flag": "i1"})
    np.testing.assert_allclose(out, x[3] * 3 + np.arange(5), rtol=1e-6)
    out2 = poison(5)
    run(scalar_kernel, (5,), [x, out2, 3.0, False], signature={"k": "fp32", "flag": "i1"})
    np.testing.assert_allclose(out2, x[3] + np.arange(5), rtol=1e-6)


# -- reductions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 64), (64, 4), (16, 16), (2, 2), (32, 128)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "argmax"])
def test_reduce_2d(shape, axis, op):
    m, n = shape
    if op == "argmax":
        x = rand(shape, "int32", -5, 5).astype(np.float32)  # many ties: the first index wins
    else:
        x = rand(shape)
    out = poison(shape[1 - axis], "int32" if op == "argmax" else "float32")
    run(reduce_rows, (1,), [x, out, n], {"M": m, "N": n, "AXIS": axis, "OP": op})
    want = {"sum": x.sum(axis=axis), "max": x.max(axis=axis),
            "argmax": x.argmax(axis=axis)}[op]
    if op == "sum":
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("ws,nw", [(4, 1), (4, 4), (16, 2), (32, 4), (64, 2)])
def test_reduce_across_warp_sizes(ws, nw):
    x = rand((8, 64), "int32", -1000, 1000)
    out = poison(8, "int32")
    run(reduce_rows, (1,), [x, out, 64], {"M": 8, "N": 64, "AXIS": 1, "OP": "xor"},
        warp_size=ws, num_warps=nw)
    np.testing.assert_array_equal(out, np.bitwise_xor.reduce(x, axis=1))


@pytest.mark.parametrize("n_cols", [5, 64, 200])
def test_softmax(n_cols):
    rows = 3
    x = rand((rows, n_cols), low=-5, high=5)
    out = poison((rows, n_cols))
    run(softmax_kernel, (rows,), [out, x, n_cols, n_cols], {"BLOCK": 256}, num_warps=4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_reduce_with_jit_combine_to_scalar():
    x = rand(128)
    out = poison(1)
    run(custom_reduce_kernel, (1,), [x, out], {"N": 128}, num_warps=4)
    assert out[0] == np.abs(x).max()


# -- scans ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 256), (4, 64), (64, 4), (16, 32), (2, 2)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(shape, axis, reverse):
    x = rand(shape, "int32", -50, 50)
    out = poison(shape, "int32")
    run(scan_kernel, (1,), [x, out], {"M": shape[0], "N": shape[1], "AXIS": axis,
                                      "REVERSE": reverse, "OP": "sum"}, num_warps=4)
    if reverse:
        want = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    else:
        want = np.cumsum(x, axis=axis)
    np.testing.assert_array_equal(out, want.astype(np.int32))


@pytest.mark.parametrize("ws,nw", [(4, 2), (8, 8), (32, 2), (64, 1)])
def test_cumprod_across_warp_sizes(ws, nw):
    x = rand((2, 128), "int32", -3, 3)
    out = poison((2, 128), "int32")
    run(scan_kernel, (1,), [x, out], {"M": 2, "N": 128, "AXIS": 1, "REVERSE": False,
                                      "OP": "prod"}, warp_size=ws, num_warps=nw)
    np.testing.assert_array_equal(out, np.cumprod(x, axis=1).astype(np.int32))


# -- dot ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mnk", [(16, 16, 16), (32, 16, 64), (16, 64, 16), (64, 32, 16)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "float64"])
def test_dot(mnk, dtype):
    import ml_dtypes  # noqa: F401

    m, n, k = mnk
    if dtype == "int8":
        a, b = rand((m, k), "int8", -100, 100), rand((k, n), "int8", -100, 100)
        out_t, out_dtype = tl.int32, "int32"
    else:
        a = rand((m, k)).astype(dtype)
        b = rand((k, n)).astype(dtype)
        out_t, out_dtype = (tl.float64, "float64") if dtype == "float64" else \
            (tl.float32, "float32")
    c = poison((m, n), out_dtype)
    run(dot_kernel, (1,), [a, b, c], {"M": m, "N": n, "K": k, "OUT": out_t}, num_warps=2)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(c, want.astype(np.int32))
    else:
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * k)


def test_tiled_matmul_with_loop_carried_accumulator():
    m, n, k = 40, 24, 50
    a, b = rand((m, k)).astype(np.float16), rand((k, n)).astype(np.float16)
    c = poison((m, n))
    run(matmul_loop, (3, 2), [a, b, c, m, n, k], {"BM": 16, "BN": 16, "BK": 16}, num_warps=2)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                               atol=1e-4)


# -- atomics --------------------------------------------------------------------------------------

def test_histogram_repeated_addresses():
    x = rand(300, "int32", 0, 7)
    hist = np.zeros(8, np.int32)
    run(histogram, (5,), [x, hist, 300], {"BLOCK": 64})
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=8))


@pytest.mark.parametrize("dtype,kind", [
    (d, k) for d in ("float32", "int32", "uint32", "float64", "int64")
    for k in ("add", "max", "min", "xchg")] + [("float16", "add"), ("bfloat16", "add")])
def test_atomics_on_a_broadcast_layout_apply_once(dtype, kind):
    """4 elements over 16 threads: each element is held by 4 threads but applied once, and
    every thread sees the old value."""
    import ml_dtypes  # noqa: F401

    n = 4
    if np.dtype(dtype).kind == "u":
        start, val = rand(n, dtype, 0, 50), rand(n, dtype, 0, 50)
    else:
        start = rand(n, "float32", -4, 4).round().astype(dtype)
        val = rand(n, "float32", -4, 4).round().astype(dtype)
    cnt = start.copy()
    old = poison(n, "float32").astype(dtype) if np.dtype(dtype).kind == "f" else poison(n, dtype)
    run(atomic_small, (1,), [cnt, old, val], {"N": n, "KIND": kind}, warp_size=8, num_warps=2)
    np.testing.assert_array_equal(old, start)
    s, v = start.astype(np.float64), val.astype(np.float64)
    want = {"add": s + v, "max": np.maximum(s, v), "min": np.minimum(s, v), "xchg": v}[kind]
    np.testing.assert_array_equal(cnt.astype(np.float64), want)


def test_scalar_atomic_once_per_program():
    cnt = np.array([5], np.int32)
    old = poison(6, "int32")
    run(atomic_scalar, (6,), [cnt, old])
    assert cnt[0] == 5 + 12
    np.testing.assert_array_equal(np.sort(old), 5 + 2 * np.arange(6))


def test_atomic_cas():
    lock = np.zeros(16, np.int32)
    out = poison(16, "int32")
    run(cas_kernel, (1,), [lock, out], {"N": 16})
    np.testing.assert_array_equal(out, 0)
    np.testing.assert_array_equal(lock, np.where(np.arange(16) % 2 == 0, np.arange(16) + 10, 0))


# -- shape ops and layout conversions -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 32), (32, 4), (16, 16)])
def test_trans(shape):
    x = rand(shape)
    out = poison(shape[::-1])
    run(trans_kernel, (1,), [x, out], {"M": shape[0], "N": shape[1]},
        specialization={"x_ptr": ALIGNED, "out_ptr": ALIGNED})
    np.testing.assert_array_equal(out, x.T)


def test_reshape_then_reduce():
    x = rand(256, "int32", -100, 100)
    out = poison(16, "int32")
    run(reshape_kernel, (1,), [x, out], {"M": 16, "N": 16})
    np.testing.assert_array_equal(out, x.reshape(16, 16).sum(axis=1))


def test_join_and_split():
    x, y = rand(64), rand(64)
    x0, y0 = x.copy(), y.copy()
    out = poison((64, 2))
    run(join_split_kernel, (1,), [x, y, out], {"N": 64})
    np.testing.assert_array_equal(out, np.stack([x0, y0], axis=1))
    np.testing.assert_array_equal(x, y0)
    np.testing.assert_array_equal(y, x0)


def test_outer_product_broadcast():
    x, y = rand(16), rand(32)
    out = poison((16, 32))
    run(broadcast_kernel, (1,), [x, y, out], {"M": 16, "N": 32},
        specialization={"out_ptr": ALIGNED, "y_ptr": ALIGNED})
    np.testing.assert_allclose(out, x[:, None] * y[None, :] + 1.0, rtol=1e-6)


# -- control flow ----------------------------------------------------------------------------------

def test_for_while_if_with_tensors():
    x = rand(32, low=0, high=50)
    out = poison(32)
    run(loops_kernel, (1,), [x, out, 5], {"BLOCK": 32})
    acc = x.astype(np.float32).copy()
    total = np.zeros(32, np.float32)
    for i in range(5):
        acc = (acc * np.float32(0.5) + np.float32(i)).astype(np.float32)
        total = total + acc if i % 2 == 0 else total - acc.max()
    j = 0
    while total.sum() > 0 and j < 5:
        total = total - 100.0
        j += 1
    for i in range(10, 0, -3):
        total += i
    np.testing.assert_allclose(out, total, rtol=1e-5)


# -- the generic paths: layouts the core passes would not choose -------------------------------

def _forcing_plugin(op_name, make_layout):
    """A backend whose extra pass moves every ``op_name``'s operands (and results) into
    ``make_layout(shape, ctx)``, converting back for the users."""
    import pluggy

    from naiad.gpu.passes import default_lowering_passes
    from naiad.ir.core import Operation
    from naiad.ir.types import TensorType
    from naiad.plugins import hookimpl, hookspecs

    def force(module, ctx):
        for fn in module.functions.values():
            for op in list(fn.walk()):
                if op.name != op_name:
                    continue
                lay = make_layout(op.operands[0].type.shape, ctx)
                for i, v in enumerate(list(op.operands)):
                    cvt = Operation("convert_layout", [v],
                                    [TensorType(v.type.shape, v.type.element, lay)])
                    op.parent.insert_before(op, cvt)
                    op.set_operand(i, cvt.result)
                block = op.parent
                for r in op.results:
                    if not isinstance(r.type, TensorType):
                        continue
                    old = r.type
                    if op_name == "scan":
                        r.type = TensorType(old.shape, old.element, lay)
                    else:  # reduce: a slice of the forced layout
                        from naiad.gpu.layouts import SliceLayout

                        r.type = TensorType(old.shape, old.element,
                                            SliceLayout(op.attrs["axis"], lay))
                    back = Operation("convert_layout", [r], [old])
                    block.insert(block.ops.index(op) + 1, back)
                    for user, idx in list(r.uses):
                        if user is not back:
                            user.set_operand(idx, back.result)

    class Plugin:
        @hookimpl
        def naiad_lowering_passes(self, target, options):
            passes = default_lowering_passes(target, options)
            return passes[:1] + [force] + passes[1:]

    pm = pluggy.PluginManager("naiad")
    pm.add_hookspecs(hookspecs)
    pm.register(Plugin())
    return pm


def _repeating_blocked(shape, ctx):
    """Registers repeat *above* the lanes and warps (blocked tile smaller than the tensor)."""
    from naiad.gpu.layouts import BlockedLayout

    rank = len(shape)
    tpw = [1] * rank
    tpw[-1] = ctx.warp_size
    wpc = [1] * rank
    wpc[-1] = ctx.num_warps
    return BlockedLayout((1,) * rank, tuple(tpw), tuple(wpc), tuple(range(rank - 1, -1, -1)))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_through_an_unordered_layout(reverse):
    pm = _forcing_plugin("scan", _repeating_blocked)
    x = rand((2, 256), "int32", -50, 50)
    out = poison((2, 256), "int32")
    k = run(scan_kernel, (1,), [x, out], {"M": 2, "N": 256, "AXIS": 1, "REVERSE": reverse,
                                          "OP": "sum"}, warp_size=4, num_warps=4, pm=pm)
    assert "sizePerThread = [1, 1], threadsPerWarp = [1, 4], warpsPerCTA = [1, 4]" in \
        k.lowered.gpu_text
    want = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
    np.testing.assert_array_equal(out, want.astype(np.int32))


def _duplicated_lanes(shape, ctx):
    """Lane bits 0 and 1 select the same column: every element is held by two lanes twice."""
    from naiad.gpu.layouts import LinearEncoding

    nl = ctx.warp_size.bit_length() - 1
    lanes = [(0, 1), (0, 1)] + [(0, 2 << i) for i in range(nl - 2)]
    warps = [(1 << i, 0) for i in range(ctx.num_warps.bit_length() - 1)]
    return LinearEncoding((), tuple(lanes), tuple(warps))


def test_reduce_through_a_layout_with_duplicate_lanes():
    pm = _forcing_plugin("reduce", _duplicated_lanes)
    x = rand((8, 64), "int32", -1000, 1000)
    out = poison(8, "int32")
    k = run(reduce_rows, (1,), [x, out, 64], {"M": 8, "N": 64, "AXIS": 1, "OP": "sum"},
            warp_size=8, num_warps=2, pm=pm)
    assert "#linear<" in k.lowered.gpu_text
    np.testing.assert_array_equal(out, x.sum(axis=1))


# -- odd sizes: tiny tensors, one warp, many warps -------------------------------------------------

@pytest.mark.parametrize("block", [1, 2, 4])
@pytest.mark.parametrize("nw", [1, 4])
def test_tiny_blocks(block, nw):
    x = rand((block, block))
    out = poison(block)
    run(reduce_rows, (1,), [x, out, block], {"M": block, "N": block, "AXIS": 1, "OP": "max"},
        warp_size=4, num_warps=nw)
    np.testing.assert_array_equal(out, x.max(axis=1))
    y = rand(block * 3)
    o2 = poison(block * 3)
    run(add_kernel, (3,), [y, y, o2, block * 3], {"BLOCK": block}, warp_size=4, num_warps=nw)
    np.testing.assert_array_equal(o2, y + y)


@pytest.mark.parametrize("nw", [1, 16])
def test_softmax_warp_counts(nw):
    x = rand((2, 100), low=-5, high=5)
    out = poison((2, 100))
    run(softmax_kernel, (2,), [out, x, 100, 100], {"BLOCK": 128}, warp_size=4, num_warps=nw)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
