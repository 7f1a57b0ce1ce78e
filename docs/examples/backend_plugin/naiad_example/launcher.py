"""The example backend's runtime: it interprets the tile IR by handing it to naiad's reference
executor, reached the only way a plugin reaches another one -- through naiad's hooks."""
from __future__ import annotations

from naiad.errors import DeviceError
from naiad.plugins import Launcher, Target, get_plugin_manager

REFERENCE = Target("reference", "numpy", 1)


class ExampleLauncher(Launcher):
    """Counts its launches (``launches``) and delegates the work to the reference launcher."""

    def __init__(self, target: Target):
        self.target = target
        self.launches = 0
        inner = get_plugin_manager().hook.naiad_launcher(target=REFERENCE)
        if inner is None:
            raise DeviceError(f"{target}: the example backend runs on naiad's reference executor, "
                              f"and no plugin provides the 'reference' target here")
        self.inner = inner

    def load(self, result, kernel_name: str):
        return self.inner.load(result, kernel_name)

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        self.launches += 1
        self.inner.launch(handle, grid, num_warps, shared_bytes, args, arg_types)

    # host numpy arrays are this backend's device memory
    def to_device(self, array):
        return self.inner.to_device(array)

    def empty(self, shape, dtype):
        return self.inner.empty(shape, dtype)

    def data_pointer(self, obj):
        return self.inner.data_pointer(obj)
