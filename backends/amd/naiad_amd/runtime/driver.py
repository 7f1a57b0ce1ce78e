"""The HIP runtime through hip-python: devices, memory, modules and launches.

hip-python is imported on first use, never at ``import naiad_amd``, as ``from hip import hip``:
that spelling works with both module shapes hip-python has had -- up to 6.x ``hip.hip`` is a
submodule (``hip/hip.*.so``), from 10.x the ``hip`` package re-exports ``rocm.bindings.hip`` as
an attribute and ``importlib.import_module("hip.hip")`` fails. It is the ``amd`` extra of naiad
(an AMD user may pin the release matching the installed ROCm, see ``INSTALL_HINT``).
hip-python loads ``libamdhip64.so`` only at its first call, so each of "no hip-python",
"the HIP runtime library is missing" and "no AMD GPU (of this arch)" is reported separately,
always as :class:`naiad.errors.DeviceError`.
"""
from __future__ import annotations

import ctypes
import importlib.util
import threading
import warnings

import numpy as np

from naiad.errors import DeviceError

from ..archs import resolve_arch

INSTALL_HINT = (
    "hip-python is not installed (pip install hip-python; pick the release matching your ROCm, "
    "e.g. pip install 'hip-python~=6.4.0' for ROCm 6.4 -- its version starts with the ROCm version)"
)
RUNTIME_HINT = ("the HIP runtime library is missing: hip-python is installed but libamdhip64.so could "
                "not be loaded; install ROCm and make sure its lib directory (e.g. /opt/rocm/lib) is on "
                "LD_LIBRARY_PATH or ROCM_PATH points at it")
NO_DEVICE = "no AMD GPU found"

# HIP's launch-parameter markers (hip_runtime_api.h); hip-python exposes the same values.
_LAUNCH_PARAM_DEFAULTS = {"BUFFER_POINTER": 1, "BUFFER_SIZE": 2, "END": 3}


def import_hip():
    """hip-python's ``hip`` bindings module (either shape, see above), or DeviceError saying why not."""
    try:
        from hip import hip
    except ImportError as e:
        if _hip_package_missing():
            raise DeviceError(INSTALL_HINT) from None
        if _is_missing_library(e):
            raise DeviceError(f"{RUNTIME_HINT} ({e})") from None
        raise DeviceError(f"hip-python is installed but 'from hip import hip' failed: {e}") from None
    except Exception as e:  # a broken install: report it, still as a DeviceError
        if _is_missing_library(e):
            raise DeviceError(f"{RUNTIME_HINT} ({e})") from None
        raise DeviceError(f"hip-python failed to import: {type(e).__name__}: {e}") from None
    return hip


def _hip_package_missing() -> bool:
    try:
        return importlib.util.find_spec("hip") is None
    except (ImportError, ValueError):  # sys.modules["hip"] is None or has no spec
        return True


def _is_missing_library(err: BaseException) -> bool:
    text = str(err)
    return ("dlopen" in text or "libamdhip64" in text or "cannot open shared" in text
            or (isinstance(err, OSError) and not isinstance(err, (FileNotFoundError, PermissionError))))


def _error_name(hip, err) -> str:
    name = getattr(err, "name", None)
    if name:
        return str(name)
    codes = getattr(hip, "hipError_t", None)
    try:
        return codes(int(getattr(err, "value", err))).name
    except Exception:
        return str(err)


