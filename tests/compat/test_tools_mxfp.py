"""``naiad.tools.mxfp`` (``triton.tools.mxfp`` under ``naiad run``): E2M1 codes decode to the OCP
MX values, floats encode to the nearest code (ties to even, saturating), packing round-trips,
E8M0 scales are powers of two; checked from the format's definition, and against Triton's
own module where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="naiad.tools.mxfp works on torch tensors")

from naiad.tools.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402


def _e2m1(code: int) -> float:
    """The E2M1 value of a 4-bit code, from the format: bias 1, subnormal at exponent 0."""
    s, e, m = code >> 3, (code >> 1) & 3, code & 1
    mag = m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1)
    return -mag if s else mag


def test_every_code_decodes_to_its_value():
    t = MXFP4Tensor(size=16)
    t.data = torch.arange(16, dtype=torch.uint8)
    assert t.to(torch.float32).tolist() == [_e2m1(c) for c in range(16)]


def test_encoding_is_nearest_ties_to_even_saturating():
    values = torch.tensor([0.2, 0.25, 0.75, 1.25, 2.5, 3.5, 5.0, 7.0, 100.0, -0.74, -5.1, -0.0])
    # 0.25 ties 0 and 0.5 -> 0 (even code); 0.75 -> 1.0 (code 2, even) ; 1.25 -> 1.0 ; 2.5 -> 2 ;
    # 3.5 -> 4 ; 5 -> 4 ; saturates at 6
    want = [0.0, 0.0, 1.0, 1.0, 2.0, 4.0, 4.0, 6.0, 6.0, -0.5, -6.0, -0.0]
    got = MXFP4Tensor(values).to(torch.float32)
    assert got.tolist() == want
    assert torch.signbit(got[-1])


def test_random_round_trips_through_packing():
    torch.manual_seed(3)
    for shape, dim in [((6, 10), 1), ((7, 4), 0), ((5, 3), 1)]:
        t = MXFP4Tensor(size=shape).random()
        packed = t.to_packed_tensor(dim)
        assert packed.dtype == torch.uint8 and packed.shape[dim] == (shape[dim] + 1) // 2
        assert torch.equal(t.unpack_packed_tensor(packed, dim, shape), t.data)
        # even index in the low nibble
        first = packed.select(dim, 0) & 0xF
        assert torch.equal(first, t.data.select(dim, 0))


def test_scales_are_powers_of_two_and_nan():
    s = MXScaleTensor(torch.tensor([1.0, 3.0, 0.25, 0.0, -1.0, float("inf")]))
    assert s.data.tolist() == [127, 128, 125, 255, 255, 255]
    f = s.to(torch.float32)
    assert f[:3].tolist() == [1.0, 2.0, 0.25] and torch.isnan(f[3:]).all()
    r = MXScaleTensor(size=(64,)).random(low=0.5, high=8.0)
    vals = r.to(torch.float32).numpy()
    assert ((vals >= 0.5) & (vals <= 8.0)).all() and np.all(np.log2(vals) % 1 == 0)


def test_same_as_tritons_module_where_installed():
    mxfp = pytest.importorskip("triton.tools.mxfp", reason="Triton not installed")
    assert not mxfp.__name__.startswith("naiad") and "naiad" not in mxfp.__file__
    x = torch.randn(64, 33) * 3
    ours, theirs = MXFP4Tensor(x), mxfp.MXFP4Tensor(x)
    assert torch.equal(ours.to(torch.float32), theirs.to(torch.float32))
    assert torch.equal(ours.to_packed_tensor(1), theirs.to_packed_tensor(1))
    s = torch.rand(40) * 10
    assert torch.equal(MXScaleTensor(s).data, mxfp.MXScaleTensor(s).data)


def test_size_or_data_is_required():
    with pytest.raises(ValueError, match="data or size"):
        MXFP4Tensor()
