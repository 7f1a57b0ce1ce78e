"""The five 8-bit float formats Triton names, and their host-side (numpy) conversions.

Each format is 1 sign bit, ``exp`` exponent bits with ``bias``, ``man`` mantissa bits, and one of
four special-value styles:

========  ===========  ===  =====================================  ======  ===============
IR name   Triton name  e/m  specials                               max     ml_dtypes
========  ===========  ===  =====================================  ======  ===============
f8e5      float8e5     5/2  IEEE: inf, NaN (exp all ones), -0      57344   float8_e5m2
f8e4nv    float8e4nv   4/3  "fn": NaN = S.1111.111 only, no inf    448     float8_e4m3fn
f8e4b8    float8e4b8   4/3  "fnuz": NaN = 0x80 only, no inf/-0    240     float8_e4m3fnuz
f8e5b16   float8e5b16  5/2  "fnuz" (bias 16)                       57344   float8_e5m2fnuz
f8e4b15   float8e4b15  4/3  none: every code finite, -0            1.875   (none)
========  ===========  ===  =====================================  ======  ===============

Conversion to a format rounds to nearest even. Values beyond the largest finite value go to
infinity in f8e5 (it has one) and *saturate* to the signed largest finite value in the others,
infinities included (as NVIDIA's ``cvt.rn.satfinite`` does). NaN converts to the format's NaN,
keeping its sign where the format has signed NaNs (f8e5: 0x7E | sign, f8e4nv: 0x7F | sign; the
fnuz formats: 0x80); float8e4b15 has no NaN, and NaN converts to its largest magnitude, signed
(0x7F | sign). Conversion from a format is
exact. The GPU lowering (``naiad.gpu.lower.float8``) implements the same rules with integer
arithmetic; the reference executor uses the functions below, which lean on ml_dtypes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Float8Format:
    name: str          # IR scalar type name
    triton: str        # Triton's dtype name (``tl.<triton>``'s str is ``fp8...``)
    exp: int
    man: int
    bias: int
    specials: str      # "ieee" | "fn" | "fnuz" | "none"
    ml_dtype: str | None

    @property
    def has_inf(self) -> bool:
        return self.specials == "ieee"

    @property
    def max_code(self) -> int:
        """The largest finite positive code."""
        return {"ieee": 0x7B, "fn": 0x7E, "fnuz": 0x7F, "none": 0x7F}[self.specials]

    @property
    def nan_code(self) -> int:
        """The code NaN converts to (float8e4b15 has no NaN: its largest value)."""
        return {"ieee": 0x7E, "fn": 0x7F, "fnuz": 0x80, "none": 0x7F}[self.specials]

    @property
    def max_value(self) -> float:
        e, m = self.max_code >> self.man, self.max_code & ((1 << self.man) - 1)
        return (1 + m / (1 << self.man)) * 2.0 ** (e - self.bias)

    @property
    def numpy_dtype(self) -> np.dtype:
        """How the reference stores the format: its ml_dtypes type, else raw bytes."""
        if self.ml_dtype is None:
            return np.dtype(np.uint8)
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, self.ml_dtype))


FORMATS: dict[str, Float8Format] = {f.name: f for f in (
    Float8Format("f8e5", "fp8e5", 5, 2, 15, "ieee", "float8_e5m2"),
    Float8Format("f8e4nv", "fp8e4nv", 4, 3, 7, "fn", "float8_e4m3fn"),
    Float8Format("f8e4b8", "fp8e4b8", 4, 3, 8, "fnuz", "float8_e4m3fnuz"),
    Float8Format("f8e5b16", "fp8e5b16", 5, 2, 16, "fnuz", "float8_e5m2fnuz"),
    Float8Format("f8e4b15", "fp8e4b15", 4, 3, 15, "none", None),
)}
NAMES = tuple(FORMATS)


def _wide(x: np.ndarray) -> np.ndarray:
    """f16/f32/f64 as they are; bfloat16 (and anything else) exactly as f32 or f64."""
    x = np.asarray(x)
    if x.dtype in (np.float16, np.float32, np.float64):
        return x
    return x.astype(np.float64 if x.dtype.itemsize > 4 else np.float32)


def encode(x, fmt: Float8Format) -> np.ndarray:
    """The float8 bits (uint8) of float array ``x``, by the rules in the module docstring."""
    x = _wide(x)
    if fmt.ml_dtype is not None:
        if not fmt.has_inf:
            x = np.clip(x, -fmt.max_value, fmt.max_value)  # saturate (NaN stays NaN)
        return x.astype(fmt.numpy_dtype).view(np.uint8)
    # float8e4b15 = float8_e4m3b11fnuz's positive codes scaled by 2**-4, with a sign bit
    import ml_dtypes

    mag = np.clip(np.abs(x.astype(np.float64)) * 16.0, 0.0, 30.0)
    code = np.nan_to_num(mag, nan=0.0).astype(ml_dtypes.float8_e4m3b11fnuz).view(np.uint8)
    code = code | (np.signbit(x).astype(np.uint8) << 7)
    return np.where(np.isnan(x), code | np.uint8(fmt.nan_code), code).astype(np.uint8)


def decode(bits, fmt: Float8Format) -> np.ndarray:
    """f32 values of float8 bits (uint8 array, or an array of the format's numpy dtype)."""
    bits = np.asarray(bits).view(np.uint8)
    if fmt.ml_dtype is not None:
        return bits.view(fmt.numpy_dtype).astype(np.float32)
    import ml_dtypes

    mag = (bits & np.uint8(0x7F)).view(ml_dtypes.float8_e4m3b11fnuz).astype(np.float32) / 16
    return np.where(bits & 0x80, -mag, mag).astype(np.float32)


def to_float8(x, fmt: Float8Format) -> np.ndarray:
    """``x`` converted to ``fmt``, as an array of the format's numpy dtype."""
    return encode(x, fmt).view(fmt.numpy_dtype)
