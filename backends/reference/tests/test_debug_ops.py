"""device_print, device_assert (debug mode), debug_barrier, assume and inline asm on the
reference executor."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "kernels"))

import naiad  # noqa: E402
import naiad.language as tl  # noqa: E402
from naiad.errors import CompilationError, DeviceAssertionError, NaiadError  # noqa: E402
import debug_kernels as dk  # noqa: E402


@pytest.fixture(autouse=True)
def _reference():
    with naiad.target("reference"):
        yield


@pytest.fixture
def debug_on(monkeypatch, tmp_path):
    monkeypatch.setenv("NAIAD_DEBUG", "1")
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path))
    for k in (dk.assert_kernel, dk.python_assert_kernel):
        k.cache_clear()
    yield
    for k in (dk.assert_kernel, dk.python_assert_kernel):
        k.cache_clear()


def test_device_print_lines(capfd):
    x = np.random.default_rng().integers(-50, 50, 4).astype(np.int32)
    dk.print_kernel[(2,)](x, 4, False)
    lines = capfd.readouterr().out.splitlines()
    want = [f"pid ({p}, 0, 0) idx ({i}) x: {x[i]}" for p in range(2) for i in range(4)]
    assert lines == want


def test_device_print_hex(capfd):
    x = np.array([1, -1, 255, 4096], np.int32)
    dk.print_kernel[(1,)](x, 4, True)
    vals = [ln.rsplit(": ", 1)[1] for ln in capfd.readouterr().out.splitlines()]
    assert vals == ["0x00000001", "0xffffffff", "0x000000ff", "0x00001000"]


def test_python_print_is_device_print(capfd):
    x = np.arange(2, dtype=np.float32) + 0.5
    dk.python_print_kernel[(1,)](x, 2)
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "pid (0, 0, 0) pid: 0"
    assert out[1:] == ["pid (0, 0, 0) idx (0) two (operand 0): 0.5",
                       "pid (0, 0, 0) idx (1) two (operand 0): 1.5",
                       "pid (0, 0, 0) two (operand 1): 0"]


def test_device_assert_is_off_without_debug(monkeypatch, tmp_path):
    monkeypatch.delenv("NAIAD_DEBUG", raising=False)
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path))
    dk.assert_kernel.cache_clear()
    x = np.array([1, 2, 30, 4], np.int32)
    out = np.full(4, -7, np.int32)
    dk.assert_kernel[(1,)](x, out, 10, 4, False)
    np.testing.assert_array_equal(out, x + 1)


def test_device_assert_fails_in_debug_mode(debug_on):
    x = np.array([1, 2, 30, 4], np.int32)
    out = np.full(4, -7, np.int32)
    with pytest.raises(DeviceAssertionError, match=r"debug_kernels.py:\d+: device_assert "
                       r"failed: x must stay below the limit \(program \(0, 0, 0\), "
                       r"index \(2,\)\)"):
        dk.assert_kernel[(1,)](x, out, 10, 4, False)


def test_device_assert_passes_and_respects_mask(debug_on):
    x = np.array([1, 2, 3, 99], np.int32)      # only the masked-off element is too big
    out = np.full(4, -7, np.int32)
    dk.assert_kernel[(1,)](x, out, 10, 4, True)
    np.testing.assert_array_equal(out, x + 1)
    with pytest.raises(AssertionError):
        dk.assert_kernel[(1,)](x, out, 10, 4, False)


def test_python_assert_is_device_assert(debug_on):
    dk.python_assert_kernel[(1,)](np.arange(4, dtype=np.int32), 4)
    with pytest.raises(DeviceAssertionError, match="negative input"):
        dk.python_assert_kernel[(1,)](np.array([0, -1, 2, 3], np.int32), 4)


def test_assume_and_barrier_keep_results():
    n = 100
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    dk.assume_kernel[(4,)](x, out, n, 32)
    np.testing.assert_array_equal(out, x * 2)


def test_assume_false_at_compile_time_is_an_error():
    @naiad.jit
    def bad(x_ptr):
        tl.assume(1 == 2)

    with pytest.raises(CompilationError, match="condition is false"):
        naiad.compile(bad, signature="*fp32")


def test_assume_becomes_an_op_that_axis_info_reads():
    @naiad.jit
    def assumed(x_ptr, n):
        tl.assume(n >= 0)
        tl.store(x_ptr + tl.arange(0, 16), tl.arange(0, 16) % n)

    k = naiad.compile(assumed, signature="*i32, i32", target="reference")
    assert len([line for line in k.asm["tile"].splitlines() if " assume %" in line]) == 1


def test_assume_needs_a_boolean():
    @naiad.jit
    def not_bool(x_ptr, n):
        tl.assume(n + 1)

    with pytest.raises(CompilationError, match="tl.assume needs a boolean condition"):
        naiad.compile(not_bool, signature="*i32, i32", target="reference")


def test_inline_asm_on_reference_names_the_line():
    x = np.arange(8, dtype=np.int32)
    with pytest.raises(NaiadError, match=r"debug_kernels.py:\d+.*reference executor cannot"):
        dk.nvidia_asm_kernel[(1,)](x, np.zeros(8, np.int32), 8)



def test_jit_debug_true_turns_asserts_on(monkeypatch, tmp_path):
    monkeypatch.delenv("NAIAD_DEBUG", raising=False)
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path))
    dk.debug_jit_assert_kernel[(1,)](np.arange(4, dtype=np.int32), 4)
    with pytest.raises(DeviceAssertionError, match="no sevens"):
        dk.debug_jit_assert_kernel[(1,)](np.arange(4, 12, dtype=np.int32), 8)
