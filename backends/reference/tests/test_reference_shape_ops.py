"""Shape ops on values and on pointers: splat, broadcast, expand_dims, reshape, trans, join,
split, hint; constants of every kind."""
import numpy as np
import pytest

from naiad.ir import tensor
from naiad_reference import execute
from refkit import NP, K, poison, random_array, rng, ty


def tile_io(k, rows, cols):
    """pid*rows*cols + row-major offsets of a [rows, cols] tile."""
    base = k.splat(k.op("mul", k.pid(), k.const(rows * cols, "i32")), [rows, cols])
    r = k.bcast(k.op("mul", k.expand(k.arange(0, rows), 1), k.full(cols, [rows, 1], "i32")),
                [rows, cols])
    c = k.bcast(k.expand(k.arange(0, cols), 0), [rows, cols])
    return k.op("add", base, k.op("add", r, c))


def test_trans_of_values():
    k = K("t", x="*i32", out="*i32")
    v = k.load(k.addptr(k.a["x"], tile_io(k, 4, 8)))
    vt = k.op("trans", v, type=tensor([8, 4], ty("i32")), order=[1, 0])
    k.store(k.addptr(k.a["out"], tile_io(k, 8, 4)), vt)
    x = random_array(rng(), (3, 4, 8), np.int32)
    out = poison((3, 8, 4), np.int32)
    execute(k.finish(), "t", (3,), [x, out])
    np.testing.assert_array_equal(out, x.transpose(0, 2, 1))


def test_trans_of_pointers_and_reshape():
    """Transpose the pointer tile instead of the values; then reshape values to 1-D."""
    k = K("tp", x="*f32", out="*f32")
    p = k.addptr(k.a["x"], tile_io(k, 4, 8))
    pt = k.op("trans", p, type=tensor([8, 4], p.type.scalar), order=[1, 0])
    v = k.load(pt)  # v[j, i] = x[i, j]
    flat = k.op("reshape", v, type=tensor([32], ty("f32")))
    o = k.op("add", k.splat(k.op("mul", k.pid(), k.const(32, "i32")), [32]), k.arange(0, 32))
    k.store(k.addptr(k.a["out"], o), flat)
    x = random_array(rng(), (2, 4, 8), np.float32)
    out = poison((2, 32), np.float32)
    execute(k.finish(), "tp", (2,), [x, out])
    np.testing.assert_array_equal(out, x.transpose(0, 2, 1).reshape(2, 32))


def test_join_and_split_round_trip():
    k = K("js", x="*i16", y="*i16", out="*i16", back="*i16")
    o = k.offsets(16)
    a = k.load(k.addptr(k.a["x"], o))
    b = k.load(k.addptr(k.a["y"], o))
    j = k.op("join", a, b, type=tensor([16, 2], ty("i16")))
    # out[p, i, t] = (x, y)[t][p, i]
    jo = k.op("add", k.bcast(k.op("mul", k.expand(o, 1), k.full(2, [16, 1], "i32")), [16, 2]),
              k.bcast(k.expand(k.arange(0, 2), 0), [16, 2]))
    k.store(k.addptr(k.a["out"], jo), j)
    s0, s1 = k.b.create("split", [j], [a.type, a.type]).results
    k.store(k.addptr(k.a["back"], o), k.op("sub", s0, s1))
    r = rng()
    x, y = random_array(r, 48, np.int16), random_array(r, 48, np.int16)
    out, back = poison(96, np.int16), poison(48, np.int16)
    execute(k.finish(), "js", (3,), [x, y, out, back])
    np.testing.assert_array_equal(out.reshape(48, 2), np.stack([x, y], axis=1))
    np.testing.assert_array_equal(back, (x.astype(np.int32) - y).astype(np.int16))


def test_join_of_pointers_into_two_buffers():
    k = K("jp", x="*f32", y="*f32", out="*f32")
    o = k.arange(0, 8)
    px, py = k.addptr(k.a["x"], o), k.addptr(k.a["y"], o)
    pj = k.op("join", px, py, type=tensor([8, 2], px.type.scalar))
    v = k.load(pj)
    flat = k.op("reshape", v, type=tensor([16], ty("f32")))
    k.store(k.addptr(k.a["out"], k.arange(0, 16)), flat)
    r = rng()
    x, y = random_array(r, 8, np.float32), random_array(r, 8, np.float32)
    out = poison(16, np.float32)
    execute(k.finish(), "jp", (1,), [x, y, out])
    np.testing.assert_array_equal(out, np.stack([x, y], axis=1).ravel())


def test_hint_is_identity_and_broadcast_of_row_vector():
    k = K("hb", x="*f32", out="*f32")
    o = k.op("hint", k.arange(0, 8), divisibility=8)
    row = k.load(k.addptr(k.a["x"], o))
    m = k.bcast(k.expand(row, 0), [4, 8])
    k.store(k.addptr(k.a["out"], tile_io(k, 4, 8)), m)
    x = random_array(rng(), 8, np.float32)
    out = poison((1, 4, 8), np.float32)
    execute(k.finish(), "hb", (1,), [x, out])
    np.testing.assert_array_equal(out[0], np.broadcast_to(x, (4, 8)))


@pytest.mark.parametrize("t,value,want", [
    ("u32", -1, 0xFFFFFFFF), ("i8", 200, -56), ("i1", True, True), ("f16", 1e6, np.inf),
    ("bf16", 1.00390625, 1.0), ("f64", float("-inf"), -np.inf), ("u64", 2**64 - 1, 2**64 - 1),
])
def test_constants_are_typed_and_wrapped(t, value, want):
    k = K("c", out=f"*{t}")
    k.store(k.addptr(k.a["out"], k.arange(0, 4)), k.full(value, [4], t))
    out = poison(4, NP[t])
    execute(k.finish(), "c", (1,), [out])
    assert out.dtype == NP[t]
    if t in ("f16", "bf16", "f64"):
        assert (out.astype(np.float64) == want).all()
    else:
        assert out.tolist() == [want] * 4
