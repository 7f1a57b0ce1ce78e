"""The launcher and driver without a GPU: the no-driver error, pointer extraction, argument
packing, and the whole load/launch/copy flow against a fake CUDA driver."""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from cuda.bindings import driver as real_cu

from naiad.errors import DeviceError
from naiad.plugins import BinaryResult, Target
from naiad_nvidia import plugin
from naiad_nvidia.runtime.device_array import DeviceArray
from naiad_nvidia.runtime.driver import CudaDriver
from naiad_nvidia.runtime.launcher import ArgPacker, NvidiaLauncher

from nv_kernels import GPU_ARCH


TARGET = Target("nvidia", "sm_90", 32)
OK = real_cu.CUresult.CUDA_SUCCESS


# ----------------------------------------------------------------------------- no driver

@pytest.mark.skipif(GPU_ARCH is not None, reason="a GPU is present")
def test_no_driver_raises_device_error_naming_target():
    launcher = plugin.naiad_launcher(TARGET)
    assert isinstance(launcher, NvidiaLauncher)
    for call in (lambda: launcher.empty((4,), np.float32),
                 lambda: launcher.to_device(np.zeros(4, np.float32)),
                 lambda: launcher.load(BinaryResult({"cubin": b"\x7fELF"}, "cubin"), "k")):
        with pytest.raises(DeviceError, match="no NVIDIA driver/device found for target "
                                              "nvidia:sm_90"):
            call()


def test_detect_arch_never_raises():
    assert plugin.detect_arch() in (None, "sm_80", "sm_89", "sm_90")


# ----------------------------------------------------------------------------- pointers

class _Cai:
    __cuda_array_interface__ = {"data": (0xABC000, False), "shape": (3,), "typestr": "<f4",
                                "version": 3}


def test_data_pointer_sources():
    launcher = NvidiaLauncher(TARGET, driver=CudaDriver("nvidia:sm_90", cu=FakeCu()))
    assert launcher.data_pointer(_Cai()) == 0xABC000
    arr = DeviceArray(launcher.driver, 0x1000, (2, 3), np.float32, owner=False)
    assert launcher.data_pointer(arr) == 0x1000
    assert arr.__cuda_array_interface__["typestr"] == "<f4"
    assert arr.nbytes == 24 and arr.shape == (2, 3)
    assert launcher.data_pointer("nope") is None
    with pytest.raises(DeviceError, match="is a host numpy array; use naiad.to_device"):
        launcher.data_pointer(np.zeros(3))


# ----------------------------------------------------------------------------- packing

def _read_params(params: int, types):
    """Read back the values a void** kernel-parameter array points to."""
    ptrs = (ctypes.c_void_p * len(types)).from_address(params)
    out = []
    for p, ty in zip(ptrs, types):
        code = {"*": "Q", "i1": "?", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i",
                "u32": "I", "i64": "q", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f",
                "fp64": "d"}["*" if ty.startswith("*") else ty]
        size = struct.calcsize(code)
        assert p % size == 0, "argument not naturally aligned"
        out.append(struct.unpack(code, ctypes.string_at(p, size))[0])
    return out


def test_arg_packer_layout_and_values():
    types = ("*fp32", "i1", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "fp16",
             "bf16", "fp32", "fp64")
    vals = [0xDEAD0000, True, -5, 250, -300, 60000, -7, 4_000_000_000, -(2 ** 40), 2 ** 63,
            1.5, 1.0, 3.25, 2.5]
    pk = ArgPacker(types)
    got = _read_params(pk.pack(vals), types)
    assert got[:10] == vals[:10]
    assert got[10] == 1.5 and got[11] == 0x3F80 and got[12] == 3.25 and got[13] == 2.5
    got = _read_params(pk.pack([np.uint64(1), np.bool_(False), np.int8(1), 2, 3, 4,
                                np.int32(5), 6, np.int64(7), 8, np.float16(0.5), 2.0,
                                np.float32(1.25), np.float64(0.125)]), types)
    assert got[0] == 1 and got[1] is False and got[6] == 5 and got[12] == 1.25
    assert got[11] == 0x4000


# ----------------------------------------------------------------------------- fake driver

