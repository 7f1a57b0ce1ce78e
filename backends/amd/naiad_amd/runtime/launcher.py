"""The AMD backend's Launcher: device arrays, module loading and kernel launches over HIP.

Nothing here touches HIP until it is used: constructing an :class:`AmdLauncher` is free, and the
first call that needs the runtime raises :class:`naiad.errors.DeviceError` when hip-python, the
HIP library or a GPU of the target's arch is missing.

Kernel arguments are packed into one buffer at the offsets the code object's metadata gives for
each explicit argument (``BinaryResult.metadata["args"]``) and passed with
``HIP_LAUNCH_PARAM_BUFFER_POINTER``, so the layout is the compiler's, not a guess.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from naiad.errors import DeviceError
from naiad.plugins import BinaryResult, Launcher

from ..archs import get_arch
from .driver import get_driver

# naiad scalar type names (Triton's spelling and naiad's short one) -> struct format.
_SCALAR_FORMATS = {
    "i1": "?", "int1": "?",
    "i8": "b", "int8": "b", "u8": "B", "uint8": "B",
    "i16": "h", "int16": "h", "u16": "H", "uint16": "H",
    "i32": "i", "int32": "i", "u32": "I", "uint32": "I",
    "i64": "q", "int64": "q", "u64": "Q", "uint64": "Q",
    "fp16": "e", "f16": "e", "float16": "e",
    "fp32": "f", "f32": "f", "float32": "f",
    "fp64": "d", "f64": "d", "float64": "d",
}


def _bf16_bits(value: float) -> bytes:
    """float -> bfloat16 bytes, round to nearest even (NaN stays a quiet NaN)."""
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return struct.pack("<H", 0x7FC0 | ((bits >> 16) & 0x8000))
    bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def encode_scalar(value, ty: str) -> bytes:
    ty = ty.strip()
    if ty in ("bf16", "bfloat16"):
        return _bf16_bits(value)
    fmt = _SCALAR_FORMATS.get(ty)
    if fmt is None:
        raise DeviceError(f"amd launcher: unsupported kernel argument type {ty!r}")
    if fmt in "bBhHiIqQ":
        bits = struct.calcsize(fmt) * 8
        value = int(value) & ((1 << bits) - 1)  # two's complement wrap like a C cast
        fmt = fmt.upper() if fmt.islower() else fmt
    return struct.pack("<" + fmt, value)


def pack_kernargs(args, arg_types, layout, pointer_of) -> bytes:
    """The explicit kernel-argument segment: each argument at its metadata offset.

    ``layout`` is a list of ``{"offset", "size", "kind"}``; ``pointer_of(obj)`` returns a device
    address for pointer arguments that are not plain ints.
    """
    if len(args) != len(arg_types):
        raise DeviceError(f"amd launcher: {len(args)} arguments but {len(arg_types)} argument types")
    if len(layout) != len(args):
        raise DeviceError(f"amd launcher: the kernel takes {len(layout)} arguments, got {len(args)}")
    end = max((a["offset"] + a["size"] for a in layout), default=0)
    buf = bytearray(end)
    for value, ty, slot in zip(args, arg_types, layout):
        if ty.startswith("*"):
            addr = value if isinstance(value, int) else (0 if value is None else pointer_of(value))
            data = struct.pack("<Q", int(addr) & (2 ** 64 - 1))
        else:
            data = encode_scalar(value, ty)
        if len(data) > slot["size"]:
            raise DeviceError(f"amd launcher: argument of type {ty} needs {len(data)} bytes, "
                              f"the kernel reserves {slot['size']}")
        buf[slot["offset"]:slot["offset"] + len(data)] = data
    return bytes(buf)


class AmdDeviceArray:
    """A block of HIP device memory with a shape and dtype (``naiad.to_device`` / ``empty``)."""

    def __init__(self, driver, ptr: int, shape, dtype):
        self._driver = driver
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize

    def data_ptr(self) -> int:
        return self.ptr

    @property
    def __cuda_array_interface__(self):  # what ROCm builds of torch/CuPy read for HIP memory too
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3}

    def numpy(self) -> np.ndarray:
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._driver.dtoh(host, self.ptr)
        return host

    def __repr__(self):
        return f"AmdDeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            try:
                self._driver.free(ptr)
            except Exception:
                pass


@dataclass
class KernelHandle:
    module: object
    function: object
    name: str
    layout: list
    lds: int


class AmdLauncher(Launcher):
    def __init__(self, target):
        self.target = target
        self.arch = get_arch(target.arch)

    @property
    def driver(self):
        return get_driver(self.arch.name)

    def device_properties(self, device: int = 0) -> dict:
        """Triton's device-property keys (``naiad.runtime.driver``) of this target's device."""
        return self.driver.device_properties()

    def load(self, result: BinaryResult, kernel_name: str) -> KernelHandle:
        image = result.stages[result.binary_stage]
        drv = self.driver
        module = drv.load_module(image)
        function = drv.get_function(module, kernel_name)
        meta = result.metadata or {}
        layout = meta.get("args")
        if layout is None:
            from ..metadata import kernel_metadata, resource_report
            layout = resource_report(kernel_metadata(image, kernel_name))["args"]
        return KernelHandle(module, function, kernel_name, list(layout), int(meta.get("lds", 0)))

    def launch(self, handle: KernelHandle, grid, num_warps: int, shared_bytes: int, args, arg_types,
               stream=None) -> None:
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(tuple(grid)))
        if any(g < 1 for g in grid[:3]):
            return  # an empty grid launches nothing (HIP would reject it)
        block = (int(num_warps) * self.arch.wave_size, 1, 1)
        kernargs = pack_kernargs(args, arg_types, handle.layout, self._pointer_or_raise)
        self.driver.launch(handle.function, grid[:3], block, int(shared_bytes or 0), stream, kernargs)

    # -- memory ------------------------------------------------------------------------------
    def to_device(self, array) -> AmdDeviceArray:
        host = np.ascontiguousarray(array)
        drv = self.driver
        out = AmdDeviceArray(drv, drv.malloc(host.nbytes), host.shape, host.dtype)
        if host.nbytes:
            drv.htod(out.ptr, host)
        return out

    def empty(self, shape, dtype) -> AmdDeviceArray:
        if isinstance(shape, int):
            shape = (shape,)
        drv = self.driver
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return AmdDeviceArray(drv, drv.malloc(nbytes), shape, dtype)

    def data_pointer(self, obj) -> int | None:
        """Device address of our arrays, of anything with ``__cuda_array_interface__`` (ROCm
        torch/CuPy), or of a ROCm DLPack tensor with ``data_ptr()``; None otherwise."""
        if isinstance(obj, AmdDeviceArray):
            return obj.ptr
        cai = getattr(obj, "__cuda_array_interface__", None)
        if isinstance(cai, dict) and "data" in cai:
            return int(cai["data"][0])
        dev = getattr(obj, "__dlpack_device__", None)
        if callable(dev) and callable(getattr(obj, "data_ptr", None)):
            try:
                kind = int(dev()[0])
            except Exception:
                return None
            if kind == 10:  # kDLROCM
                return int(obj.data_ptr())
        return None

    def _pointer_or_raise(self, obj) -> int:
        ptr = self.data_pointer(obj)
        if ptr is None:
            raise DeviceError(f"amd launcher: cannot pass a {type(obj).__name__} as a device pointer")
        return ptr
