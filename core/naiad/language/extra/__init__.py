"""``tl.extra``: vendor-flavoured namespaces Triton kernels import (``from
triton.language.extra import libdevice``). naiad computes them portably, so ``libdevice``,
``cuda.libdevice`` and ``hip.libdevice`` are one module and run on every backend."""
from . import cuda, hip, libdevice  # noqa: F401

__all__ = ["cuda", "hip", "libdevice"]
