"""reduce / scan (vectorised single-op combines and generic regions) and dot."""
import ml_dtypes
import numpy as np
import pytest

from naiad.ir import tensor
from naiad_reference import execute
from refkit import K, binop, poison, random_array, rng

R, C = 8, 16  # tile per program


def tile_offsets(k, rows, cols):
    """pid*rows*cols + r*cols + c, as an [rows, cols] i32 tensor."""
    base = k.splat(k.op("mul", k.pid(), k.const(rows * cols, "i32")), [rows, cols])
    r = k.bcast(k.op("mul", k.expand(k.arange(0, rows), 1), k.full(cols, [rows, 1], "i32")),
                [rows, cols])
    c = k.bcast(k.expand(k.arange(0, cols), 0), [rows, cols])
    return k.op("add", base, k.op("add", r, c))


def reduce_kernel(t, axis, combine, n_inputs=1, with_index=False):
    """Each program reduces its [R, C] tile along ``axis`` and stores the result(s)."""
    k = K("red", x=f"*{t}", out=f"*{t}", idx="*i32")
    offs = tile_offsets(k, R, C)
    x = k.load(k.addptr(k.a["x"], offs))
    inputs = [x]
    if with_index:
        size = (R, C)[axis]
        ar = k.arange(0, size)
        ar = k.expand(ar, 1 - axis)
        inputs.append(k.bcast(ar, [R, C]))
    res = k.reduce(inputs, axis, combine)
    n_out = (C, R)[axis]
    o = k.op("add", k.splat(k.op("mul", k.pid(), k.const(n_out, "i32")), [n_out]),
             k.arange(0, n_out))
    k.store(k.addptr(k.a["out"], o), res[0])
    if with_index:
        k.store(k.addptr(k.a["idx"], o), res[1])
    return k.finish()


def run_reduce(t, axis, combine, programs=5, with_index=False, x=None):
    dt = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
          "i32": np.int32, "i8": np.int8, "u16": np.uint16, "i64": np.int64}[t]
    if x is None:
        x = random_array(rng(), (programs, R, C), dt)
    n_out = (C, R)[axis]
    out = poison((programs, n_out), dt)
    idx = poison((programs, n_out), np.int32)
    execute(reduce_kernel(t, axis, combine, with_index=with_index), "red", (programs,),
            [x, out, idx])
    return x, out, idx


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("t", ["f32", "f64", "f16", "bf16"])
def test_sum_floats(t, axis):
    x, out, _ = run_reduce(t, axis, binop("add"))
    want = x.astype(np.float64).sum(axis=1 + axis)
    tol = {"f32": 1e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 3e-2}[t]
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("t", ["i8", "i32", "u16", "i64"])
def test_sum_integers_wraps(t):
    x, out, _ = run_reduce(t, 1, binop("add"))
    bits = int(t[1:])
    for p in range(x.shape[0]):
        for r in range(R):
            s = sum(int(v) for v in x[p, r]) & ((1 << bits) - 1)
            if t.startswith("i") and s >= 1 << (bits - 1):
                s -= 1 << bits
            assert int(out[p, r]) == s


