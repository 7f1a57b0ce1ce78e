"""Loads and stores: masks and ``other``, bounds checking, strided/indirect/scalar access,
pointer casts, argument validation."""
import numpy as np
import pytest

import naiad
from naiad.errors import NaiadError, OutOfBoundsError
from naiad_reference import ReferenceArgumentError, execute
from refkit import K, poison, random_array, rng


def copy_kernel(block, masked=True, other=None, dtype="f32"):
    k = K("copy", src=f"*{dtype}", dst=f"*{dtype}", n="i32")
    offs = k.offsets(block)
    mask = k.cmp("lt", offs, k.splat(k.a["n"], [block])) if masked else None
    oth = k.full(other, [block], dtype) if other is not None else None
    v = k.load(k.addptr(k.a["src"], offs), mask, oth)
    k.store(k.addptr(k.a["dst"], offs), v)  # unmasked store: dst is sized to the grid
    return k.finish()


def test_masked_load_gives_other_and_never_reads_out_of_bounds():
    r = rng()
    n, block = 100, 32
    src = random_array(r, n, np.float32)  # exactly n: lanes past n would be out of bounds
    dst = poison(128, np.float32)
    execute(copy_kernel(block, other=-7.5), "copy", (4,), [src, dst, n])
    np.testing.assert_array_equal(dst[:n], src)
    assert (dst[n:] == -7.5).all()


def test_masked_load_without_other_gives_zero():
    r = rng()
    src = random_array(r, 50, np.int16)
    dst = poison(64, np.int16)
    execute(copy_kernel(32, dtype="i16"), "copy", (2,), [src, dst, 50])
    np.testing.assert_array_equal(dst[:50], src)
    assert (dst[50:] == 0).all()


def test_masked_load_from_empty_buffer_is_fine():
    dst = poison(32, np.float32)
    execute(copy_kernel(32, other=1.0), "copy", (1,), [np.zeros(0, np.float32), dst, 0])
    assert (dst == 1.0).all()


def test_unmasked_load_out_of_bounds_names_kernel_program_argument_offset():
    src = np.arange(100, dtype=np.float32)
    dst = poison(128, np.float32)
    with pytest.raises(OutOfBoundsError) as exc:
        execute(copy_kernel(32, masked=False), "copy", (4,), [src, dst, 100])
    e = exc.value
    msg = str(e)
    assert "'copy'" in msg and "program (3, 0, 0)" in msg and "'src'" in msg
    assert "offset 100" in msg and "100 float32 elements" in msg
    assert (e.program_id, e.argument, e.offset, e.size) == ((3, 0, 0), "src", 100, 100)
    assert isinstance(e, naiad.NaiadError)


def test_store_out_of_bounds_reports_first_bad_program():
    k = K("st", dst="*i32")
    offs = k.offsets(16)
    k.store(k.addptr(k.a["dst"], offs), offs)
    m = k.finish()
    dst = poison(40, np.int32)
    with pytest.raises(OutOfBoundsError) as exc:
        execute(m, "st", (5,), [dst])
    assert exc.value.program_id == (2, 0, 0)
    assert exc.value.offset == 40 and exc.value.argument == "dst"
    assert "stores" in str(exc.value)


def test_negative_offset_is_out_of_bounds():
    k = K("neg", x="*f32", out="*f32")
    offs = k.op("sub", k.arange(0, 8), k.full(3, [8], "i32"))
    v = k.load(k.addptr(k.a["x"], offs))
    k.store(k.addptr(k.a["out"], k.arange(0, 8)), v)
    m = k.finish()
    with pytest.raises(OutOfBoundsError) as exc:
        execute(m, "neg", (1,), [np.ones(8, np.float32), poison(8, np.float32)])
    assert exc.value.offset == -3


def test_masked_out_of_bounds_store_is_skipped():
    k = K("st", dst="*i32", n="i32")
    offs = k.offsets(16)
    mask = k.cmp("lt", offs, k.splat(k.a["n"], [16]))
    k.store(k.addptr(k.a["dst"], offs), offs, mask)
    m = k.finish()
    dst = poison(37, np.int32)
    execute(m, "st", (3,), [dst, 37])
    np.testing.assert_array_equal(dst, np.arange(37))


