"""for / while / if / call, with uniform and per-program-varying control flow. Every kernel is run
both in lockstep over the grid and one program at a time; the two must agree exactly."""
import numpy as np
import pytest

from naiad.errors import NaiadError
from naiad.ir import Function
from naiad_reference import execute
from refkit import K, poison, random_array, rng, ty


def run_both(module, name, grid, args):
    """Run lockstep and sequential on copies; assert identical memory; return lockstep's args."""
    a1 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    a2 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    info = execute(module, name, grid, a1)
    execute(module, name, grid, a2, mode="sequential")
    for x, y in zip(a1, a2):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    return a1, info


def test_for_uniform_bounds_accumulates_column_blocks():
    """Row sums of a [P, 96] matrix, 32 columns per iteration (a K loop)."""
    k = K("rows", x="*f32", out="*f32", ncols="i32")
    row = k.op("mul", k.pid(), k.a["ncols"])
    zero = k.const(0, "i32")
    step = k.const(32, "i32")
    acc0 = k.full(0.0, [32], "f32")

    def body(j, acc):
        offs = k.op("add", k.splat(k.op("add", row, j), [32]), k.arange(0, 32))
        return [k.op("add", acc, k.load(k.addptr(k.a["x"], offs)))]

    (acc,) = k.for_(zero, k.a["ncols"], step, [acc0], body)
    from refkit import binop
    s = k.reduce([acc], 0, binop("add"))[0]
    k.store(k.addptr(k.a["out"], k.pid()), s)
    x = random_array(rng(), (5, 96), np.float32)
    (x_, out, _), info = run_both(k.finish(), "rows", (5,), [x, poison(5, np.float32), 96])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)
    assert info.mode == "grid"


def varying_loop_kernel():
    """Program p runs lengths[p] iterations: out[p, i] = i * 10 + p for i < lengths[p], and
    total[p] = sum of i."""
    k = K("vary", lengths="*i32", out="*i32", total="*i32")
    pid = k.pid()
    n = k.load(k.addptr(k.a["lengths"], pid))
    zero = k.const(0, "i32")

    def body(i, acc):
        off = k.op("add", k.op("mul", pid, k.const(16, "i32")), i)
        k.store(k.addptr(k.a["out"], off), k.op("add", k.op("mul", i, k.const(10, "i32")), pid))
        return [k.op("add", acc, i)]

    (acc,) = k.for_(zero, n, k.const(1, "i32"), [zero], body)
    k.store(k.addptr(k.a["total"], pid), acc)
    return k.finish()


def test_for_with_per_program_trip_counts():
    lengths = np.array([0, 3, 16, 1, 7, 0, 12], dtype=np.int32)
    P = len(lengths)
    (_, out, total), _ = run_both(varying_loop_kernel(), "vary", (P,),
                                  [lengths, poison((P, 16), np.int32), poison(P, np.int32)])
    sentinel = poison(1, np.int32)[0]
    for p, n in enumerate(lengths):
        assert list(out[p, :n]) == [i * 10 + p for i in range(n)]
        assert (out[p, n:] == sentinel).all()  # later iterations never stored for p
        assert total[p] == sum(range(n))


def test_for_with_negative_step():
    k = K("down", out="*i32")
    ten, zero, m1 = k.const(10, "i32"), k.const(0, "i32"), k.const(-3, "i32")

    def body(i, pos):
        k.store(k.addptr(k.a["out"], pos), i)
        return [k.op("add", pos, k.const(1, "i32"))]

    k.for_(ten, zero, m1, [zero], body)
    (out,), _ = run_both(k.finish(), "down", (1,), [poison(6, np.int32)])
    assert list(out[:4]) == [10, 7, 4, 1] and out[4] == poison(1, np.int32)[0]


def test_for_with_step_zero_is_an_error():
    k = K("stuck", out="*i32")
    z = k.const(0, "i32")
    k.for_(z, k.const(4, "i32"), z, [], lambda i: [])
    with pytest.raises(NaiadError, match="step 0"):
        execute(k.finish(), "stuck", (1,), [poison(1, np.int32)])


def collatz_kernel():
    """steps[p] = number of Collatz steps from start[p] to 1 (a data-dependent while); every
    step stores x into program p's row of ``path`` (so masking in the loop body matters)."""
    k = K("collatz", start="*i64", steps="*i32", path="*i64")
    pid = k.pid()
    x0 = k.load(k.addptr(k.a["start"], pid))
    one, two, three = (k.const(v, "i64") for v in (1, 2, 3))
    row = k.op("mul", pid, k.const(200, "i32"))

    def before(x, n):
        return k.cmp("ne", x, one), [x, n]

    def after(x, n):
        k.store(k.addptr(k.a["path"], k.op("add", row, n)), x)
        odd = k.cmp("eq", k.op("and", x, one), one)
        (nx,) = k.if_(odd, [x.type],
                      lambda: [k.op("add", k.op("mul", x, three), one)],
                      lambda: [k.op("div", x, two)])
        return [nx, k.op("add", n, k.const(1, "i32"))]

    _, n = k.while_([x0, k.const(0, "i32")], before, after)
    k.store(k.addptr(k.a["steps"], pid), n)
    return k.finish()


