"""``naiad.set_allocator(fn)``: the scratch-memory allocator a Triton program installs.

Triton calls ``fn(size, alignment, stream)`` when a kernel needs global scratch memory (tensor
descriptors built on the device, profiling buffers). naiad keeps the allocator so such kernels can
ask for it (:func:`get_allocator`); kernels that need no scratch memory never call it.
"""
from __future__ import annotations

import contextvars

from ..errors import OptionError

_allocator: contextvars.ContextVar = contextvars.ContextVar("naiad_allocator", default=None)


def set_allocator(fn) -> None:
    """Install ``fn(size: int, alignment: int, stream) -> buffer`` (None removes it)."""
    if fn is not None and not callable(fn):
        raise OptionError(f"set_allocator takes a callable (size, alignment, stream) -> buffer, "
                          f"got {type(fn).__name__}")
    _allocator.set(fn)


def get_allocator():
    """The installed allocator, or None."""
    return _allocator.get()
