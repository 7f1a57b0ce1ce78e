"""Lockstep over the grid vs one program at a time: identical results, the hazard rules that pick
between them, batching, and the mode switches."""
import numpy as np
import pytest

import naiad_reference.runtime.executor as executor
from naiad.errors import NaiadError
from naiad.ir import tensor
from naiad_reference import execute
from refkit import K, binop, poison, random_array, rng


def softmax_kernel(block):
    """One row per program, masked to n_cols, like Triton's fused-softmax tutorial."""
    k = K("softmax", x="*f32", out="*f32", stride="i32", n_cols="i32")
    row = k.op("mul", k.pid(), k.a["stride"])
    cols = k.arange(0, block)
    offs = k.op("add", k.splat(row, [block]), cols)
    mask = k.cmp("lt", cols, k.splat(k.a["n_cols"], [block]))
    x = k.load(k.addptr(k.a["x"], offs), mask, k.full(float("-inf"), [block], "f32"))
    mx = k.reduce([x], 0, binop("max"))[0]
    e = k.op("exp", k.op("sub", x, k.splat(mx, [block])))
    s = k.reduce([e], 0, binop("add"))[0]
    k.store(k.addptr(k.a["out"], offs), k.op("div", e, k.splat(s, [block])), mask)
    return k.finish()


def matmul_kernel(BM, BN, BK):
    """C = A @ B with a K loop over BK-wide tiles; program (m, n) of a 2-D grid."""
    k = K("matmul", a="*f32", b="*f32", c="*f32", M="i32", N="i32", Kd="i32")
    pm, pn = k.pid(0), k.pid(1)
    rm = k.op("add", k.splat(k.op("mul", pm, k.const(BM, "i32")), [BM]), k.arange(0, BM))
    rn = k.op("add", k.splat(k.op("mul", pn, k.const(BN, "i32")), [BN]), k.arange(0, BN))
    rk = k.arange(0, BK)
    a_rows = k.bcast(k.op("mul", k.expand(rm, 1), k.splat(k.a["Kd"], [BM, 1])), [BM, BK])
    a_cols = k.bcast(k.expand(rk, 0), [BM, BK])
    b_rows = k.bcast(k.op("mul", k.expand(rk, 1), k.splat(k.a["N"], [BK, 1])), [BK, BN])
    b_cols = k.bcast(k.expand(rn, 0), [BK, BN])
    a_ptr = k.addptr(k.a["a"], k.op("add", a_rows, a_cols))
    b_ptr = k.addptr(k.a["b"], k.op("add", b_rows, b_cols))
    acc0 = k.full(0.0, [BM, BN], "f32")
    zero, one = k.const(0, "i32"), k.const(1, "i32")
    steps = k.op("div", k.a["Kd"], k.const(BK, "i32"))
    b_step = k.op("mul", k.const(BK, "i32"), k.a["N"])

    def body(i, acc, ap, bp):
        a = k.load(ap)
        b = k.load(bp)
        acc = k.op("dot", a, b, acc, type=tensor([BM, BN], acc.type.scalar))
        ap = k.addptr(ap, k.full(BK, [BM, BK], "i32"))
        bp = k.addptr(bp, k.splat(b_step, [BK, BN]))
        return [acc, ap, bp]

    acc, _, _ = k.for_(zero, steps, one, [acc0, a_ptr, b_ptr], body)
    c_off = k.op("add", k.bcast(k.op("mul", k.expand(rm, 1), k.splat(k.a["N"], [BM, 1])),
                                [BM, BN]),
                 k.bcast(k.expand(rn, 0), [BM, BN]))
    k.store(k.addptr(k.a["c"], c_off), acc)
    return k.finish()


