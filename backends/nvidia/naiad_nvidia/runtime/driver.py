"""A thin, checked wrapper over the CUDA driver API (``cuda.bindings.driver``).

Why a wrapper: every CUresult is checked in one place and turned into a ``DeviceError`` that
names the call and the driver's own error string; initialisation is lazy, so importing the
backend (or compiling without a GPU) never touches ``libcuda``; and a machine without a driver
gets one clear message naming the target instead of a loader traceback.
"""
from __future__ import annotations

import functools
import threading

from naiad.errors import DeviceError

#: Shared memory a kernel may use per block without opting in (static + dynamic).
DEFAULT_SHARED_LIMIT = 48 * 1024


class CudaDriver:
    """The CUDA primary context of one device, initialised on first use.

    ``cu`` defaults to ``cuda.bindings.driver``; tests pass a fake with the same interface.
    """

    def __init__(self, target_name: str, ordinal: int = 0, cu=None):
        self.target_name = target_name
        self.ordinal = ordinal
        self._cu_override = cu
        self.cu = None
        self.device = None
        self.context = None
        self._failure: DeviceError | None = None
        self._lock = threading.Lock()
        # Filled by _init.
        self.name = ""
        self.compute_capability = (0, 0)
        self.max_shared_optin = DEFAULT_SHARED_LIMIT
        self.max_threads_per_block = 1024
        self.sm_count = 0

    # -- initialisation ---------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.context is not None

    def ensure(self) -> "CudaDriver":
        """Initialise the driver and the device's primary context; raise DeviceError if absent."""
        if self.context is not None:
            return self
        with self._lock:
            if self.context is None:
                if self._failure is not None:
                    raise self._failure
                try:
                    self._init()
                except DeviceError as e:
                    self._failure = e
                    raise
        return self

    def _no_device(self, why: str) -> DeviceError:
        return DeviceError(f"no NVIDIA driver/device found for target {self.target_name}: {why}")

    def _init(self) -> None:
        try:
            cu = self._cu_override
            if cu is None:
                from cuda.bindings import driver as cu
            (err,) = cu.cuInit(0)
        except Exception as e:  # libcuda missing: cuda-pathfinder raises on first call
            raise self._no_device(f"{type(e).__name__}: {e}") from None
        self.cu = cu
        if err:
            raise self._no_device(f"cuInit failed: {self.error_text(err)}")
        err, count = cu.cuDeviceGetCount()
        if err or count == 0:
            raise self._no_device(
                "no CUDA device is visible" if not err else self.error_text(err))
        if self.ordinal >= count:
            raise self._no_device(f"device {self.ordinal} requested but only {count} visible")
        self.device = self.call("cuDeviceGet", self.ordinal)
        attr = cu.CUdevice_attribute
        major = self.device_attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.device_attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.compute_capability = (major, minor)
        self.max_shared_optin = self.device_attribute(
            attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.max_threads_per_block = self.device_attribute(
            attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        self.sm_count = self.device_attribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        raw = self.call("cuDeviceGetName", 256, self.device)
        self.name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
        ctx = self.call("cuDevicePrimaryCtxRetain", self.device)
        self.call("cuCtxSetCurrent", ctx)
        self.context = ctx

    # -- error handling ---------------------------------------------------------------------
    def error_text(self, err) -> str:
        """``CUDA_ERROR_X: description`` for a CUresult."""
        cu = self.cu
        try:
            e1, name = cu.cuGetErrorName(err)
            e2, text = cu.cuGetErrorString(err)
            name = name.decode() if isinstance(name, bytes) else str(name)
            text = text.decode() if isinstance(text, bytes) else str(text)
            if not e1 and not e2:
                return f"{name}: {text}"
        except Exception:
            pass
        return f"CUresult {int(err)}"

    def check(self, err, call: str) -> None:
        if err:
            raise DeviceError(f"{call} failed on {self.target_name}: {self.error_text(err)}")

    def call(self, name: str, *args):
        """Call ``cu.<name>(*args)``, check the CUresult, return the single result (or a tuple)."""
        fn = getattr(self.cu, name)
        out = fn(*args)
        if out[0] and self.context is not None and \
                out[0] == self.cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            # A thread that has not used the device yet: bind the primary context, retry once.
            self.cu.cuCtxSetCurrent(self.context)
            out = fn(*args)
        self.check(out[0], name)
        if len(out) == 1:
            return None
        return out[1] if len(out) == 2 else out[1:]

    def make_current(self) -> None:
        """Bind the primary context to the calling thread (CUDA contexts are per thread)."""
        self.ensure()
        self.call("cuCtxSetCurrent", self.context)

    # -- queries ----------------------------------------------------------------------------
    def device_attribute(self, attr) -> int:
        return int(self.call("cuDeviceGetAttribute", attr, self.device))

    @property
    def arch(self) -> str:
        return "sm_%d%d" % self.compute_capability

    def function_attribute(self, function, attr) -> int:
        return int(self.call("cuFuncGetAttribute", attr, function))

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        self.ensure()
        if nbytes <= 0:
            return 0
        try:
            return int(self.call("cuMemAlloc", int(nbytes)))
        except DeviceError as e:
            raise DeviceError(f"could not allocate {nbytes} bytes on {self.name} "
                              f"({self.target_name}): {e}") from None

    def free(self, ptr: int) -> None:
        """Free device memory; silent when the driver is already gone (interpreter exit)."""
        if not ptr or self.cu is None:
            return
        try:
            self.cu.cuMemFree(ptr)
        except Exception:
            pass

    def copy_to_device(self, dst: int, host) -> None:
        """``host`` is a C-contiguous numpy array."""
        if host.nbytes:
            self.call("cuMemcpyHtoD", dst, host.ctypes.data, host.nbytes)

    def copy_to_host(self, host, src: int) -> None:
        if host.nbytes:
            self.call("cuMemcpyDtoH", host.ctypes.data, src, host.nbytes)

    def synchronize(self) -> None:
        self.ensure()
        self.call("cuCtxSynchronize")

    # -- modules ----------------------------------------------------------------------------
    def load_module(self, image: bytes):
        self.ensure()
        return self.call("cuModuleLoadData", image)

    def unload_module(self, module) -> None:
        if module is None or self.cu is None:
            return
        try:
            self.cu.cuModuleUnload(module)
        except Exception:
            pass

    def get_function(self, module, name: str):
        return self.call("cuModuleGetFunction", module, name.encode())


@functools.lru_cache(maxsize=None)
def get_driver(target_name: str, ordinal: int = 0) -> CudaDriver:
    """The process-wide driver object for ``target_name`` (lazily initialised)."""
    return CudaDriver(target_name, ordinal)


def detect_arch() -> str | None:
    """Compute capability of device 0 as ``sm_XY``, or None; cheap and never raises."""
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if err:
            return None
        err, count = cu.cuDeviceGetCount()
        if err or not count:
            return None
        err, dev = cu.cuDeviceGet(0)
        if err:
            return None
        attr = cu.CUdevice_attribute
        e1, major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        e2, minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        if e1 or e2:
            return None
        return f"sm_{major}{minor}"
    except BaseException:  # noqa: BLE001 - contract: never raise
        return None
