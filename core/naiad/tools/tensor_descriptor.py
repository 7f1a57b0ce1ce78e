"""``TensorDescriptor``: a host description of a tiled view of a tensor (Triton's class).

This module validates and carries the fields; what a kernel does with a descriptor argument
(``desc.load``/``store`` through ``tl.make_tensor_descriptor`` semantics, TMA on NVIDIA) belongs
to the language and the backends. A backend or the runtime that does not yet accept descriptor
arguments says so when the kernel is launched, naming the parameter.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from ..errors import NaiadError

_PADDINGS = ("zero", "nan")
#: fields already checked: (shape, strides, block_shape, dtype, padding) -> the three as int
#: tuples. Tutorial code builds the same descriptors on every call; a repeat is then one lookup
#: (only the base address, which changes with the tensor, is checked each time).
_CHECKED: dict = {}
_CHECKED_LIMIT = 4096


class TensorDescriptorError(NaiadError, ValueError):
    """A TensorDescriptor whose fields are inconsistent."""


def _ints(name: str, values) -> list[int]:
    """``values`` as ints: integers, or floats holding one (16.0); 64.5, strings and other
    values are refused (``int()`` would truncate 64.5 to 64 and describe another tensor)."""
    try:
        return [_int(v) for v in values]
    except TypeError:
        raise TensorDescriptorError(f"TensorDescriptor {name} must be a sequence of ints, "
                                    f"got {values!r}") from None


def _int(v) -> int:
    try:
        return operator.index(v)
    except TypeError:
        if hasattr(v, "is_integer") and v.is_integer():   # (equal to its int: the same key)
            return int(v)
        raise


def _element_bytes(base) -> int:
    dt = getattr(base, "dtype", None)
    size = getattr(dt, "itemsize", None)
    if isinstance(size, int):
        return size
    import numpy as np

    return np.dtype(dt).itemsize


def _address(base) -> int | None:
    if hasattr(base, "data_ptr"):
        return int(base.data_ptr())
    cai = getattr(base, "__cuda_array_interface__", None) or getattr(base,
                                                                     "__array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    ptr = getattr(base, "ptr", None)
    return int(ptr) if isinstance(ptr, int) else None


def _check_address(base) -> None:
    data_ptr = getattr(base, "data_ptr", None)    # torch's, without a call of ours
    addr = data_ptr() if callable(data_ptr) else _address(base)
    if addr is not None and addr % 16:
        raise TensorDescriptorError(f"TensorDescriptor base must be 16-byte aligned, its "
                                    f"address is {addr:#x}")


def _is_float(base) -> bool:
    dt = getattr(base, "dtype", None)
    if getattr(dt, "is_floating_point", None) is not None:
        return bool(dt.is_floating_point)
    import numpy as np

    try:
        return np.dtype(dt).kind == "f"
    except TypeError:
        return "float" in str(dt)


@dataclass
class TensorDescriptor:
    """``base`` tensor (torch, numpy, CuPy or naiad array), its ``shape`` and ``strides`` (in
    elements), the ``block_shape`` a kernel loads/stores at a time, and the ``padding`` read for
    out-of-bounds elements (``"zero"`` or ``"nan"``). The rules are Triton's (TMA's): rank 1-5,
    the last dimension contiguous, other strides and the base 16-byte aligned, block dimensions
    powers of two."""

    base: Any
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"
    round_f32_to_tf32: bool = False

    def __post_init__(self):
        dtype = getattr(self.base, "dtype", None)
        try:
            key = (tuple(self.shape), tuple(self.strides), tuple(self.block_shape), dtype,
                   self.padding)
            fields = _CHECKED.get(key)
        except TypeError:             # a field that is not a sequence: _check says which
            key = fields = None
        if fields is None:
            fields = self._check()
            if key is not None and dtype is not None:
                if len(_CHECKED) >= _CHECKED_LIMIT:
                    _CHECKED.clear()
                _CHECKED[key] = fields
        self.shape, self.strides, self.block_shape = list(fields[0]), list(fields[1]), \
            list(fields[2])
        _check_address(self.base)

    def _check(self) -> tuple:
        """Every rule but the base address's alignment; the fields as int tuples."""
        shape = _ints("shape", self.shape)
        strides = _ints("strides", self.strides)
        block = _ints("block_shape", self.block_shape)
        rank = len(shape)
        if not 1 <= rank <= 5:
            raise TensorDescriptorError(f"TensorDescriptor rank must be 1 to 5, got {rank}")
        if len(strides) != rank or len(block) != rank:
            raise TensorDescriptorError(
                f"TensorDescriptor rank mismatch: shape {shape}, strides {strides}, "
                f"block_shape {block}")
        if min(shape) <= 0:
            raise TensorDescriptorError(f"TensorDescriptor shape must be positive, got {shape}")
        for b in block:
            if b <= 0 or b & (b - 1):
                raise TensorDescriptorError(f"TensorDescriptor block_shape entries must be "
                                            f"powers of 2, got {block}")
        if strides[-1] != 1:
            raise TensorDescriptorError(f"TensorDescriptor: Last dimension must be contiguous "
                                        f"(stride 1), got strides {strides}")
        elem = _element_bytes(self.base)
        for i in range(rank - 1):
            if strides[i] * elem % 16:
                raise TensorDescriptorError(f"TensorDescriptor strides must be 16-byte aligned: "
                                            f"strides {strides} x {elem}-byte elements")
        if self.padding != "zero":
            if self.padding not in _PADDINGS:
                raise TensorDescriptorError(f"TensorDescriptor padding must be 'zero' or "
                                            f"'nan', got {self.padding!r}")
            if not _is_float(self.base):
                raise TensorDescriptorError("TensorDescriptor padding 'nan' is only supported "
                                            "for floating point tensors")
        return tuple(shape), tuple(strides), tuple(block)

    @staticmethod
    def from_tensor(tensor, block_shape, padding: str = "zero", round_f32_to_tf32: bool = False):
        """The descriptor of all of ``tensor`` (strides in elements, torch or numpy)."""
        stride = getattr(tensor, "stride", None)
        strides = stride() if callable(stride) else tuple(s // tensor.itemsize
                                                          for s in tensor.strides)
        try:   # fields checked before: skip the dataclass machinery (tutorials call this a lot)
            # (torch.Size and stride() are tuples: equal to, and hashed as, the memo's keys)
            fields = _CHECKED.get((tensor.shape, strides, tuple(block_shape), tensor.dtype,
                                   padding))
        except (TypeError, AttributeError):
            fields = None
        if fields is None:
            return TensorDescriptor(tensor, tensor.shape, strides, block_shape, padding,
                                    round_f32_to_tf32)
        _check_address(tensor)
        desc = object.__new__(TensorDescriptor)
        desc.__dict__.update(base=tensor, shape=list(fields[0]), strides=list(fields[1]),
                             block_shape=list(fields[2]), padding=padding,
                             round_f32_to_tf32=round_f32_to_tf32)
        return desc
