"""naiad's AMD backend: AMDGCN through LLVM's AMDGPU target, hsaco through ld.lld, launches
through hip-python.

Importing this package never touches HIP or a GPU: the HIP runtime is loaded on first use by
:mod:`naiad_amd.runtime.driver`, and every failure there is a ``naiad.errors.DeviceError``.
"""
from .archs import ARCHS, DEFAULT_ARCH, TRIPLE

__all__ = ["ARCHS", "DEFAULT_ARCH", "TRIPLE"]