def test_2d_strided_tile_of_a_transposed_view():
    """Pointer arithmetic with strides over a non-contiguous argument (a transposed array)."""
    r = rng()
    base = random_array(r, (16, 8), np.float32)
    x = base.T  # (8, 16), strides (4, 32): element (i, j) is at i*1 + j*8
    k = K("tile", x="*f32", out="*f32", sx0="i32", sx1="i32")
    rows = k.expand(k.arange(0, 8), 1)
    cols = k.expand(k.arange(0, 16), 0)
    ro = k.bcast(k.op("mul", rows, k.splat(k.a["sx0"], [8, 1])), [8, 16])
    co = k.bcast(k.op("mul", cols, k.splat(k.a["sx1"], [1, 16])), [8, 16])
    v = k.load(k.addptr(k.a["x"], k.op("add", ro, co)))
    oo = k.op("add", k.bcast(k.op("mul", rows, k.full(16, [8, 1], "i32")), [8, 16]),
              k.bcast(cols, [8, 16]))
    k.store(k.addptr(k.a["out"], oo), v)
    m = k.finish()
    out = poison((8, 16), np.float32)
    execute(m, "tile", (1,), [x, out, 1, 8])
    np.testing.assert_array_equal(out, x)


def test_indirect_gather_through_index_array():
    r = rng()
    src = random_array(r, 1000, np.float64)
    idx = r.integers(0, 1000, size=256).astype(np.int64)
    k = K("gather", src="*f64", idx="*i64", out="*f64")
    offs = k.offsets(64)
    i = k.load(k.addptr(k.a["idx"], offs))
    v = k.load(k.addptr(k.a["src"], i))
    k.store(k.addptr(k.a["out"], offs), v)
    out = poison(256, np.float64)
    execute(k.finish(), "gather", (4,), [src, idx, out])
    np.testing.assert_array_equal(out, src[idx])


def test_indirect_gather_out_of_bounds_index():
    src = np.arange(10, dtype=np.float32)
    idx = np.array([0, 3, 10, 2], dtype=np.int32)
    k = K("gather", src="*f32", idx="*i32", out="*f32")
    o = k.arange(0, 4)
    v = k.load(k.addptr(k.a["src"], k.load(k.addptr(k.a["idx"], o))))
    k.store(k.addptr(k.a["out"], o), v)
    with pytest.raises(OutOfBoundsError) as exc:
        execute(k.finish(), "gather", (1,), [src, idx, poison(4, np.float32)])
    assert exc.value.offset == 10 and exc.value.argument == "src"


def test_scalar_load_and_store_per_program():
    r = rng()
    x = random_array(r, 10, np.int64)
    k = K("scal", x="*i64", out="*i64")
    pid = k.pid()
    v = k.load(k.addptr(k.a["x"], pid))
    k.store(k.addptr(k.a["out"], pid), k.op("mul", v, k.const(3, "i64")))
    out = poison(10, np.int64)
    execute(k.finish(), "scal", (10,), [x, out])
    np.testing.assert_array_equal(out, x * 3)


def test_scalar_load_out_of_bounds():
    k = K("scal", x="*f32", out="*f32")
    pid = k.pid()
    k.store(k.addptr(k.a["out"], pid), k.load(k.addptr(k.a["x"], pid)))
    with pytest.raises(OutOfBoundsError) as exc:
        execute(k.finish(), "scal", (6,), [np.ones(5, np.float32), poison(6, np.float32)])
    assert exc.value.program_id == (5, 0, 0)


def test_pointer_cast_reinterprets_memory():
    """ptr<f32> cast to ptr<u16>: element offsets double, bytes are read as halves."""
    r = rng()
    x = random_array(r, 32, np.float32)
    k = K("pc", x="*f32", out="*u16")
    p16 = k.op("cast", k.a["x"], type="*u16")
    o = k.arange(0, 64)
    k.store(k.addptr(k.a["out"], o), k.load(k.addptr(p16, o)))
    out = poison(64, np.uint16)
    execute(k.finish(), "pc", (1,), [x, out])
    np.testing.assert_array_equal(out, x.view(np.uint16))


