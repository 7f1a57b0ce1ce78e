"""The expectation for float8_kernels.abs_where_dot, shared by the reference and SIMT tests."""
import numpy as np

from float8_oracle import FORMATS, decode

FINITE_FORMATS = ["float8e5", "float8e4nv", "float8e4b8", "float8e5b16", "float8e4b15"]


def inputs(rng, fmt, fmt_b):
    codes = np.arange(256, dtype=np.uint8)
    def finite(f, n):
        c = rng.integers(0, 256, n).astype(np.uint8)
        ok = np.isfinite(decode(c, f))
        return np.where(ok, c, 0).astype(np.uint8).reshape(16, 16)
    return codes, finite(fmt, 256), finite(fmt_b, 256)


def check(fmt, fmt_b, codes, a, b, abs_out, pos_out, c_out):
    specials = FORMATS[fmt][3]
    want_abs = codes & 0x7F
    if specials == "fnuz":
        want_abs = np.where(codes == 0x80, 0x80, want_abs)
    np.testing.assert_array_equal(abs_out, want_abs.astype(np.uint8))
    vals = decode(codes, fmt)
    with np.errstate(invalid="ignore"):
        want_pos = np.where(vals > 0, codes, 0)
    np.testing.assert_array_equal(pos_out, want_pos.astype(np.uint8))
    want_c = decode(a.ravel(), fmt).reshape(16, 16) @ decode(b.ravel(), fmt_b).reshape(16, 16)
    bound = 16 * 2.0 ** -24 * (np.abs(decode(a.ravel(), fmt).reshape(16, 16))
                               @ np.abs(decode(b.ravel(), fmt_b).reshape(16, 16)))
    assert (np.abs(c_out - want_c) <= bound).all()