class HipDriver:
    """One HIP device of the wanted architecture and the calls naiad needs on it."""

    def __init__(self, arch: str):
        self.arch = arch
        self.hip = import_hip()
        self.device = self._pick_device(arch)
        self._call("hipSetDevice", self.device)

    # -- calling convention of hip-python: tuple (hipError_t, *results) ----------------------
    def _call(self, name: str, *args):
        fn = getattr(self.hip, name)
        try:
            out = fn(*args)
        except Exception as e:
            if _is_missing_library(e):
                raise DeviceError(f"{RUNTIME_HINT} ({e})") from None
            raise DeviceError(f"HIP {name} raised {type(e).__name__}: {e}") from None
        if not isinstance(out, tuple):
            return out
        err, rest = out[0], out[1:]
        if self._failed(err):
            if _error_name(self.hip, err) == "hipErrorNoDevice":
                raise DeviceError(f"{NO_DEVICE} (HIP {name}: hipErrorNoDevice)")
            raise DeviceError(f"HIP {name} failed: {self._describe(err)}")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    def _failed(self, err) -> bool:
        success = getattr(getattr(self.hip, "hipError_t", None), "hipSuccess", 0)
        return err != success and int(getattr(err, "value", err)) != 0

    def _describe(self, err) -> str:
        name = getattr(err, "name", str(err))
        try:
            text = self.hip.hipGetErrorString(err)  # hip-python: (hipSuccess, CStr)
            if isinstance(text, tuple):
                text = text[-1]
            if not isinstance(text, (bytes, str)):
                text = bytes(text)
            text = text.decode(errors="replace").rstrip("\0") if isinstance(text, bytes) else text
            return f"{name}: {text}"
        except Exception:
            return str(name)

    @classmethod
    def first_device_arch(cls) -> str | None:
        """The ``gfx`` name of device 0 without choosing a device (DeviceError when impossible)."""
        probe = cls.__new__(cls)
        probe.hip = import_hip()
        count = probe._call("hipGetDeviceCount")
        if not count:
            raise DeviceError(NO_DEVICE)
        return probe.device_arch(0)

    def _pick_device(self, arch: str) -> int:
        count = self._call("hipGetDeviceCount")
        if not count:
            raise DeviceError(f"{NO_DEVICE} for target amd:{arch}")
        seen = []
        for dev in range(int(count)):
            name = self.device_arch(dev)
            seen.append(name)
            if name == arch or resolve_arch(name, warn=False) == arch:
                return dev
        raise DeviceError(f"{NO_DEVICE} for target amd:{arch} (this machine has {', '.join(seen)})")

    def device_arch(self, dev: int) -> str:
        """``gfx942`` from the device's ``gcnArchName`` (``gfx942:sramecc+:xnack-``)."""
        props = self.hip.hipDeviceProp_t()
        self._call("hipGetDeviceProperties", props, dev)
        name = props.gcnArchName
        name = name.decode() if isinstance(name, bytes) else str(name)
        return name.split(":")[0].strip("\0 ")

    def device_properties(self) -> dict:
        """Triton's device-property keys, from ``hipGetDeviceProperties`` of this device."""
        p = self.hip.hipDeviceProp_t()
        self._call("hipGetDeviceProperties", p, self.device)
        return {
            "max_shared_mem": int(p.sharedMemPerBlock),
            "max_num_regs": int(p.regsPerBlock),
            "multiprocessor_count": int(p.multiProcessorCount),
            "warpSize": int(p.warpSize),
            "sm_clock_rate": int(p.clockRate),
            "mem_clock_rate": int(p.memoryClockRate),
            "mem_bus_width": int(p.memoryBusWidth),
            "max_threads_per_sm": int(p.maxThreadsPerMultiProcessor),
            "arch": self.arch,
        }

    # -- memory ------------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> int:
        return _as_int(self._call("hipMalloc", max(int(nbytes), 1)))

    def free(self, ptr: int) -> None:
        self._call("hipFree", ptr)

    def htod(self, ptr: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        kind = self.hip.hipMemcpyKind.hipMemcpyHostToDevice
        self._call("hipMemcpy", ptr, host, host.nbytes, kind)

    def dtoh(self, host: np.ndarray, ptr: int) -> None:
        kind = self.hip.hipMemcpyKind.hipMemcpyDeviceToHost
        self._call("hipMemcpy", host, ptr, host.nbytes, kind)

    def synchronize(self) -> None:
        self._call("hipDeviceSynchronize")

    # -- modules and launches ----------------------------------------------------------------
    def load_module(self, image: bytes):
        return self._call("hipModuleLoadData", image)

    def get_function(self, module, name: str):
        return self._call("hipModuleGetFunction", module, name.encode())

    def launch(self, function, grid, block, shared_bytes: int, stream, kernargs: bytes) -> None:
        """``hipModuleLaunchKernel`` with the kernel arguments as one packed buffer."""
        buf = ctypes.create_string_buffer(bytes(kernargs), max(len(kernargs), 1))
        size = ctypes.c_size_t(len(kernargs))
        marker = {k: int(getattr(self.hip, f"HIP_LAUNCH_PARAM_{k}", v)) for k, v in _LAUNCH_PARAM_DEFAULTS.items()}
        extra = (ctypes.c_void_p * 5)(marker["BUFFER_POINTER"], ctypes.addressof(buf),
                                      marker["BUFFER_SIZE"], ctypes.addressof(size), marker["END"])
        gx, gy, gz = grid
        bx, by, bz = block
        self._call("hipModuleLaunchKernel", function, gx, gy, gz, bx, by, bz, int(shared_bytes),
                   stream, None, extra)


def _as_int(ptr) -> int:
    if isinstance(ptr, int):
        return ptr
    try:
        return int(ptr)
    except TypeError:
        return ptr.as_c_void_p().value or 0


_drivers: dict[str, HipDriver] = {}
_lock = threading.Lock()


def get_driver(arch: str) -> HipDriver:
    """The process-wide driver for ``arch`` (created on first use; DeviceError when impossible)."""
    with _lock:
        drv = _drivers.get(arch)
        if drv is None:
            drv = _drivers[arch] = HipDriver(arch)
        return drv


def detect_arch() -> str | None:
    """The naiad arch of the first AMD GPU here (see :func:`naiad_amd.archs.resolve_arch`), or
    None; cheap and never raises.

    Without hip-python there is no usable AMD GPU, and that check loads nothing. When hip-python
    is installed (the user asked for AMD) but cannot reach a GPU, a warning says why -- the HIP
    runtime library is missing, or no AMD GPU found -- so that ``naiad targets`` and the fallback
    to another target are not silent.
    """
    try:
        if _hip_package_missing():
            return None
        return resolve_arch(HipDriver.first_device_arch())
    except DeviceError as e:
        warnings.warn(f"naiad: amd: {e}", RuntimeWarning, stacklevel=2)
        return None
    except Exception:  # must never raise
        return None