@pytest.mark.parametrize("name,ref", [("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("t", ["f32", "i32", "u16", "bf16"])
def test_max_min(name, ref, t):
    x, out, _ = run_reduce(t, 0, binop(name))
    np.testing.assert_array_equal(out.astype(np.float64), ref(x.astype(np.float64), axis=1))


def test_max_ignores_nan_unless_propagating():
    x = random_array(rng(), (3, R, C), np.float32)
    x[0, 2, 5] = np.nan
    _, out, _ = run_reduce("f32", 1, binop("max"), programs=3, x=x)
    np.testing.assert_array_equal(out, np.fmax.reduce(x, axis=2))
    _, out, _ = run_reduce("f32", 1, binop("max", propagate_nan=True), programs=3, x=x)
    assert np.isnan(out[0, 2]) and not np.isnan(np.delete(out.ravel(), 2)).any()


def test_xor_sum():
    x, out, _ = run_reduce("i32", 1, binop("xor"))
    np.testing.assert_array_equal(out, np.bitwise_xor.reduce(x, axis=2))


def linear_recurrence(k, acc, new):
    """Compose affine maps h -> a*h + b: (a1,b1) then (a2,b2) = (a1*a2, b1*a2 + b2).
    Associative but not commutative: catches any reordering."""
    (a1, b1), (a2, b2) = acc, new
    return [k.op("mul", a1, a2), k.op("add", k.op("mul", b1, a2), b2)]


def argmax_combine(k, acc, new):
    """(value, index) argmax: larger value wins, ties keep the smaller index."""
    (v1, i1), (v2, i2) = acc, new
    gt = k.cmp("gt", v1, v2)
    eq = k.cmp("eq", v1, v2)
    lt_i = k.cmp("lt", i1, i2)
    take1 = k.op("or", gt, k.op("and", eq, lt_i))
    return [k.op("select", take1, v1, v2, type=v1.type),
            k.op("select", take1, i1, i2, type=i1.type)]


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_generic_region_with_ties(axis):
    r = rng()
    x = r.integers(0, 5, size=(6, R, C)).astype(np.float32)  # many ties
    _, out, idx = run_reduce("f32", axis, argmax_combine, programs=6, with_index=True, x=x)
    np.testing.assert_array_equal(out, x.max(axis=1 + axis))
    np.testing.assert_array_equal(idx, x.argmax(axis=1 + axis))  # numpy: first max wins


def test_generic_region_max_written_with_cmp_select():
    """A two-op combine region is not a known single op: the generic tree path runs it."""
    def max_region(k, acc, new):
        gt = k.cmp("gt", acc[0], new[0])
        return [k.op("select", gt, acc[0], new[0], type=acc[0].type)]

    x, out, _ = run_reduce("i32", 1, max_region)
    np.testing.assert_array_equal(out, x.max(axis=2))


def test_generic_reduce_keeps_left_to_right_order():
    """Composition of affine maps (associative, not commutative) over 6 elements (6 -> 3 -> 2
    -> 1 exercises the odd leftover): any reordering would show."""
    k = K("comp", a="*f64", b="*f64", oa="*f64", ob="*f64")
    offs = k.offsets(6)
    a = k.load(k.addptr(k.a["a"], offs))
    b = k.load(k.addptr(k.a["b"], offs))
    ra, rb = k.reduce([a, b], 0, linear_recurrence)
    k.store(k.addptr(k.a["oa"], k.pid()), ra)
    k.store(k.addptr(k.a["ob"], k.pid()), rb)
    r = rng()
    av = random_array(r, (4, 6), np.float64, low=0.5, high=1.5)
    bv = random_array(r, (4, 6), np.float64)
    oa, ob = poison(4, np.float64), poison(4, np.float64)
    execute(k.finish(), "comp", (4,), [av, bv, oa, ob])
    for p in range(4):
        ca, cb = 1.0, 0.0
        for j in range(6):
            ca, cb = ca * av[p, j], cb * av[p, j] + bv[p, j]
        assert oa[p] == pytest.approx(ca, rel=1e-12) and ob[p] == pytest.approx(cb, rel=1e-12)


def test_reduce_rank1_to_scalar_per_program():
    k = K("rowsum", x="*f32", out="*f32")
    offs = k.offsets(64)
    s = k.reduce([k.load(k.addptr(k.a["x"], offs))], 0, binop("add"))[0]
    k.store(k.addptr(k.a["out"], k.pid()), s)
    x = random_array(rng(), (7, 64), np.float32)
    out = poison(7, np.float32)
    execute(k.finish(), "rowsum", (7,), [x, out])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


# -- scans ------------------------------------------------------------------------------------

def scan_kernel(t, combine, reverse=False, axis=1, pair=False):
    k = K("scan", x=f"*{t}", y=f"*{t}", out=f"*{t}", out2=f"*{t}")
    offs = tile_offsets(k, R, C)
    inputs = [k.load(k.addptr(k.a["x"], offs))]
    if pair:
        inputs.append(k.load(k.addptr(k.a["y"], offs)))
    res = k.scan(inputs, axis, combine, reverse=reverse)
    k.store(k.addptr(k.a["out"], offs), res[0])
    if pair:
        k.store(k.addptr(k.a["out2"], offs), res[1])
    return k.finish()


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_int_and_float(axis, reverse):
    r = rng()
    for t, dt in (("i32", np.int32), ("f64", np.float64)):
        x = random_array(r, (3, R, C), dt, low=-100, high=100)
        out = poison(x.shape, dt)
        execute(scan_kernel(t, binop("add"), reverse, axis), "scan", (3,), [x, x, out, out])
        src = np.flip(x, axis=1 + axis) if reverse else x
        want = np.cumsum(src.astype(np.float64), axis=1 + axis)
        want = np.flip(want, axis=1 + axis) if reverse else want
        np.testing.assert_allclose(out, want, rtol=1e-12)


def test_cumprod_and_cummax():
    r = rng()
    x = random_array(r, (2, R, C), np.float32, low=0.5, high=1.5)
    out = poison(x.shape, np.float32)
    execute(scan_kernel("f32", binop("mul")), "scan", (2,), [x, x, out, out])
    np.testing.assert_allclose(out, np.cumprod(x.astype(np.float64), axis=2), rtol=1e-5)
    y = random_array(r, (2, R, C), np.int32)
    out = poison(y.shape, np.int32)
    execute(scan_kernel("i32", binop("max")), "scan", (2,), [y, y, out, out])
    np.testing.assert_array_equal(out, np.maximum.accumulate(y, axis=2))


@pytest.mark.parametrize("reverse", [False, True])
def test_generic_scan_non_commutative(reverse):
    r = rng()
    a = random_array(r, (3, R, C), np.float64, low=0.5, high=1.2)
    b = random_array(r, (3, R, C), np.float64, low=-1, high=1)
    out_a, out_b = poison(a.shape, np.float64), poison(a.shape, np.float64)
    execute(scan_kernel("f64", linear_recurrence, reverse, pair=True), "scan", (3,),
            [a, b, out_a, out_b])
    want_a, want_b = np.empty_like(a), np.empty_like(b)
    order = range(C - 1, -1, -1) if reverse else range(C)
    for p in range(3):
        for row in range(R):
            ca, cb = 1.0, 0.0
            for j in order:
                ca, cb = ca * a[p, row, j], cb * a[p, row, j] + b[p, row, j]
                want_a[p, row, j], want_b[p, row, j] = ca, cb
    np.testing.assert_allclose(out_a, want_a, rtol=1e-12)
    np.testing.assert_allclose(out_b, want_b, rtol=1e-12, atol=1e-12)


# -- dot ----------------------------------------------------------------------------------------

def dot_kernel(ta, tc, M, N, Kd, with_acc=True):
    k = K("mm", a=f"*{ta}", b=f"*{ta}", c=f"*{tc}", out=f"*{tc}")
    pid = k.pid()

    def tile(ptr, rows, cols):
        base = k.splat(k.op("mul", pid, k.const(rows * cols, "i32")), [rows, cols])
        r = k.bcast(k.op("mul", k.expand(k.arange(0, rows), 1), k.full(cols, [rows, 1], "i32")),
                    [rows, cols])
        c = k.bcast(k.expand(k.arange(0, cols), 0), [rows, cols])
        return k.addptr(ptr, k.op("add", base, k.op("add", r, c)))

    a = k.load(tile(k.a["a"], M, Kd))
    b = k.load(tile(k.a["b"], Kd, N))
    acc = k.load(tile(k.a["c"], M, N)) if with_acc else k.full(0, [M, N], tc)
    d = k.op("dot", a, b, acc, type=tensor([M, N], acc.type.scalar), input_precision="ieee")
    k.store(tile(k.a["out"], M, N), d)
    return k.finish()


@pytest.mark.parametrize("ta,tc,rtol", [("f32", "f32", 1e-5), ("f16", "f32", 1e-5),
                                        ("bf16", "f32", 1e-5), ("f64", "f64", 1e-12),
                                        ("f16", "f16", 2e-3)])
def test_dot_float(ta, tc, rtol):
    r = rng()
    P, M, N, Kd = 3, 16, 8, 32
    dts = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}
    a = random_array(r, (P, M, Kd), dts[ta])
    b = random_array(r, (P, Kd, N), dts[ta])
    c = random_array(r, (P, M, N), dts[tc])
    out = poison((P, M, N), dts[tc])
    execute(dot_kernel(ta, tc, M, N, Kd), "mm", (P,), [a, b, c, out])
    want = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=rtol, atol=rtol * 50)


def test_dot_int8_accumulates_in_int32():
    r = rng()
    P, M, N, Kd = 2, 16, 16, 64
    a = random_array(r, (P, M, Kd), np.int8)
    b = random_array(r, (P, Kd, N), np.int8)
    c = random_array(r, (P, M, N), np.int32, low=-1000, high=1000)
    out = poison((P, M, N), np.int32)
    execute(dot_kernel("i8", "i32", M, N, Kd), "mm", (P,), [a, b, c, out])
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64) + c)


def test_dot_without_acc_input():
    r = rng()
    a = random_array(r, (4, 16, 16), np.float32)
    b = random_array(r, (4, 16, 16), np.float32)
    out = poison((4, 16, 16), np.float32)
    execute(dot_kernel("f32", "f32", 16, 16, 16, with_acc=False), "mm", (4,),
            [a, b, poison((4, 16, 16), np.float32), out])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
