"""The generator's model of naiad's scalar types: kinds, widths and the promotion rules of
docs/language.md ("Type promotion"), so every generated expression has a known dtype."""
from __future__ import annotations

import numpy as np

INTS = ["int8", "int16", "int32", "int64"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
ALL = ["int1"] + INTS + UINTS + FLOATS

_WIDTH = {"int1": 1, "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
#: pointer type strings of naiad.compile's signature
SIG = {"int1": "i1", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
       "float64": "fp64"}


def width(d: str) -> int:
    return _WIDTH.get(d) or int(d.lstrip("uint"))


def is_float(d: str) -> bool:
    return d in FLOATS


def is_int(d: str) -> bool:
    """Integers other than int1."""
    return d in INTS or d in UINTS


def is_unsigned(d: str) -> bool:
    return d in UINTS


def kind(d: str) -> int:
    return 0 if d == "int1" else 2 if is_float(d) else 1


def sig(d: str) -> str:
    return SIG.get(d) or ("i" + d[3:] if d.startswith("int") else "u" + d[4:])


def promote(a: str, b: str) -> str:
    """Result dtype of a binary operator on two tensors (never Python numbers)."""
    if a == b:
        return a
    if kind(a) != kind(b):
        high = a if kind(a) > kind(b) else b
        return "float32" if high == "bfloat16" else high   # bf16 stays bf16 only with bf16
    if {a, b} == {"float16", "bfloat16"}:
        return "float16"
    if width(a) != width(b):
        return a if width(a) > width(b) else b
    return a if is_unsigned(a) else b


def sum_dtype(d: str) -> str:
    """Accumulation dtype of tl.sum / cumsum / cumprod (narrow integers go to (u)int32)."""
    if is_int(d) and width(d) < 32:
        return "uint32" if is_unsigned(d) else "int32"
    return d


def minmax_dtype(d: str) -> str:
    """tl.max/tl.min widen values narrower than 32 bits to float32/int32."""
    if width(d) < 32:
        return "float32" if is_float(d) else "int32"
    return d


def same_width(d: str) -> list[str]:
    """Dtypes a value of ``d`` can be bitcast to."""
    return [o for o in ALL if o != d and o != "int1" and width(o) == width(d)]


def numpy_dtype(d: str) -> np.dtype:
    if d == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if d == "int1":
        return np.dtype(np.bool_)
    return np.dtype(d)
