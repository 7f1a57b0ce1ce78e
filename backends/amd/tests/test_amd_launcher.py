"""The launcher and driver without an AMD GPU: clear DeviceErrors, and argument packing checked
against a fake ``hip`` module that records what a real hipModuleLaunchKernel would receive."""
from __future__ import annotations

import ctypes
import enum
import struct
import sys
import types

import numpy as np
import pytest

from naiad.errors import DeviceError

import amd_irkernels as K
import naiad_amd.runtime.driver as driver
from amd_testkit import amd_target, attrs_for
from naiad_amd.codegen import AmdCodegen
from naiad_amd.runtime.launcher import AmdDeviceArray, AmdLauncher, encode_scalar, pack_kernargs


@pytest.fixture(autouse=True)
def fresh_drivers(monkeypatch):
    monkeypatch.setattr(driver, "_drivers", {})


def _install(monkeypatch, module):
    pkg = types.ModuleType("hip")
    pkg.hip = module
    monkeypatch.setitem(sys.modules, "hip", pkg)
    monkeypatch.setitem(sys.modules, "hip.hip", module)


def test_no_hip_python(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    monkeypatch.setitem(sys.modules, "hip.hip", None)
    launcher = AmdLauncher(amd_target("gfx942"))
    with pytest.raises(DeviceError, match=r"hip-python is not installed \(pip install hip-python"):
        launcher.to_device(np.zeros(4, np.float32))
    with pytest.raises(DeviceError, match="hip-python is not installed"):
        launcher.empty((4,), np.float32)


def test_no_hip_runtime_library(monkeypatch):
    fake = types.ModuleType("hip.hip")

    def missing(*a):  # what hip-python raises when libamdhip64.so cannot be loaded
        raise RuntimeError("failed to dlopen 'b'libamdhip64.so'': libamdhip64.so: cannot open shared object file")

    fake.hipGetDeviceCount = missing
    _install(monkeypatch, fake)
    with pytest.raises(DeviceError, match="the HIP runtime library is missing"):
        AmdLauncher(amd_target("gfx942")).to_device(np.zeros(4))


class _Err(enum.IntEnum):
    hipSuccess = 0
    hipErrorInvalidValue = 1


def _fake_hip(devices=("gfx942:sramecc+:xnack-",)):
    """A minimal stand-in for hip-python's ``hip.hip`` with memory in host dicts."""
    fake = types.ModuleType("hip.hip")
    ok = _Err.hipSuccess
    mem, state = {}, {"next": 0x1000, "launches": [], "device": None}
    fake.state, fake.mem = state, mem
    fake.hipError_t = _Err
    fake.HIP_LAUNCH_PARAM_BUFFER_POINTER, fake.HIP_LAUNCH_PARAM_BUFFER_SIZE, fake.HIP_LAUNCH_PARAM_END = 1, 2, 3
    fake.hipMemcpyKind = types.SimpleNamespace(hipMemcpyHostToDevice=1, hipMemcpyDeviceToHost=2)

    class Props:
        gcnArchName = b""

    fake.hipDeviceProp_t = Props
    fake.hipGetDeviceCount = lambda: (ok, len(devices))

    def props(p, dev):
        p.gcnArchName = devices[dev].encode()
        return (ok,)

    fake.hipGetDeviceProperties = props
    fake.hipSetDevice = lambda d: (state.__setitem__("device", d), (ok,))[1]
    fake.hipGetErrorString = lambda e: (ok, b"invalid argument")

    def malloc(n):
        ptr = state["next"]
        state["next"] += (n + 255) // 256 * 256
        mem[ptr] = bytearray(n)
        return ok, ptr

    fake.hipMalloc = malloc
    fake.hipFree = lambda p: (mem.pop(p), (ok,))[1]

    def memcpy(dst, src, n, kind):
        if kind == 1:
            mem[dst][:n] = np.ascontiguousarray(src).view(np.uint8).reshape(-1)[:n].tobytes()
        else:
            dst.reshape(-1).view(np.uint8)[:n] = np.frombuffer(bytes(mem[src][:n]), np.uint8)
        return (ok,)

    fake.hipMemcpy = memcpy
    fake.hipModuleLoadData = lambda image: (ok, ("module", bytes(image[:4])))
    fake.hipModuleGetFunction = lambda m, name: (ok, ("function", name)) if m[1] == b"\x7fELF" else (_Err.hipErrorInvalidValue, None)

    def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        words = list(extra)
        assert params is None and words[0] == 1 and words[2] == 2 and words[4] == 3
        size = ctypes.c_size_t.from_address(words[3]).value
        state["launches"].append({"f": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared,
                                  "stream": stream, "args": ctypes.string_at(words[1], size)})
        return (ok,)

    fake.hipModuleLaunchKernel = launch
    return fake


def test_no_gpu(monkeypatch):
    _install(monkeypatch, _fake_hip(devices=()))
    with pytest.raises(DeviceError, match="no AMD GPU found for target amd:gfx942"):
        AmdLauncher(amd_target("gfx942")).to_device(np.zeros(4))


def test_wrong_gpu(monkeypatch):
    _install(monkeypatch, _fake_hip(devices=("gfx90a:sramecc+:xnack-",)))
    with pytest.raises(DeviceError, match=r"no AMD GPU found for target amd:gfx1100 \(this machine has gfx90a\)"):
        AmdLauncher(amd_target("gfx1100")).empty(4, np.float32)


def test_hip_error_is_reported(monkeypatch):
    fake = _fake_hip()
    fake.hipMalloc = lambda n: (_Err.hipErrorInvalidValue, None)
    _install(monkeypatch, fake)
    with pytest.raises(DeviceError, match="hipMalloc failed: hipErrorInvalidValue: invalid argument"):
        AmdLauncher(amd_target("gfx942")).empty(4, np.float32)


def test_memory_round_trip_and_launch(monkeypatch):
    fake = _fake_hip()
    _install(monkeypatch, fake)
    t = amd_target("gfx942")
    cg = AmdCodegen(t)
    o, attrs = attrs_for(t)
    res = cg.compile_llvm(K.vector_add(cg.target_info, attrs, 256), "vadd", o)

    launcher = AmdLauncher(t)
    x = launcher.to_device(np.arange(8, dtype=np.float32))
    y = launcher.to_device(np.ones(8, dtype=np.float32))
    out = launcher.empty((8,), np.float32)
    assert isinstance(out, AmdDeviceArray) and out.shape == (8,) and out.nbytes == 32
    np.testing.assert_array_equal(x.numpy(), np.arange(8, dtype=np.float32))
    assert launcher.data_pointer(x) == x.ptr and out.__cuda_array_interface__["data"] == (out.ptr, False)

    handle = launcher.load(res, "vadd")
    launcher.launch(handle, (3,), 4, 0, [x, y.ptr, out, -5], ["*fp32", "*fp32", "*fp32", "i32"])
    (rec,) = fake.state["launches"]
    assert rec["f"] == ("function", b"vadd")
    assert rec["grid"] == (3, 1, 1) and rec["block"] == (256, 1, 1) and rec["shared"] == 0
    assert rec["args"] == struct.pack("<QQQi", x.ptr, y.ptr, out.ptr, -5)
    assert fake.state["device"] == 0

    launcher.launch(handle, (0, 1, 1), 4, 0, [x, y, out, 8], ["*fp32"] * 3 + ["i32"])
    assert len(fake.state["launches"]) == 1  # empty grid: nothing launched
    with pytest.raises(DeviceError, match="takes 4 arguments, got 3"):
        launcher.launch(handle, (1,), 4, 0, [x, y, out], ["*fp32"] * 3)
    with pytest.raises(DeviceError, match="cannot pass a str"):
        launcher.launch(handle, (1,), 4, 0, [x, y, "out", 8], ["*fp32"] * 3 + ["i32"])

    ptr = out.ptr
    del out
    assert ptr not in fake.mem  # freed with the array


def test_pack_kernargs_uses_metadata_offsets():
    layout = [{"offset": 0, "size": 1, "kind": "by_value"}, {"offset": 8, "size": 8, "kind": "global_buffer"},
              {"offset": 16, "size": 2, "kind": "by_value"}, {"offset": 20, "size": 4, "kind": "by_value"},
              {"offset": 24, "size": 8, "kind": "by_value"}, {"offset": 32, "size": 2, "kind": "by_value"}]
    buf = pack_kernargs([True, 0xDEAD, 1.5, 2.5, 2 ** 63 + 1, 1.0],
                        ["i1", "*fp16", "fp16", "fp32", "u64", "bf16"], layout, lambda o: None)
    assert len(buf) == 34
    assert buf[0] == 1 and struct.unpack_from("<Q", buf, 8)[0] == 0xDEAD
    assert struct.unpack_from("<e", buf, 16)[0] == 1.5 and struct.unpack_from("<f", buf, 20)[0] == 2.5
    assert struct.unpack_from("<Q", buf, 24)[0] == 2 ** 63 + 1
    assert struct.unpack_from("<H", buf, 32)[0] == 0x3F80


def test_encode_scalar():
    assert encode_scalar(-1, "i32") == b"\xff\xff\xff\xff"
    assert encode_scalar(float("nan"), "bf16") == struct.pack("<H", 0x7FC0)
    assert encode_scalar(1.00390625, "bf16") == struct.pack("<H", 0x3F80)  # tie -> even
    with pytest.raises(DeviceError, match="unsupported kernel argument type"):
        encode_scalar(1, "complex64")


def test_detect_arch_is_none_here():
    assert driver.detect_arch() is None
