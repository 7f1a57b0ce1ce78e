"""Kernel-level data types (``tl.float32``, ``tl.pointer_type(...)``) and their mapping to IR types
and to Triton's signature strings (``"*fp32"``, ``"i32"``), shared by the frontend and the runtime.
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt

# Triton's dtype name -> (IR scalar name, signature string)
_SCALARS = {
    "int1": ("i1", "i1"), "int8": ("i8", "i8"), "int16": ("i16", "i16"),
    "int32": ("i32", "i32"), "int64": ("i64", "i64"),
    "uint8": ("u8", "u8"), "uint16": ("u16", "u16"), "uint32": ("u32", "u32"),
    "uint64": ("u64", "u64"),
    "fp16": ("f16", "fp16"), "bf16": ("bf16", "bf16"), "fp32": ("f32", "fp32"),
    "fp64": ("f64", "fp64"),
    "fp8e5": ("f8e5", "fp8e5"), "fp8e4nv": ("f8e4nv", "fp8e4nv"), "fp8e4b8": ("f8e4b8", "fp8e4b8"),
    "fp8e5b16": ("f8e5b16", "fp8e5b16"), "fp8e4b15": ("f8e4b15", "fp8e4b15"),
}
# the attribute name under which each dtype is exported from ``naiad.language``
_EXPORT = {"int1": "int1", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
           "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
           "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
           "fp8e5": "float8e5", "fp8e4nv": "float8e4nv", "fp8e4b8": "float8e4b8",
           "fp8e5b16": "float8e5b16", "fp8e4b15": "float8e4b15"}
# extra spellings accepted in signature strings
_SIG_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "bool": "i1", "u1": "i1",
                "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                "float8e5": "fp8e5", "float8e4nv": "fp8e4nv", "float8e4b8": "fp8e4b8",
                "float8e5b16": "fp8e5b16", "float8e4b15": "fp8e4b15"}


class dtype:
    """A scalar element type of the kernel language (Triton's ``tl.dtype``)."""

    __slots__ = ("name",)

    # Triton's name lists (tests build dtypes from them: ``map(tl.dtype, tl.dtype.SINT_TYPES)``)
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    FP8_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16"]
    FP_TYPES = FP8_TYPES + STANDARD_FP_TYPES

    def __init__(self, name: str):
        if name not in _SCALARS:
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name

    # -- IR and signature mapping --------------------------------------------------------------
    def to_ir(self) -> irt.Type:
        return irt.ScalarType(_SCALARS[self.name][0])

    @property
    def signature(self) -> str:
        return _SCALARS[self.name][1]

    # -- Triton-compatible queries ------------------------------------------------------------
    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_floating(self) -> bool:
        return self.name in self.FP_TYPES

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_fp8(self) -> bool:
        return self.name in self.FP8_TYPES

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e4b8(self) -> bool:
        return self.name == "fp8e4b8"

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp8e5b16(self) -> bool:
        return self.name == "fp8e5b16"

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_int(self) -> bool:
        return self.name.startswith(("int", "uint"))

    def is_int_signed(self) -> bool:
        return self.name.startswith("int")

    def is_int_unsigned(self) -> bool:
        return self.name.startswith("uint")

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        return self.to_ir().bitwidth

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self) -> int:
        if self.is_fp8():
            return _fp8_format(self).man
        return {"fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}[self.name]

    @property
    def exponent_bias(self) -> int:
        if self.is_fp8():
            return _fp8_format(self).bias
        return {"fp16": 15, "bf16": 127, "fp32": 127, "fp64": 1023}[self.name]

    @property
    def scalar(self) -> "dtype":
        return self

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("dtype", self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.{_EXPORT[self.name]}"


def _fp8_format(d: dtype):
    from ..ir.float8 import FORMATS

    return FORMATS[_SCALARS[d.name][0]]


class pointer_type(dtype):
    """Pointer to ``element_ty`` in ``address_space`` (1 = global memory)."""

    __slots__ = ("element_ty", "address_space")

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype):
            raise CompilationError(f"pointer_type needs a dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = int(address_space)
        self.name = f"pointer<{element_ty}>"

    def to_ir(self) -> irt.Type:
        return irt.PointerType(self.element_ty.to_ir(), self.address_space)

    @property
    def signature(self) -> str:
        return "*" + self.element_ty.signature

    def is_ptr(self) -> bool:
        return True

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    def __eq__(self, other) -> bool:
        return (isinstance(other, pointer_type) and other.element_ty == self.element_ty
                and other.address_space == self.address_space)

    def __hash__(self) -> int:
        return hash(("pointer", self.element_ty, self.address_space))

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r})"


#: every scalar dtype by its exported name (``"float32"`` -> ``tl.float32``)
SCALAR_DTYPES: dict[str, dtype] = {_EXPORT[n]: dtype(n) for n in _SCALARS}
_BY_IR = {d.to_ir(): d for d in SCALAR_DTYPES.values()}


def dtype_of_ir(t: irt.Type) -> dtype:
    """The language dtype of an IR scalar or pointer type (tensors: their element)."""
    t = t.scalar
    if isinstance(t, irt.PointerType):
        return pointer_type(dtype_of_ir(t.pointee), t.address_space)
    try:
        return _BY_IR[t]
    except KeyError:
        raise CompilationError(f"no language dtype for IR type {t}") from None


def to_ir_type(sig: str) -> irt.Type:
    """IR type of a Triton signature string: ``"*fp32"`` -> ``ptr<f32>``, ``"i32"`` -> ``i32``."""
    if not isinstance(sig, str):
        raise CompilationError(f"a signature type must be a string like '*fp32' or 'i32', "
                               f"got {sig!r}")
    text = sig.strip()
    if text.startswith("*"):
        return irt.PointerType(to_ir_type(text[1:]))
    name = _SIG_ALIASES.get(text, text)
    for ir_name, sig_name in _SCALARS.values():
        if sig_name == name:
            return irt.ScalarType(ir_name)
    known = ", ".join(s for _, s in _SCALARS.values())
    raise CompilationError(f"unknown signature type {sig!r}; expected one of {known} "
                           "(prefix '*' for a pointer)")


def from_ir_type(t: irt.Type) -> str:
    """Triton signature string of an IR scalar or pointer type (inverse of :func:`to_ir_type`)."""
    if isinstance(t, irt.PointerType):
        return "*" + from_ir_type(t.pointee)
    if isinstance(t, irt.ScalarType):
        return _BY_IR[t].signature
    raise CompilationError(f"IR type {t} has no signature string (only scalars and pointers)")


def dtype_of_signature(sig: str) -> dtype:
    return dtype_of_ir(to_ir_type(sig))