def test_pointer_to_int_and_back():
    r = rng()
    x = random_array(r, 16, np.int32)
    k = K("pi", x="*i32", out="*i32")
    addr = k.op("cast", k.a["x"], type="i64")
    addr = k.op("add", addr, k.const(8, "i64"))  # two i32 elements further, in bytes
    p = k.op("cast", addr, type="*i32")
    o = k.arange(0, 8)
    k.store(k.addptr(k.a["out"], o), k.load(k.addptr(p, o)))
    out = poison(8, np.int32)
    execute(k.finish(), "pi", (1,), [x, out])
    np.testing.assert_array_equal(out, x[2:10])


def test_select_between_pointers_into_different_buffers():
    r = rng()
    a = random_array(r, 16, np.float32)
    b = random_array(r, 16, np.float32)
    k = K("sel", a="*f32", b="*f32", out="*f32")
    o = k.arange(0, 16)
    even = k.cmp("eq", k.op("and", o, k.full(1, [16], "i32")), k.full(0, [16], "i32"))
    pa, pb = k.addptr(k.a["a"], o), k.addptr(k.a["b"], o)
    p = k.op("select", even, pa, pb, type=pa.type)
    k.store(k.addptr(k.a["out"], o), k.load(p))
    out = poison(16, np.float32)
    execute(k.finish(), "sel", (1,), [a, b, out])
    np.testing.assert_array_equal(out, np.where(np.arange(16) % 2 == 0, a, b))


def test_bf16_buffers():
    import ml_dtypes

    r = rng()
    x = random_array(r, 64, ml_dtypes.bfloat16)
    k = K("bf", x="*bf16", out="*bf16")
    o = k.arange(0, 64)
    v = k.load(k.addptr(k.a["x"], o))
    k.store(k.addptr(k.a["out"], o), k.op("mul", v, v))
    out = poison(64, ml_dtypes.bfloat16)
    execute(k.finish(), "bf", (1,), [x, out])
    want = (x.astype(np.float64) ** 2).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))


def test_argument_errors():
    m = copy_kernel(32)
    src, dst = np.ones(32, np.float32), poison(32, np.float32)
    with pytest.raises(ReferenceArgumentError, match="takes 3 arguments"):
        execute(m, "copy", (1,), [src, dst])
    with pytest.raises(ReferenceArgumentError, match="numpy array"):
        execute(m, "copy", (1,), [12345, dst, 32])
    with pytest.raises(ReferenceArgumentError, match="does not fit i32"):
        execute(m, "copy", (1,), [src, dst, 1 << 40])
    frozen = np.zeros(32, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ReferenceArgumentError, match="read-only"):
        execute(m, "copy", (1,), [src, frozen, 32])
    with pytest.raises(ReferenceArgumentError, match="strides"):
        execute(m, "copy", (1,), [src[::-1], dst, 32])
    with pytest.raises(NaiadError, match="no function @nope"):
        execute(m, "nope", (1,), [src, dst, 32])
    with pytest.raises(NaiadError, match="grid"):
        execute(m, "copy", (1, 2, 3, 4), [src, dst, 32])
    # a scalar passed where an int is expected is converted; a float with a fraction is not
    with pytest.raises(ReferenceArgumentError, match="float"):
        execute(m, "copy", (1,), [src, dst, 2.5])


def test_empty_grid_runs_nothing():
    dst = poison(32, np.float32)
    info = execute(copy_kernel(32), "copy", (0,), [np.ones(32, np.float32), dst, 32])
    assert np.isnan(dst).all() and info.batches == 0


def test_three_dimensional_grid_program_ids():
    k = K("ids", out="*i32")
    x, y, z = k.pid(0), k.pid(1), k.pid(2)
    nx, ny = k.nprog(0), k.nprog(1)
    lin = k.op("add", x, k.op("mul", nx, k.op("add", y, k.op("mul", ny, z))))
    code = k.op("add", k.op("mul", z, k.const(100, "i32")),
                k.op("add", k.op("mul", y, k.const(10, "i32")), x))
    k.store(k.addptr(k.a["out"], lin), code)
    out = poison(3 * 4 * 2, np.int32)
    execute(k.finish(), "ids", (3, 4, 2), [out])
    zz, yy, xx = np.meshgrid(range(2), range(4), range(3), indexing="ij")
    np.testing.assert_array_equal(out, (zz * 100 + yy * 10 + xx).ravel())
