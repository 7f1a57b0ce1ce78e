"""``DeviceArray``: naiad's own GPU buffer, so kernels can run without torch or CuPy."""
from __future__ import annotations

import math
import weakref

import numpy as np


class DeviceArray:
    """A C-contiguous array in device memory, freed when garbage-collected.

    Exposes ``__cuda_array_interface__`` (v3) so torch/CuPy/numba can view it, and ``numpy()``
    to copy it back to the host.
    """

    __slots__ = ("ptr", "shape", "dtype", "nbytes", "_driver", "_finalizer", "__weakref__")

    def __init__(self, driver, ptr: int, shape, dtype, *, owner: bool = True):
        self._driver = driver
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        self._finalizer = weakref.finalize(self, driver.free, self.ptr) if owner and ptr else None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def data_ptr(self) -> int:
        return self.ptr

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def numpy(self) -> np.ndarray:
        """Copy to a new host array (waits for the device's pending work first)."""
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._driver.synchronize()
            self._driver.copy_to_host(host, self.ptr)
        return host

    def copy_from(self, array) -> "DeviceArray":
        """Overwrite the contents with a host array of the same shape and dtype."""
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.shape != self.shape:
            raise ValueError(f"shape mismatch: device {self.shape}, host {host.shape}")
        self._driver.copy_to_device(self.ptr, host)
        return self

    def free(self) -> None:
        """Release the memory now (the array must not be used afterwards)."""
        if self._finalizer is not None:
            self._finalizer()
        self.ptr = 0

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x}, "
                f"device={getattr(self._driver, 'target_name', '?')})")
