"""The module ``import triton`` yields under naiad's import hook: naiad's API under Triton's
names (``triton.jit``, ``triton.Config``, ``triton.runtime.driver``, ``triton.TritonError`` ...).

Only names with a naiad implementation are here; anything else raises ``AttributeError`` naming
what naiad lacks.
"""
from __future__ import annotations

import naiad
from naiad import (CompilationError, cdiv, next_power_of_2)
from naiad import language, testing, runtime, tools  # noqa: F401 -- triton.language etc.
from naiad.errors import NaiadError
from naiad.compiler import compile  # noqa: A001
from naiad.runtime import driver as _driver  # noqa: F401 -- triton.runtime.driver after import
from naiad.runtime.allocator import set_allocator
from naiad.runtime.autotune import Config, autotune, heuristics
from naiad.runtime.errors import OutOfResources
from naiad.runtime.jit import JITFunction, jit

__version__ = naiad.__version__
__path__: list[str] = []    # a package, so ``triton.x`` submodules resolve through the hook

#: Triton's base class of its errors
TritonError = NaiadError
#: ``triton.MockTensor``-style helpers are not provided; ``reinterpret`` is.


def reinterpret(tensor, dtype):
    """A view of ``tensor``'s memory as elements of ``dtype`` (a ``tl`` dtype), as Triton's
    ``triton.reinterpret``: torch tensors via ``Tensor.view``, numpy arrays via ``ndarray.view``."""
    from naiad.language import dtypes as _dtypes

    name = getattr(dtype, "name", str(dtype))
    if type(tensor).__module__.startswith("torch"):
        import torch

        torch_name = _TORCH_NAMES.get(name, name)
        tdt = getattr(torch, torch_name, None)
        if not isinstance(tdt, torch.dtype):
            if name == "fp8e4b15":    # no torch type: the bytes, labelled (Triton's wrapper)
                return TensorWrapper(tensor.view(torch.uint8), dtype)
            raise TypeError(f"Cannot reinterpret a torch tensor as {name}: torch has no "
                            f"{torch_name}")
        return tensor.view(tdt)
    import numpy as np

    if isinstance(tensor, np.ndarray):
        from naiad.ir.types import numpy_dtype_of

        return tensor.view(numpy_dtype_of(_dtypes_ir_name(name)))
    raise TypeError(f"Cannot reinterpret a {type(tensor).__name__}.")


class TensorWrapper:
    """A torch tensor's bytes labelled with a ``tl`` dtype torch lacks (float8e4b15), as
    Triton's ``TensorWrapper``; kernels take it for a pointer to that dtype."""

    def __init__(self, base, dtype):
        self.base, self.dtype = base, dtype
        self.device, self.shape = base.device, base.shape

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self):
        return self.base.element_size()

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)

    @property
    def __cuda_array_interface__(self):
        return self.base.__cuda_array_interface__

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


_TORCH_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
                "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
                "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz"}


def _dtypes_ir_name(name: str) -> str:
    return {"fp16": "f16", "fp32": "f32", "fp64": "f64"}.get(name, name)


def __getattr__(name):
    raise AttributeError(f"module 'triton' (naiad standing in for Triton) has no attribute "
                         f"{name!r}: naiad does not provide triton.{name}")