class FakeCu:
    """Just enough of cuda.bindings.driver to run the launcher: memory lives in Python,
    ``vector_add`` kernels execute in numpy."""

    CUresult = real_cu.CUresult
    CUdevice_attribute = real_cu.CUdevice_attribute
    CUfunction_attribute = real_cu.CUfunction_attribute
    CUevent_flags = real_cu.CUevent_flags

    def __init__(self, cc=(9, 0), optin=227 * 1024, static_shared=0, max_threads=1024):
        self.cc, self.optin, self.static_shared, self.max_threads = cc, optin, static_shared, \
            max_threads
        self.mem: dict[int, bytearray] = {}
        self.next = 0x10000
        self.launches = []
        self.func_attrs = {}
        self.fail_launch = None
        self.current = None

    def cuInit(self, flags):
        return (OK,)

    def cuDeviceGetCount(self):
        return OK, 1

    def cuDeviceGet(self, i):
        return OK, 0

    def cuDeviceGetAttribute(self, attr, dev):
        a = self.CUdevice_attribute
        return OK, {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.cc[0],
                    a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: self.cc[1],
                    a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: self.optin,
                    a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
                    a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132}[attr]

    def cuDeviceGetName(self, n, dev):
        return OK, b"Fake H200\0\0"

    def cuDevicePrimaryCtxRetain(self, dev):
        return OK, "ctx"

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx
        return (OK,)

    def cuGetErrorName(self, err):
        return OK, err.name.encode()

    def cuGetErrorString(self, err):
        return OK, b"fake error text"

    def cuMemAlloc(self, n):
        ptr = self.next
        self.next += (n + 255) // 256 * 256 + 256
        self.mem[ptr] = bytearray(n)
        return OK, ptr

    def cuMemFree(self, ptr):
        del self.mem[ptr]
        return (OK,)

    def cuMemcpyHtoD(self, dst, src, n):
        self.mem[dst][:n] = ctypes.string_at(src, n)
        return (OK,)

    def cuMemcpyDtoH(self, dst, src, n):
        ctypes.memmove(dst, bytes(self.mem[src][:n]), n)
        return (OK,)

    def cuCtxSynchronize(self):
        return (OK,)

    def cuModuleLoadData(self, image):
        assert image[:4] == b"\x7fELF"
        return OK, "module"

    def cuModuleUnload(self, m):
        return (OK,)

    def cuModuleGetFunction(self, mod, name):
        if name != b"vector_add":
            return (self.CUresult.CUDA_ERROR_NOT_FOUND, None)
        return OK, "fn:vector_add"

    def cuFuncGetAttribute(self, attr, fn):
        a = self.CUfunction_attribute
        return OK, {a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: self.static_shared,
                    a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: self.max_threads,
                    a.CU_FUNC_ATTRIBUTE_NUM_REGS: 16}[attr]

    def cuFuncSetAttribute(self, fn, attr, value):
        self.func_attrs[attr] = value
        return (OK,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        if self.fail_launch is not None:
            return (self.fail_launch,)
        x, y, out, n = _read_params(params, ("*fp32", "*fp32", "*fp32", "i32"))
        self.launches.append(((gx, gy, gz), (bx, by, bz), shmem, stream, (x, y, out, n)))
        if not n:
            return (OK,)
        xs = np.frombuffer(self.mem[x], np.float32)[:n]
        ys = np.frombuffer(self.mem[y], np.float32)[:n]
        total = min(n, gx * bx)
        res = np.frombuffer(self.mem[out], np.float32).copy()
        res[:total] = xs[:total] + ys[:total]
        self.mem[out][:] = res.tobytes()
        return (OK,)


def _fake_launcher(**kw):
    cu = FakeCu(**kw)
    return NvidiaLauncher(TARGET, driver=CudaDriver("nvidia:sm_90", cu=cu)), cu


CUBIN = BinaryResult({"ptx": "", "cubin": b"\x7fELF fake"}, "cubin",
                     {"arch": "sm_90", "registers": 12, "spill_bytes": 0})
SIG = ("*fp32", "*fp32", "*fp32", "i32")


def test_fake_vector_add_end_to_end():
    launcher, cu = _fake_launcher()
    n = 1000
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = launcher.to_device(x), launcher.to_device(y)
    out = launcher.to_device(np.full(n, np.nan, np.float32))
    h = launcher.load(CUBIN, "vector_add")
    grid = ((n + 127) // 128, 1, 1)
    launcher.launch(h, grid, 4, 0, [dx.ptr, dy.ptr, out.ptr, n], SIG)
    np.testing.assert_array_equal(out.numpy(), x + y)
    assert cu.launches[-1][:4] == (grid, (128, 1, 1), 0, 0)
    # arrays instead of pointers go through the slow path
    launcher.launch(h, grid, 4, 0, [dx, dy, out, n], list(SIG))
    assert cu.launches[-1][4][:3] == (dx.ptr, dy.ptr, out.ptr)
    empty = launcher.empty((2, 3), "fp32")
    assert empty.shape == (2, 3) and empty.dtype == np.float32 and empty.nbytes == 24
    assert launcher.empty(5, "bf16").nbytes == 10
    assert launcher.empty(0, np.float64).numpy().shape == (0,)
    ptr = dx.ptr
    del dx
    import gc
    gc.collect()
    assert ptr not in cu.mem, "DeviceArray memory is freed on GC"


def test_fake_launch_errors_name_kernel_grid_and_resources():
    launcher, cu = _fake_launcher()
    h = launcher.load(CUBIN, "vector_add")
    cu.fail_launch = real_cu.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(DeviceError) as ei:
        launcher.launch(h, (7, 1, 1), 4, 0, [0, 0, 0, 1], SIG)
    msg = str(ei.value)
    for part in ("vector_add", "nvidia:sm_90", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                 "grid=(7, 1, 1)", "12 registers"):
        assert part in msg
    with pytest.raises(DeviceError, match="argument 3 .* i32"):
        cu.fail_launch = None
        launcher.launch(h, (1, 1, 1), 4, 0, [0, 0, 0, 2 ** 40], SIG)


def test_fake_shared_memory_limits():
    launcher, cu = _fake_launcher(optin=100 * 1024, static_shared=1024)
    h = launcher.load(CUBIN, "vector_add")
    attr = real_cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    launcher.launch(h, (1, 1, 1), 4, 40 * 1024, [0, 0, 0, 0], SIG)
    carveout = real_cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    assert attr not in cu.func_attrs  # fits in the default 48 KiB
    assert carveout not in cu.func_attrs  # L1/shared split left to the driver
    launcher.launch(h, (1, 1, 1), 4, 64 * 1024, [0, 0, 0, 0], SIG)
    assert cu.func_attrs[attr] == 64 * 1024  # opted in above 48 KiB
    # ... and the whole carveout goes to shared memory, as Triton's PREFER_SHARED does
    assert cu.func_attrs[carveout] == \
        int(real_cu.CUshared_carveout.CU_SHAREDMEM_CARVEOUT_MAX_SHARED)
    with pytest.raises(DeviceError, match=r"needs 103424 B of shared memory .* at most 102400"):
        launcher.launch(h, (1, 1, 1), 4, 100 * 1024, [0, 0, 0, 0], SIG)


def test_fake_block_size_and_arch_checks():
    launcher, _ = _fake_launcher(max_threads=256)
    h = launcher.load(CUBIN, "vector_add")
    with pytest.raises(DeviceError, match="at most 256 threads"):
        launcher.launch(h, (1, 1, 1), 16, 0, [0, 0, 0, 0], SIG)
    launcher, _ = _fake_launcher(cc=(8, 0))
    with pytest.raises(DeviceError, match=r"compiled for nvidia:sm_90.*sm_80"):
        launcher.load(CUBIN, "vector_add")
    with pytest.raises(DeviceError, match="not found"):
        _fake_launcher()[0].load(CUBIN, "other_kernel")


def test_fake_stream_argument():
    launcher, cu = _fake_launcher()
    h = launcher.load(CUBIN, "vector_add")

    class S:
        def __cuda_stream__(self):
            return (0, 0x5555)

    launcher.launch(h, (1, 1, 1), 4, 0, [0, 0, 0, 0], SIG, stream=S())
    assert cu.launches[-1][3] == 0x5555
    launcher.launch(h, (1, 1, 1), 4, 0, [0, 0, 0, 0], SIG, stream=42)
    assert cu.launches[-1][3] == 42