def test_while_with_per_program_condition_and_nested_if():
    start = rng().integers(1, 300, size=37).astype(np.int64)
    start[0] = 1
    start[1] = 27  # 111 steps
    (_, steps, path), _ = run_both(collatz_kernel(), "collatz", (37,),
                                   [start, poison(37, np.int32), poison((37, 200), np.int64)])

    def ref(x):
        seq = []
        while x != 1:
            seq.append(x)
            x = 3 * x + 1 if x % 2 else x // 2
        return seq

    for p, x in enumerate(start):
        seq = ref(int(x))
        assert int(steps[p]) == len(seq)
        assert list(path[p, :len(seq)]) == seq
        assert path[p, len(seq)] == poison(1, np.int64)[0]


def guarded_kernel():
    """Only programs below ``valid`` load (unmasked!) from x, which holds just their rows; the
    others store -1. The untaken branch must not fault."""
    k = K("guard", x="*f32", out="*f32", valid="i32")
    pid = k.pid()
    ok = k.cmp("lt", pid, k.a["valid"])
    offs = k.offsets(8)

    def then():
        v = k.load(k.addptr(k.a["x"], offs))
        k.store(k.addptr(k.a["out"], offs), k.op("mul", v, k.full(2.0, [8], "f32")))
        return [k.op("add", k.reduce([v], 0, lambda kk, a, b: [kk.op("max", a[0], b[0])])[0],
                     k.const(0.0, "f32"))]

    def other():
        k.store(k.addptr(k.a["out"], offs), k.full(-1.0, [8], "f32"))
        return [k.const(-5.0, "f32")]

    (m,) = k.if_(ok, [ty("f32")], then, other)
    k.store(k.addptr(k.a["out"], k.op("add", k.const(64, "i32"), pid)), m)
    return k.finish()


def test_if_on_per_program_condition_masks_memory_in_untaken_branch():
    x = random_array(rng(), (3, 8), np.float32)
    (_, out, _), _ = run_both(guarded_kernel(), "guard", (8,), [x, poison(72, np.float32), 3])
    np.testing.assert_array_equal(out[:24].reshape(3, 8), x * 2)
    assert (out[24:64] == -1).all()
    np.testing.assert_array_equal(out[64:67], x.max(axis=1))
    assert (out[67:72] == -5).all()


def test_if_on_uniform_condition():
    x = random_array(rng(), (4, 8), np.float32)
    for flag, want in ((3, x * 2), (0, None)):
        (_, out, _), _ = run_both(guarded_kernel(), "guard", (4,),
                                  [x, poison(72, np.float32), flag])
        if want is not None:
            np.testing.assert_array_equal(out[:24].reshape(3, 8), want[:3])
        else:
            assert (out[:32] == -1).all()


def test_if_without_else_results():
    k = K("maybe", out="*i32")
    pid = k.pid()
    odd = k.cmp("eq", k.op("and", pid, k.const(1, "i32")), k.const(1, "i32"))
    k.if_(odd, [], lambda: k.store(k.addptr(k.a["out"], pid), pid), None)
    (out,), _ = run_both(k.finish(), "maybe", (9,), [poison(9, np.int32)])
    s = poison(1, np.int32)[0]
    assert list(out) == [s if p % 2 == 0 else p for p in range(9)]


def test_loop_carried_pointer_and_nested_varying_loops():
    """Pointer advanced in a loop; inner trip count depends on the outer iv and the program."""
    k = K("tri", out="*i32")
    pid = k.pid()
    one, zero = k.const(1, "i32"), k.const(0, "i32")
    start = k.addptr(k.a["out"], k.op("mul", pid, k.const(100, "i32")))

    def outer(i, p):
        def inner(j, q):
            k.store(q, k.op("add", k.op("mul", i, k.const(10, "i32")), j))
            return [k.addptr(q, one)]

        bound = k.op("add", i, pid)
        (q,) = k.for_(zero, bound, one, [p], inner)
        return [q]

    k.for_(zero, k.const(4, "i32"), one, [start], outer)
    (out,), _ = run_both(k.finish(), "tri", (3,), [poison(300, np.int32)])
    for p in range(3):
        want = [i * 10 + j for i in range(4) for j in range(i + p)]
        assert list(out[p * 100: p * 100 + len(want)]) == want
        assert out[p * 100 + len(want)] == poison(1, np.int32)[0]


def test_call_to_device_function_with_pointer_argument():
    k = K("caller", x="*f32", out="*f32")
    helper = Function("scaled_load", [ty("*f32"), ty("i32")], [ty("f32")],
                      arg_names=["p", "i"], attrs={"kernel": False})
    k.module.add(helper)
    hk = K.__new__(K)
    hk.module, hk.fn = k.module, helper
    from naiad.ir import Builder
    hk.b = Builder(helper.body.block)
    p, i = helper.args
    v = hk.load(hk.addptr(p, i))
    r = hk.op("mul", v, hk.const(3.0, "f32"))
    hk.b.create("return", [r], [])
    pid = k.pid()
    (res,) = k.b.create("call", [k.a["x"], pid], [ty("f32")], {"callee": "scaled_load"}).results
    k.store(k.addptr(k.a["out"], pid), res)
    x = random_array(rng(), 6, np.float32)
    (_, out), _ = run_both(k.finish(), "caller", (6,), [x, poison(6, np.float32)])
    np.testing.assert_array_equal(out, x * np.float32(3))
