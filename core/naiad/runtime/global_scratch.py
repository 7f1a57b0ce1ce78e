"""Global scratch memory of a launch: what a kernel whose backend added a hidden scratch
parameter (``metadata["global_scratch_size"]``, bytes per program) gets as its last argument.

Why: a kernel may need memory of its own per program -- NVIDIA's tensor maps of descriptors
made in the kernel (``tl.make_tensor_descriptor``) are written there. As in Triton, the launch
asks the user's allocator (``naiad.set_allocator`` / ``triton.set_allocator``) for
``size * programs`` bytes aligned to ``global_scratch_align`` on the launch's stream, and
passes the buffer's address; without an allocator the launch raises, naming the kernel line
that needs the memory. Kernels without the parameter never come here.
"""
from __future__ import annotations

from ..errors import NaiadError
from .allocator import get_allocator

#: the alignment asked of the allocator (a CUtensorMap needs 64 bytes; Triton asks 128)
GLOBAL_SCRATCH_ALIGN = 128


class NoAllocatorError(NaiadError, RuntimeError):
    """A kernel needs global scratch memory and no allocator is installed."""


def with_global_scratch(go, kernel, pointer_of):
    """``go(grid3, args, stream)`` with the scratch buffer appended to ``args``: ``kernel``'s
    metadata says how much; ``pointer_of(buffer)`` is the launcher's device address of what
    the allocator returned (None when it has none)."""
    meta = kernel.metadata
    per_program = int(meta["global_scratch_size"])
    align = int(meta.get("global_scratch_align", GLOBAL_SCRATCH_ALIGN))
    user = meta.get("global_scratch_user") or kernel.name

    def launch(grid, args, stream=None):
        alloc = get_allocator()
        if alloc is None:
            raise NoAllocatorError(
                f"{user}: kernel {kernel.name!r} requires a runtime memory allocation "
                f"({per_program} bytes per program, for tensor descriptors made in the kernel),"
                f" but no allocator was set; call naiad.set_allocator(fn) (triton.set_allocator"
                f" in Triton code) with fn(size, alignment, stream) returning a device buffer")
        buffer = alloc(per_program * grid[0] * grid[1] * grid[2], align, stream)
        address = pointer_of(buffer)
        if address is None:
            raise NoAllocatorError(f"{user}: the allocator returned {type(buffer).__name__}, "
                                   f"which has no device address")
        if address % align:
            raise NoAllocatorError(f"{user}: the allocator returned memory at {address:#x}, "
                                   f"not aligned to {align} bytes")
        go(grid, [*args, address], stream)

    return launch
