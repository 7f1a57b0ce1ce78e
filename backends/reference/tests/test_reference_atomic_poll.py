"""``tl.atomic_poll`` on the reference executor: programs run one at a time, and a program
whose poll waits for a later program's write is undone and run again after it."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import NaiadError


@naiad.jit
def poll_block(flag, out, expected, N: tl.constexpr):
    offs = tl.arange(0, N)
    seen = tl.atomic_poll(flag + offs, expected)
    tl.store(out + offs, seen.to(tl.int32) + 10)


@naiad.jit
def poll_with_timeout(flag, out, timeout, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out + offs, (flag + offs).atomic_poll(7, timeout_ns=timeout))


@naiad.jit
def wait_for_the_next_program(flag, out, n):
    """Program p waits until program p+1 published its value, then adds one: a chain that
    only completes if the last program runs first."""
    pid = tl.program_id(0)
    if pid < n - 1:
        tl.atomic_poll(flag + pid + 1, 1)
    before = tl.load(out + pid + 1, mask=pid < n - 1, other=0)
    tl.store(out + pid, before + 1 + tl.load(out + pid))
    tl.atomic_xchg(flag + pid, 1, sem="release")


@naiad.jit
def handshake(flag):
    pid = tl.program_id(0)
    tl.atomic_poll(flag + 1 - pid, 1)   # each waits for the other: never ends on a GPU
    tl.atomic_xchg(flag + pid, 1)


@pytest.fixture(autouse=True)
def reference():
    naiad.set_target("reference")


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint32])
def test_poll_on_values_already_there_returns_true(dtype):
    value = int(np.random.default_rng(3).integers(1, 30000))
    flag = np.full(16, value, dtype)
    out = np.full(16, -1, np.int32)
    poll_block[(1,)](flag, out, value, N=16)
    np.testing.assert_array_equal(out, np.full(16, 11))


def test_timeout_gives_false_where_the_value_never_came():
    flag = np.array([7, 3, 7, 0, 9, 7, 7, 1], np.int64)
    out = np.zeros(8, np.bool_)
    out[:] = True                       # poison: a lane left unwritten stays True
    poll_with_timeout[(1,)](flag, out, 0, N=8)
    np.testing.assert_array_equal(out, flag == 7)


@pytest.mark.parametrize("n", [2, 5, 9])
def test_a_program_waiting_for_a_later_one_runs_after_it(n):
    rng = np.random.default_rng(n)
    start = rng.integers(1, 50, n + 1).astype(np.int32)
    start[n] = 0
    flag = np.zeros(n, np.int32)
    out = start.copy()
    wait_for_the_next_program[(n,)](flag, out, n)
    expected = start.copy()
    for p in reversed(range(n)):          # p reads p+1's final value
        expected[p] = (expected[p + 1] if p < n - 1 else 0) + 1 + start[p]
    np.testing.assert_array_equal(flag, np.ones(n, np.int32))
    np.testing.assert_array_equal(out, expected)


def test_a_poll_no_program_satisfies_is_an_error_naming_the_line():
    with pytest.raises(NaiadError, match=r"tl\.atomic_poll in program \d of kernel 'handshake' "
                       r"\(at .*test_reference_atomic_poll.py:\d+: tl.atomic_poll\(flag \+ 1 - "
                       r"pid, 1\).*never end"):
        handshake[(2,)](np.zeros(2, np.int32))
