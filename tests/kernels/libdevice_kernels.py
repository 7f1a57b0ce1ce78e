"""Kernels applying one ``tl.extra.libdevice`` function by name (a constexpr)."""
import naiad
import naiad.language as tl
from naiad.language.extra import libdevice


@naiad.jit
def unary_kernel(x_ptr, out_ptr, N: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs)))


@naiad.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, getattr(libdevice, FN)(x, y))


@naiad.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Triton's tutorial 07 kernel."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)
