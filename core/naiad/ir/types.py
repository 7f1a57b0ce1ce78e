"""Types of the tile IR: scalars, pointers and tensors (shape x element type, optional layout).

Types are immutable and hashable; they print as ``i32``, ``f16``, ``ptr<f32>``,
``tensor<64x32xf32>`` and ``tensor<64xptr<f32>, #blocked<...>>``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

#: scalar type names in promotion order within each kind
INT_NAMES = ("i1", "i8", "i16", "i32", "i64")
UINT_NAMES = ("u8", "u16", "u32", "u64")
FP8_NAMES = ("f8e5", "f8e4nv", "f8e4b8", "f8e5b16", "f8e4b15")  # see ir/float8.py
FLOAT_NAMES = ("f16", "bf16", "f32", "f64") + FP8_NAMES
SCALAR_NAMES = INT_NAMES + UINT_NAMES + FLOAT_NAMES


class Type:
    """Base class of IR types."""

    @property
    def scalar(self) -> "ScalarType | PointerType":
        """Element type for tensors, the type itself otherwise."""
        return self  # type: ignore[return-value]

    @property
    def is_tensor(self) -> bool:
        return False

    @property
    def is_pointer(self) -> bool:
        return False

    @property
    def shape(self) -> tuple[int, ...]:
        return ()


@dataclass(frozen=True)
class ScalarType(Type):
    name: str

    def __post_init__(self):
        if self.name not in SCALAR_NAMES:
            raise ValueError(f"unknown scalar type {self.name!r}")

    def __str__(self) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return self.name in INT_NAMES or self.name in UINT_NAMES

    @property
    def is_bool(self) -> bool:
        return self.name == "i1"

    @property
    def is_signed(self) -> bool:
        return self.name in INT_NAMES

    @property
    def is_unsigned(self) -> bool:
        return self.name in UINT_NAMES

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_NAMES

    @property
    def is_fp8(self) -> bool:
        return self.name in FP8_NAMES

    @property
    def bitwidth(self) -> int:
        if self.name == "i1":
            return 1
        if self.name == "bf16":
            return 16
        if self.name in FP8_NAMES:
            return 8
        return int(self.name[1:])

    @property
    def itemsize(self) -> int:
        return max(self.bitwidth // 8, 1)

    @cached_property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype_of(self.name)


@dataclass(frozen=True)
class PointerType(Type):
    pointee: Type
    address_space: int = 1

    def __str__(self) -> str:
        if self.address_space != 1:
            return f"ptr<{self.pointee}, {self.address_space}>"
        return f"ptr<{self.pointee}>"

    @property
    def is_pointer(self) -> bool:
        return True

    @property
    def is_int(self) -> bool:
        return False

    @property
    def is_float(self) -> bool:
        return False

    @property
    def bitwidth(self) -> int:
        return 64


@dataclass(frozen=True)
class TensorType(Type):
    shape_: tuple[int, ...]
    element: Type
    layout: object = None

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape_)
        lay = f", {self.layout}" if self.layout is not None else ""
        return f"tensor<{dims}{self.element}{lay}>"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.shape_

    @property
    def scalar(self):
        return self.element

    @property
    def is_tensor(self) -> bool:
        return True

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape_:
            n *= d
        return n

    def with_shape(self, shape) -> "TensorType":
        return TensorType(tuple(shape), self.element, None)

    def with_element(self, element: Type) -> "TensorType":
        return TensorType(self.shape_, element, self.layout)

    def with_layout(self, layout) -> "TensorType":
        return TensorType(self.shape_, self.element, layout)


def tensor(shape, element: Type, layout=None) -> TensorType:
    return TensorType(tuple(int(d) for d in shape), element, layout)


def with_element(t: Type, element: Type) -> Type:
    """``t`` with its element type replaced (scalar -> scalar, tensor -> same-shape tensor)."""
    return t.with_element(element) if isinstance(t, TensorType) else element


# Canonical instances.
i1, i8, i16, i32, i64 = (ScalarType(n) for n in INT_NAMES)
u8, u16, u32, u64 = (ScalarType(n) for n in UINT_NAMES)
f16, bf16, f32, f64 = (ScalarType(n) for n in FLOAT_NAMES[:4])


def numpy_dtype_of(name: str) -> np.dtype:
    """numpy dtype for a scalar type name (bfloat16 via ml_dtypes)."""
    if name == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name in FP8_NAMES:
        from .float8 import FORMATS

        return FORMATS[name].numpy_dtype
    table = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
             "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
             "f16": np.float16, "f32": np.float32, "f64": np.float64}
    return np.dtype(table[name])


def scalar_from_numpy(dtype) -> ScalarType:
    """Scalar type for a numpy dtype; raises TypeError for unsupported dtypes."""
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return bf16
    fp8 = {"float8_e5m2": "f8e5", "float8_e4m3fn": "f8e4nv", "float8_e4m3fnuz": "f8e4b8",
           "float8_e5m2fnuz": "f8e5b16"}.get(dtype.name)
    if fp8 is not None:
        return ScalarType(fp8)
    table = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
             "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
             "float16": "f16", "float32": "f32", "float64": "f64"}
    if dtype.name not in table:
        raise TypeError(f"naiad has no scalar type for numpy dtype {dtype}")
    return ScalarType(table[dtype.name])
