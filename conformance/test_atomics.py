"""Atomics: every kind, masks, repeated addresses in one block, returned old values, CAS."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def atomic_kernel(target_ptr, idx_ptr, val_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(val_ptr + offs, mask=mask)
    if OP == "add":
        tl.atomic_add(target_ptr + idx, v, mask=mask)
    elif OP == "max":
        tl.atomic_max(target_ptr + idx, v, mask=mask)
    elif OP == "min":
        tl.atomic_min(target_ptr + idx, v, mask=mask)
    elif OP == "and":
        tl.atomic_and(target_ptr + idx, v, mask=mask)
    elif OP == "or":
        tl.atomic_or(target_ptr + idx, v, mask=mask)
    else:
        tl.static_assert(OP == "xor", "unknown OP")
        tl.atomic_xor(target_ptr + idx, v, mask=mask)


def _apply(op, target, idx, vals):
    ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    out = target.copy()
    ufunc.at(out, idx, vals)
    return out


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "float32"])
@pytest.mark.parametrize("op", ["add", "max", "min", "and", "or", "xor"])
def test_atomic_rmw_repeated_addresses(conf, op, dtype):
    if dtype == "float32" and op in ("and", "or", "xor"):
        pytest.skip("bitwise atomics are defined on integers only")
    n, bins = 1000, 13
    idx = conf.rand(n, "int32", low=0, high=bins - 1)
    if dtype == "float32":
        vals = conf.rand(n, dtype, low=-2, high=2)
    else:
        vals = conf.rand(n, dtype, low=0 if dtype[0] == "u" else -1000, high=1000)
    target = conf.rand(bins, dtype, low=0, high=100) if dtype != "float32" \
        else conf.rand(bins, dtype)
    want = _apply(op, target, idx, vals)
    rtol = 1e-5 if dtype == "float32" else None
    conf.check(atomic_kernel, (naiad.cdiv(n, 128),), [target, idx, vals, n], {0: want},
               dict(OP=op, BLOCK=128), rtol=rtol, atol=1e-4 if rtol else None)


@naiad.jit
def histogram_kernel(x_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.minimum((x * BINS).to(tl.int32), BINS - 1)
    tl.atomic_add(hist_ptr + b, 1, mask=mask)


@pytest.mark.parametrize("n", [100, 4096, 10000])
def test_histogram(conf, n):
    bins = 16
    x = conf.rand(n, "float32", low=0, high=1)
    hist = np.zeros(bins, dtype=np.int32)
    want = np.bincount(np.minimum((x * bins).astype(np.int32), bins - 1), minlength=bins)
    conf.check(histogram_kernel, (naiad.cdiv(n, 256),), [x, hist, n],
               {1: want.astype(np.int32)}, dict(BINS=bins, BLOCK=256))


@naiad.jit
def xchg_old_kernel(target_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_xchg(target_ptr + offs, offs + 100)
    tl.store(old_ptr + offs, old)


def test_atomic_xchg_returns_old(conf):
    block = 64
    target = conf.rand(block, "int32", low=-500, high=500)
    old = conf.poison(block, "int32")
    conf.check(xchg_old_kernel, (1,), [target, old], {0: np.arange(100, 100 + block),
                                                      1: target.copy()}, dict(BLOCK=block))


@naiad.jit
def counter_kernel(counter_ptr, slot_ptr):
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.store(slot_ptr + ticket, tl.program_id(0))


def test_atomic_add_tickets_are_unique(conf):
    programs = 50
    counter = np.zeros(1, dtype=np.int32)
    slots = conf.poison(programs, "int32")

    def compare(have, expected):
        assert sorted(have.tolist()) == list(range(programs)), have

    conf.check(counter_kernel, (programs,), [counter, slots], {1: np.arange(programs)},
               compare=compare)


@naiad.jit
def cas_lock_kernel(lock_ptr, total_ptr, ITER: tl.constexpr):
    for _ in range(ITER):
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        tl.store(total_ptr, tl.load(total_ptr, volatile=True) + 1)
        tl.atomic_xchg(lock_ptr, 0)


def test_atomic_cas_spinlock(conf):
    programs, iters = 8, 3
    lock = np.zeros(1, dtype=np.int32)
    total = np.zeros(1, dtype=np.int32)
    conf.check(cas_lock_kernel, (programs,), [lock, total],
               {0: np.zeros(1, np.int32), 1: np.array([programs * iters], np.int32)},
               dict(ITER=iters))
