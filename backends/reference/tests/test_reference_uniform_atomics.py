"""Atomics whose pointer and value are the same in every program apply once per PROGRAM (issue
#13): the executor keeps uniform values with a program axis of length 1, which must not collapse
a launch's atomics into one."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad_reference import execute
from refkit import poison, rng

frontend = pytest.importorskip("naiad.frontend")
passes = pytest.importorskip("naiad.passes")

GRID = 8


def build(fn, signature, constexprs=None):
    module = frontend.generate(fn, signature, constexprs or {}, {})
    return passes.run_generic_pipeline(module) or module


@naiad.jit
def uniform_rmw(ctr_ptr, val, KIND: tl.constexpr):
    if KIND == "add":
        tl.atomic_add(ctr_ptr, val)
    elif KIND == "xor":
        tl.atomic_xor(ctr_ptr, val)
    elif KIND == "max":
        tl.atomic_max(ctr_ptr, val)
    elif KIND == "min":
        tl.atomic_min(ctr_ptr, val)
    elif KIND == "and":
        tl.atomic_and(ctr_ptr, val)
    elif KIND == "or":
        tl.atomic_or(ctr_ptr, val)
    else:
        tl.atomic_xchg(ctr_ptr, val)


def _expected(kind, start, val, times):
    acc = int(start)
    for _ in range(times):
        acc = {"add": lambda a: a + val, "xor": lambda a: a ^ val, "max": lambda a: max(a, val),
               "min": lambda a: min(a, val), "and": lambda a: a & val,
               "or": lambda a: a | val, "xchg": lambda a: val}[kind](acc)
    return np.int32(np.int64(acc).astype(np.int32))


@pytest.mark.parametrize("mode", ["auto", "grid", "sequential"])
@pytest.mark.parametrize("kind", ["add", "xor", "max", "min", "and", "or", "xchg"])
def test_uniform_atomic_applies_once_per_program(kind, mode):
    r = rng()
    start = int(r.integers(-1000, 1000))
    val = int(r.integers(1, 1 << 20)) | 1  # odd: xor over 8 programs cancels, once does not
    ctr = np.array([start], np.int32)
    m = build(uniform_rmw, {"ctr_ptr": "*i32", "val": "i32"}, {"KIND": kind})
    execute(m, "uniform_rmw", (GRID,), [ctr, val], mode=mode)
    assert ctr[0] == _expected(kind, start, val, GRID)


@naiad.jit
def counter_kernel(ctr_ptr):
    tl.atomic_add(ctr_ptr, 1)


@pytest.mark.parametrize("grid", [(8,), (3, 2, 2)])
def test_global_counter_counts_programs(grid):
    ctr = np.array([0], np.int32)
    execute(build(counter_kernel, {"ctr_ptr": "*i32"}), "counter_kernel", grid, [ctr])
    assert ctr[0] == int(np.prod(grid))


@naiad.jit
def ticket_kernel(ctr_ptr, out_ptr):
    t = tl.atomic_add(ctr_ptr, 1)
    tl.store(out_ptr + tl.program_id(0), t)


def test_uniform_atomic_old_values_are_tickets():
    ctr = np.array([10], np.int32)
    out = poison(GRID, np.int32)
    execute(build(ticket_kernel, {"ctr_ptr": "*i32", "out_ptr": "*i32"}), "ticket_kernel",
            (GRID,), [ctr, out])
    np.testing.assert_array_equal(np.sort(out), 10 + np.arange(GRID))
    assert ctr[0] == 10 + GRID


@naiad.jit
def cas_kernel(slot_ptr, out_ptr, cmp, val):
    tl.store(out_ptr + tl.program_id(0), tl.atomic_cas(slot_ptr, cmp, val))


@pytest.mark.parametrize("mode", ["auto", "grid", "sequential"])
def test_uniform_cas_swaps_once_and_later_programs_see_it(mode):
    slot = np.array([3], np.int32)
    out = poison(GRID, np.int32)
    execute(build(cas_kernel, {"slot_ptr": "*i32", "out_ptr": "*i32", "cmp": "i32", "val": "i32"}),
            "cas_kernel", (GRID,), [slot, out, 3, 7], mode=mode)
    assert slot[0] == 7
    # exactly one program saw the old 3, every other one saw the swapped 7
    assert sorted(out.tolist()) == [3] + [7] * (GRID - 1)


@naiad.jit
def uniform_float_add(acc_ptr, v):
    tl.atomic_add(acc_ptr, v)


@pytest.mark.parametrize("mode", ["grid", "sequential"])
def test_uniform_float_atomic_add(mode):
    acc = np.array([0.25], np.float32)
    execute(build(uniform_float_add, {"acc_ptr": "*fp32", "v": "fp32"}), "uniform_float_add",
            (GRID,), [acc, 1.5], mode=mode)
    assert acc[0] == np.float32(0.25 + 1.5 * GRID)
