"""device_print (vprintf), device_assert (__assertfail), debug_barrier and inline PTX on the
NVIDIA backend: compiled to cubin here, run where a GPU is present."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "kernels"))

import naiad  # noqa: E402
import debug_kernels as dk  # noqa: E402


def _ptx(kernel, signature, constexprs):
    ck = naiad.compile(kernel, signature=signature, constexprs=constexprs, target="nvidia")
    assert bytes(ck.binary[:4]) == b"\x7fELF"
    return ck.asm["ptx"]


def test_device_print_calls_vprintf():
    ptx = _ptx(dk.print_kernel, "*fp32", {"N": 64, "HEX": False})
    assert "call.uni" in ptx or "call " in ptx
    assert "vprintf" in ptx


def test_device_assert_calls_assertfail_in_debug_mode(monkeypatch):
    monkeypatch.setenv("NAIAD_DEBUG", "1")
    ptx = _ptx(dk.assert_kernel, "*i32,*i32,i32", {"N": 64, "MASKED": True})
    assert "__assertfail" in ptx
    assert "bar.sync" in ptx or "barrier" in ptx      # debug_barrier


def test_device_assert_absent_without_debug(monkeypatch):
    monkeypatch.delenv("NAIAD_DEBUG", raising=False)
    ptx = _ptx(dk.assert_kernel, "*i32,*i32,i32", {"N": 64, "MASKED": False})
    assert "__assertfail" not in ptx


def test_inline_ptx_is_emitted():
    ptx = _ptx(dk.nvidia_asm_kernel, "*i32,*i32", {"N": 128})
    assert "shf.l.wrap.b32" in ptx


@pytest.mark.gpu
def test_inline_ptx_runs():
    x = np.random.default_rng().integers(-2**31, 2**31 - 1, 128, dtype=np.int64).astype(np.int32)
    with naiad.target("nvidia"):
        xd, out = naiad.to_device(x), naiad.to_device(np.zeros(128, np.int32))
        dk.nvidia_asm_kernel[(1,)](xd, out, 128)
        got = out.numpy()
    u = x.view(np.uint32)
    want = ((u << np.uint32(8)) | (u >> np.uint32(24))).view(np.int32)
    np.testing.assert_array_equal(got, want)
