"""Atomics: every lane applies (repeated addresses accumulate), old values in lane/program order,
xchg and cas, masks, bounds."""
import numpy as np
import pytest

from naiad.errors import OutOfBoundsError
from naiad_reference import execute
from refkit import K, poison, random_array, rng


def histogram_kernel(block, kind="add", dtype="i32", masked=False):
    """bins[x[i]] (kind)= w[i] for the program's block of x."""
    k = K("hist", x="*i32", w=f"*{dtype}", bins=f"*{dtype}", n="i32")
    offs = k.offsets(block)
    mask = k.cmp("lt", offs, k.splat(k.a["n"], [block])) if masked else None
    idx = k.load(k.addptr(k.a["x"], offs), mask)
    w = k.load(k.addptr(k.a["w"], offs), mask)
    k.atomic(kind, k.addptr(k.a["bins"], idx), w, mask)
    return k.finish()


def test_histogram_with_repeated_addresses_in_lockstep():
    r = rng()
    x = r.integers(0, 10, size=4096).astype(np.int32)
    w = np.ones(4096, np.int32)
    bins = np.zeros(10, np.int32)
    info = execute(histogram_kernel(256), "hist", (16,), [x, w, bins, 4096])
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=10))
    assert info.mode == "grid"  # order-independent: no fallback


def test_masked_atomics_skip_masked_lanes():
    r = rng()
    n = 1000
    x = np.concatenate([r.integers(0, 7, size=n), np.full(24, 99)]).astype(np.int32)
    w = random_array(r, n + 24, np.int32, low=-50, high=50)
    bins = random_array(r, 7, np.int32, low=-5, high=5)
    want = bins.copy()
    for i in range(n):
        want[x[i]] += w[i]
    execute(histogram_kernel(256, masked=True), "hist", (4,), [x, w, bins, n])
    np.testing.assert_array_equal(bins, want)


@pytest.mark.parametrize("kind", ["max", "min", "and", "or", "xor"])
def test_integer_atomic_kinds_with_repeats(kind):
    r = rng()
    x = r.integers(0, 5, size=512).astype(np.int32)
    w = random_array(r, 512, np.int32)
    bins = random_array(r, 5, np.int32)
    want = bins.copy()
    fn = {"max": max, "min": min, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
          "xor": lambda a, b: a ^ b}[kind]
    for i in range(512):
        want[x[i]] = fn(int(want[x[i]]), int(w[i]))
    execute(histogram_kernel(128, kind), "hist", (4,), [x, w, bins, 512])
    np.testing.assert_array_equal(bins, want)


@pytest.mark.parametrize("dtype,np_dtype,rtol", [("f32", np.float32, 1e-5),
                                                 ("f64", np.float64, 1e-12),
                                                 ("f16", np.float16, 2e-2)])
def test_float_atomic_add_accumulates_every_lane(dtype, np_dtype, rtol):
    r = rng()
    x = r.integers(0, 3, size=1024).astype(np.int32)
    w = random_array(r, 1024, np_dtype, low=0, high=1)
    bins = np.zeros(3, np_dtype)
    execute(histogram_kernel(256, "add", dtype), "hist", (4,), [x, w, bins, 1024])
    want = np.array([w[x == b].astype(np.float64).sum() for b in range(3)])
    np.testing.assert_allclose(bins.astype(np.float64), want, rtol=rtol)


def ticket_kernel(block):
    """Every lane of every program takes a ticket from one counter; tickets stored per lane."""
    k = K("ticket", counter="*i32", out="*i32")
    offs = k.offsets(block)
    ones = k.full(1, [block], "i32")
    ctr = k.splat(k.a["counter"], [block])
    t = k.atomic("add", ctr, ones)
    k.store(k.addptr(k.a["out"], offs), t)
    return k.finish()


def test_atomic_old_values_follow_lane_then_program_order():
    counter = np.array([5], np.int32)
    out = poison(64, np.int32)
    info = execute(ticket_kernel(16), "ticket", (4,), [counter, out])
    np.testing.assert_array_equal(out, 5 + np.arange(64))
    assert counter[0] == 69
    assert info.mode == "sequential" and "old value" in info.reason


def test_atomic_xchg_chains_in_order():
    k = K("xchg", slot="*i32", out="*i32")
    pid = k.pid()
    old = k.atomic("xchg", k.a["slot"], pid)
    k.store(k.addptr(k.a["out"], pid), old)
    slot = np.array([-1], np.int32)
    out = poison(10, np.int32)
    info = execute(k.finish(), "xchg", (10,), [slot, out])
    np.testing.assert_array_equal(out, np.arange(-1, 9))
    assert slot[0] == 9 and info.mode == "sequential"


def test_atomic_xchg_lanes_of_one_block():
    k = K("xchg", slot="*i32", out="*i32")
    o = k.arange(0, 8)
    old = k.atomic("xchg", k.splat(k.a["slot"], [8]), o)
    k.store(k.addptr(k.a["out"], o), old)
    slot = np.array([100], np.int32)
    out = poison(8, np.int32)
    execute(k.finish(), "xchg", (1,), [slot, out])
    assert list(out) == [100, 0, 1, 2, 3, 4, 5, 6] and slot[0] == 7


def spinlock_kernel():
    """while atomic_cas(lock, 0, 1) != 0: pass; counter += 1 (plain load/store); unlock.
    Programs in lockstep would spin forever; one at a time they each get the lock."""
    k = K("locked", lock="*i32", counter="*i32", order="*i32")
    zero, one = k.const(0, "i32"), k.const(1, "i32")

    def before(d):
        got = k.b.op1("atomic_cas", [k.a["lock"], zero, one], zero.type)
        return k.cmp("ne", got, zero), [d]

    k.while_([zero], before, lambda d: [d])
    c = k.load(k.a["counter"])
    k.store(k.addptr(k.a["order"], c), k.pid())
    k.store(k.a["counter"], k.op("add", c, one))
    k.atomic("xchg", k.a["lock"], zero)
    return k.finish()


def test_cas_spin_lock_runs_programs_in_order():
    lock = np.zeros(1, np.int32)
    counter = np.zeros(1, np.int32)
    order = poison(12, np.int32)
    info = execute(spinlock_kernel(), "locked", (12,), [lock, counter, order])
    assert counter[0] == 12 and lock[0] == 0
    np.testing.assert_array_equal(order, np.arange(12))
    assert info.mode == "sequential" and "atomic_cas" in info.reason


def test_cas_lanes_apply_in_order_on_repeated_address():
    """Lanes all cas(slot, expected=i, new=i+1): only a chain in lane order succeeds fully."""
    k = K("cas", slot="*i32", out="*i32")
    o = k.arange(0, 8)
    new = k.op("add", o, k.full(1, [8], "i32"))
    old = k.b.op1("atomic_cas", [k.splat(k.a["slot"], [8]), o, new], o.type)
    k.store(k.addptr(k.a["out"], o), old)
    slot = np.zeros(1, np.int32)
    out = poison(8, np.int32)
    execute(k.finish(), "cas", (1,), [slot, out])
    assert list(out) == list(range(8)) and slot[0] == 8


def test_atomic_out_of_bounds_is_reported():
    x = np.array([0, 1, 12, 2] * 4, np.int32)
    bins = np.zeros(10, np.int32)
    with pytest.raises(OutOfBoundsError) as exc:
        execute(histogram_kernel(4), "hist", (4,), [x, np.ones(16, np.int32), bins, 16])
    assert exc.value.argument == "bins" and exc.value.offset == 12
    assert exc.value.program_id == (0, 0, 0) and "atomic" in str(exc.value)