def test_softmax_lockstep_equals_sequential_and_numpy():
    x = random_array(rng(), (37, 100), np.float32)
    outs = []
    for mode in ("auto", "sequential"):
        out = poison((37, 100), np.float32)
        info = execute(softmax_kernel(128), "softmax", (37,), [x, out, 100, 100], mode=mode)
        outs.append(out)
    assert info.mode == "sequential"
    np.testing.assert_array_equal(outs[0], outs[1])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(outs[0], e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_matmul_lockstep_equals_sequential_and_numpy():
    r = rng()
    a = random_array(r, (64, 96), np.float32)
    b = random_array(r, (96, 48), np.float32)
    outs = []
    for mode in ("auto", "sequential"):
        c = poison((64, 48), np.float32)
        info = execute(matmul_kernel(32, 16, 32), "matmul", (2, 3), [a, b, c, 64, 48, 96],
                       mode=mode)
        outs.append(c)
        assert info.mode == ("grid" if mode == "auto" else "sequential")
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def neighbour_kernel():
    """out[p] = p + 1, then read out[(p + 1) % P]: program p reads what program p+1 writes."""
    k = K("nb", out="*i32", res="*i32")
    pid = k.pid()
    k.store(k.addptr(k.a["out"], pid), k.op("add", pid, k.const(1, "i32")))
    nxt = k.op("rem", k.op("add", pid, k.const(1, "i32")), k.nprog())
    k.store(k.addptr(k.a["res"], pid), k.load(k.addptr(k.a["out"], nxt)))
    return k.finish()


def test_cross_program_read_after_write_rolls_back_to_sequential():
    P = 6
    out, res = np.zeros(P, np.int32), poison(P, np.int32)
    info = execute(neighbour_kernel(), "nb", (P,), [out, res])
    # one program at a time: p reads out[p+1] before p+1 ran (0), the last reads out[0] = 1
    assert list(res) == [0] * (P - 1) + [1]
    assert list(out) == list(range(1, P + 1))
    assert info.mode == "sequential" and "another program" in info.reason


def test_own_read_after_write_stays_lockstep_checked():
    """Each program writes a scratch row, then reads it back reversed: no cross-program read."""
    k = K("scratch", tmp="*f32", out="*f32")
    offs = k.offsets(16)
    k.store(k.addptr(k.a["tmp"], offs), k.op("mul", k.op("cast", offs, type="f32[16]"),
                                           k.full(0.5, [16], "f32")))
    rev = k.op("sub", k.splat(k.op("add", k.op("mul", k.pid(), k.const(16, "i32")),
                                   k.const(15, "i32")), [16]), k.arange(0, 16))
    k.store(k.addptr(k.a["out"], offs), k.load(k.addptr(k.a["tmp"], rev)))
    tmp, out = poison(64, np.float32), poison(64, np.float32)
    info = execute(k.finish(), "scratch", (4,), [tmp, out])
    assert info.mode == "grid-checked"
    want = (np.arange(64).reshape(4, 16)[:, ::-1] * 0.5).ravel()
    np.testing.assert_array_equal(out, want)


def copy_then_read_kernel():
    """a[p] = 7; c[p] = b[(p+1) % P]. Separate arrays: no hazard. a and b the same array:
    program p reads what p+1 writes."""
    k = K("alias", a="*i32", b="*i32", c="*i32")
    pid = k.pid()
    k.store(k.addptr(k.a["a"], pid), k.const(7, "i32"))
    nxt = k.op("rem", k.op("add", pid, k.const(1, "i32")), k.nprog())
    k.store(k.addptr(k.a["c"], pid), k.load(k.addptr(k.a["b"], nxt)))
    return k.finish()


def test_aliasing_arguments_are_one_buffer_for_the_hazard_rule():
    m = copy_then_read_kernel()
    a, b, c = np.zeros(5, np.int32), np.arange(5, dtype=np.int32), poison(5, np.int32)
    assert execute(m, "alias", (5,), [a, b, c]).mode == "grid"
    np.testing.assert_array_equal(c, np.roll(np.arange(5), -1))
    shared = np.arange(5, dtype=np.int32)
    c2 = poison(5, np.int32)
    info = execute(m, "alias", (5,), [shared, shared, c2])
    assert info.mode == "sequential"
    assert list(c2) == [1, 2, 3, 4, 7]  # sequential: the last program sees program 0's store


@pytest.mark.parametrize("limit", [1 << 12, 1 << 9])
def test_batches_smaller_than_grid_give_identical_results(monkeypatch, limit):
    x = random_array(rng(), (40, 100), np.float32)
    ref = poison((40, 100), np.float32)
    execute(softmax_kernel(128), "softmax", (40,), [x, ref, 100, 100])
    monkeypatch.setattr(executor, "BATCH_ELEMENTS", limit)
    out = poison((40, 100), np.float32)
    info = execute(softmax_kernel(128), "softmax", (40,), [x, out, 100, 100])
    assert info.batches == -(-40 // max(1, limit // 128))
    assert info.batches > 1
    np.testing.assert_array_equal(out, ref)


def test_mode_from_environment_and_bad_mode(monkeypatch):
    x = random_array(rng(), (3, 100), np.float32)
    monkeypatch.setenv("NAIAD_REFERENCE_MODE", "sequential")
    info = execute(softmax_kernel(128), "softmax", (3,), [x, poison((3, 100), np.float32),
                                                         100, 100])
    assert info.mode == "sequential" and info.batches == 3
    with pytest.raises(NaiadError, match="mode must be one of"):
        execute(softmax_kernel(128), "softmax", (3,), [x, poison((3, 100), np.float32), 100, 100],
                mode="fast")


def test_every_catalog_op_is_implemented():
    """Every op of the tile-IR catalog (as naiad.ir defines it, before any GPU-layer
    registrations in this process) has a handler."""
    import json
    import os
    import subprocess
    import sys

    from naiad_reference.runtime.interpreter import IMPLEMENTED_OPS

    code = "import json; from naiad.ir.ops import OPS; print(json.dumps(sorted(OPS)))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True)
    catalog = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(catalog) > 40
    missing = sorted(n for n in catalog if n not in IMPLEMENTED_OPS)
    assert not missing, f"reference executor lacks ops: {missing}"


def test_in_place_update_loop_stays_lockstep():
    """x[offs] *= 2 three times in a loop: a loop-carried read-after-write on x, but every
    program only reads what it wrote itself."""
    k = K("inplace", x="*f32")
    offs = k.offsets(32)
    p = k.addptr(k.a["x"], offs)
    zero, one = k.const(0, "i32"), k.const(1, "i32")

    def body(i):
        k.store(p, k.op("mul", k.load(p), k.full(2.0, [32], "f32")))
        return []

    k.for_(zero, k.const(3, "i32"), one, [], body)
    x = random_array(rng(), 128, np.float32)
    y = x.copy()
    info = execute(k.finish(), "inplace", (4,), [y])
    assert info.mode == "grid-checked"
    np.testing.assert_array_equal(y, x * 8)


def test_pointer_chosen_per_program_by_if_stores_into_both_buffers():
    from refkit import ty

    k = K("pick", a="*i32", b="*i32")
    pid = k.pid()
    odd = k.cmp("eq", k.op("and", pid, k.const(1, "i32")), k.const(1, "i32"))
    (p,) = k.if_(odd, [ty("*i32")], lambda: [k.a["a"]], lambda: [k.a["b"]])
    k.store(k.addptr(p, pid), k.op("mul", pid, k.const(10, "i32")))
    a, b = poison(8, np.int32), poison(8, np.int32)
    s = a[0]
    execute(k.finish(), "pick", (8,), [a, b])
    assert list(a) == [s if p % 2 == 0 else 10 * p for p in range(8)]
    assert list(b) == [10 * p if p % 2 == 0 else s for p in range(8)]


def test_out_of_bounds_in_a_branch_names_the_program_that_took_it():
    from naiad.errors import OutOfBoundsError

    k = K("late", x="*f32", out="*f32")
    pid = k.pid()
    big = k.cmp("ge", pid, k.const(5, "i32"))
    offs = k.offsets(8)

    def then():
        k.store(k.addptr(k.a["out"], offs), k.load(k.addptr(k.a["x"], offs)))
        return []

    k.if_(big, [], then, None)
    with pytest.raises(OutOfBoundsError) as exc:
        execute(k.finish(), "late", (8,), [np.ones(48, np.float32), poison(64, np.float32)])
    assert exc.value.program_id == (6, 0, 0) and exc.value.offset == 48
