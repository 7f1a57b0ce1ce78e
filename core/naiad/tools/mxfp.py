"""Host-side microscaling formats (OCP MX spec), as ``triton.tools.mxfp`` offers them to scripts
(tutorial 10): ``MXFP4Tensor`` holds FP4 E2M1 codes (one per uint8, low 4 bits) and packs two per
byte; ``MXScaleTensor`` holds E8M0 block scales (a biased power of two; 255 is NaN). Torch
tensors in and out; torch is imported by the caller's use, never by naiad itself.
"""
from __future__ import annotations

#: E2M1 magnitudes of codes 0..7 (sign is bit 3): subnormal 0, 0.5; then 1, 1.5, 2, 3, 4, 6
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E8M0_BIAS = 127
E8M0_NAN = 255


def _torch():
    import torch

    return torch


def _shape(size) -> tuple:
    return tuple(size) if isinstance(size, (tuple, list)) else (size,)


class _Codes:
    """Codes built from float ``data`` or ``size`` (then filled by ``random``)."""

    def __init__(self, data=None, size=None, device=None):
        self.device = device
        if data is not None:
            if not isinstance(data, _torch().Tensor):
                raise TypeError(f"{type(self).__name__}: data must be a torch tensor, got "
                                f"{type(data).__name__}")
            self.device = data.device
            self.data = self._from_float(data)
            self.size = tuple(data.shape)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("Either parameter data or size must be provided")

    @staticmethod
    def _check_float32(dtype) -> None:
        if dtype != _torch().float32:
            raise TypeError(f"converts to torch.float32 only, not {dtype}")


class MXFP4Tensor(_Codes):
    """FP4 E2M1 values as codes ``s e e m`` in uint8."""

    def random(self):
        """Uniformly random codes (every E2M1 value, both zeros)."""
        torch = _torch()
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        self._check_float32(dtype)
        torch = _torch()
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        magnitude = table[(self.data & 0x7).long()]
        return torch.where((self.data & 0x8) != 0, -magnitude, magnitude)

    def _from_float(self, values):
        """Nearest E2M1 code, ties to the even code, magnitudes above 6 saturating to 6."""
        torch = _torch()
        values = values.float()
        if torch.isnan(values).any():
            raise ValueError("MXFP4Tensor: E2M1 has no NaN encoding")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=values.device)
        mag = values.abs().clamp(max=6.0).unsqueeze(-1)
        dist = (mag - table).abs()
        best = dist.min(dim=-1, keepdim=True).values
        # among equally near codes take the even one (its mantissa bit is 0)
        candidates = (dist == best) & (torch.arange(8, device=values.device) % 2 == 0)
        code = torch.where(candidates.any(-1), candidates.float().argmax(-1),
                           (dist == best).float().argmax(-1)).to(torch.uint8)
        sign = (torch.signbit(values)).to(torch.uint8) << 3
        return sign | code

    def to_packed_tensor(self, dim: int):
        """Two codes per uint8 along ``dim`` (even index in the low nibble); an odd length is
        padded with a zero code."""
        torch = _torch()
        data = self.data
        if not 0 <= dim < data.ndim:
            raise ValueError(f"dim {dim} is not a dimension of a {data.ndim}-D tensor")
        if data.size(dim) % 2:
            pad = list(data.shape)
            pad[dim] = 1
            data = torch.cat([data, torch.zeros(pad, dtype=data.dtype, device=data.device)], dim)
        pairs = data.unflatten(dim, (-1, 2))
        low, high = pairs.select(dim + 1, 0), pairs.select(dim + 1, 1)
        return (high << 4) | low

    def unpack_packed_tensor(self, packed_tensor, dim: int, original_shape):
        """The codes of ``to_packed_tensor``'s result, trimmed to ``original_shape``."""
        torch = _torch()
        both = torch.stack((packed_tensor & 0xF, (packed_tensor >> 4) & 0xF), dim=dim + 1)
        data = both.flatten(dim, dim + 1)
        return data.narrow(dim, 0, original_shape[dim]).to(torch.uint8)


def fp8e8m0_to_float32(scale):
    """E8M0 bytes as float32: ``2**(e - 127)`` (e = 0 gives 2**-127, a subnormal); 255 is NaN."""
    torch = _torch()
    e = scale.view(torch.uint8).to(torch.int32)
    bits = torch.where(e == 0, torch.full_like(e, 0x00400000), e << 23)
    bits = torch.where(e == E8M0_NAN, torch.full_like(e, 0x7FC00000), bits)
    return bits.view(torch.float32)


class MXScaleTensor(_Codes):
    """E8M0 scales as uint8 biased exponents."""

    def random(self, low=None, high=None):
        """Random exponents, NaN excluded; ``low``/``high`` bound the scale values."""
        import math

        torch = _torch()
        lo = 0 if low is None else max(0, int(math.floor(math.log2(low))) + E8M0_BIAS)
        hi = 254 if high is None else min(254, max(0, int(math.floor(math.log2(high)))
                                                   + E8M0_BIAS))
        if lo > hi:
            raise ValueError("Low must be less than or equal to high")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        self._check_float32(dtype)
        return fp8e8m0_to_float32(self.data)

    def _from_float(self, values):
        """``floor(log2(v)) + 127`` clamped to 0..254; v <= 0, NaN and inf become NaN (255)."""
        torch = _torch()
        values = values.float()
        bad = torch.isnan(values) | torch.isinf(values) | (values <= 0)
        safe = torch.where(bad, torch.ones_like(values), values)
        e = (torch.floor(torch.log2(safe)) + E8M0_BIAS).to(torch.int32).clamp(0, 254)
        return torch.where(bad, torch.full_like(e, E8M0_NAN), e).to(torch.uint8)
