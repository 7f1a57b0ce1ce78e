"""``naiad.runtime.driver``: the device queries a Triton host program makes.

``driver.active`` answers for the current naiad target (``naiad.set_target`` / ``NAIAD_TARGET`` /
autodetection), the way ``triton.runtime.driver.active`` does for Triton's active GPU::

    driver.active.get_current_target()      # GPUTarget(backend="cuda", arch=90, warp_size=32)
    driver.active.get_active_torch_device() # torch.device("cuda", 0); "cpu" on the reference
    driver.active.get_current_device()      # 0
    driver.active.utils.get_device_properties(0)["multiprocessor_count"]

Backend names follow Triton (``cuda`` for naiad's ``nvidia``, ``hip`` for ``amd``, the NVIDIA
arch as an int such as 90) so scripts that branch on them take their GPU path. Other backends keep
their naiad name (``reference``). Device properties come from the backend's launcher
(``Launcher.device_properties()``, optional); the reference backend reports the host, documented
in docs/host-api.md: a multiprocessor is a CPU core, warps have one lane, and shared memory and
registers are not limits (large nominal values).
"""
from __future__ import annotations

import os
from typing import NamedTuple

from ..errors import DeviceError
from .targets import current_state

#: naiad backend -> Triton's backend name
TRITON_BACKEND_NAMES = {"nvidia": "cuda", "amd": "hip"}

#: what the reference backend reports for the host (nominal where the notion does not apply)
HOST_PROPERTIES = {
    "max_shared_mem": 1 << 30,       # no shared-memory limit: numpy arrays are host memory
    "max_num_regs": 1 << 16,         # no register file: nominal, as on a 64K-register SM
    "warpSize": 1,                   # the reference runs programs with one "lane"
    "sm_clock_rate": 0,
    "mem_clock_rate": 0,
    "mem_bus_width": 0,
    "max_threads_per_sm": 1,
}


class GPUTarget(NamedTuple):
    """Triton's target triple: ``backend`` (cuda/hip/naiad name), ``arch``, ``warp_size``."""

    backend: str
    arch: int | str
    warp_size: int


def _triton_arch(backend: str, arch: str):
    if backend == "nvidia":
        digits = "".join(ch for ch in arch if ch.isdigit())
        return int(digits) if digits else arch
    return arch


class DeviceUtils:
    """``driver.active.utils``: device properties."""

    def __init__(self, driver: "ActiveDriver"):
        self._driver = driver

    def get_device_properties(self, device=None) -> dict:
        """Properties of device ``device`` (an int or None) of the current target, with
        Triton's keys: multiprocessor_count, max_shared_mem, max_num_regs, warpSize,
        sm_clock_rate, mem_clock_rate, mem_bus_width (and max_threads_per_sm)."""
        state = current_state()
        if not state.spec.compiled:
            props = dict(HOST_PROPERTIES)
            props["multiprocessor_count"] = os.cpu_count() or 1
            return props
        query = getattr(state.launcher, "device_properties", None)
        if query is None:
            raise DeviceError(f"the {state.spec.backend} backend's launcher offers no "
                              f"device_properties(); cannot report properties of {state.name}")
        props = dict(query(0 if device is None else int(device)))
        props.setdefault("warpSize", state.target.warp_size)
        return props


class ActiveDriver:
    """``driver.active``: what Triton's active driver answers, for the current naiad target."""

    def __init__(self):
        self.utils = DeviceUtils(self)
        self._answer = (None, None)   # (TargetState, its GPUTarget): the last one asked

    def get_current_target(self) -> GPUTarget:
        """The current target in Triton's terms (remembered per resolved target: tutorial 02's
        ``is_hip()`` asks on every call)."""
        state = current_state()
        last_state, answer = self._answer
        if state is last_state:
            return answer
        target = state.target
        backend = TRITON_BACKEND_NAMES.get(target.backend, target.backend)
        answer = GPUTarget(backend, _triton_arch(target.backend, target.arch), target.warp_size)
        self._answer = (state, answer)
        return answer

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        if int(device) != 0:
            raise DeviceError(f"naiad uses device 0 of the current target; device {device} "
                              f"cannot be selected")

    def get_current_stream(self, device=None) -> int:
        return 0   # the default stream: naiad launches use torch's current stream when given

    def get_active_torch_device(self):
        """``torch.device("cuda", 0)`` on a GPU target, ``torch.device("cpu")`` on an
        interpreted one (torch is imported here, as the caller uses torch)."""
        import torch

        state = current_state()
        if not state.spec.compiled:
            return torch.device("cpu")
        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        """The torch device module (``torch.cuda``) of a GPU target; ``torch.cpu`` otherwise."""
        import torch

        return torch.cuda if current_state().spec.compiled else torch.cpu

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def is_active(self) -> bool:
        return True


active = ActiveDriver()
