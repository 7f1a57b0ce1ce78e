"""An independent float8 oracle for the tests: each format's values by its definition,
nearest-even rounding by brute force over every code, and the overflow/NaN rules of
``naiad.ir.float8`` (written again here, not imported, so the product is checked against a
second reading of the rules)."""
import ml_dtypes
import numpy as np

FORMATS = {  # dtype: (exp bits, mantissa bits, bias, specials, ml_dtypes type or None)
    "float8e5": (5, 2, 15, "ieee", ml_dtypes.float8_e5m2),
    "float8e4nv": (4, 3, 7, "fn", ml_dtypes.float8_e4m3fn),
    "float8e4b8": (4, 3, 8, "fnuz", ml_dtypes.float8_e4m3fnuz),
    "float8e5b16": (5, 2, 16, "fnuz", ml_dtypes.float8_e5m2fnuz),
    "float8e4b15": (4, 3, 15, "none", None),
}
SIG = {"float8e5": "fp8e5", "float8e4nv": "fp8e4nv", "float8e4b8": "fp8e4b8",
       "float8e5b16": "fp8e5b16", "float8e4b15": "fp8e4b15"}
RNG = np.random.default_rng(8)


def value_of(code, fmt):
    """The value of a positive code by the format's definition (None for NaN/inf codes)."""
    e_bits, m_bits, bias, specials, _ = FORMATS[fmt]
    code = int(code)
    e, m = code >> m_bits, code & ((1 << m_bits) - 1)
    if specials == "ieee" and e == (1 << e_bits) - 1:
        return None
    if specials == "fn" and code == 0x7F:
        return None
    if e == 0:
        return m * 2.0 ** (1 - bias - m_bits)
    return (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)


def oracle(x, fmt):
    """Nearest code, ties to the even code; overflow by the format's rule; NaN by its rule."""
    _, _, _, specials, _ = FORMATS[fmt]
    codes = [c for c in range(0x80) if value_of(c, fmt) is not None]
    top = max(codes)
    table = [(c, value_of(c, fmt)) for c in codes]
    if specials == "ieee":
        table.append((0x7C, 2.0 * value_of(0x78, fmt)))  # inf rounds like 2**(emax+1)
    out = []
    for v in np.asarray(x, np.float64):
        sign = 0x80 if np.signbit(v) else 0
        if np.isnan(v):
            nan = {"ieee": 0x7E | sign, "fn": 0x7F | sign, "fnuz": 0x80, "none": 0x7F | sign}
            out.append(nan[specials])
            continue
        a = abs(v)
        if specials != "ieee":
            a = min(a, value_of(top, fmt))
        if specials == "ieee" and a >= table[-1][1]:  # at/beyond the value standing for inf
            code = 0x7C
        else:
            code = min(table, key=lambda cv: (abs(a - cv[1]), cv[0] & 1))[0]
        if specials == "fnuz" and code == 0:
            sign = 0
        out.append(code | sign)
    return np.array(out, np.uint8)


def inputs(fmt):
    values = sorted(v for v in (value_of(c, fmt) for c in range(0x80)) if v is not None)
    mids = [(a + b) / 2 for a, b in zip(values, values[1:])]
    top = values[-1]
    beside = [m * (1 + s * 2.0 ** -20) for m in mids for s in (-1, 1)]
    extra = [top * 1.02, top * 1.2, top * 4, 1e30, np.inf, np.nan, 0.0, -0.0, 1e-30,
             values[1] / 3, values[1] * 0.5, values[1] * 0.51]
    pos = np.array(values + mids + beside + extra + list(RNG.uniform(0, top, 64)), np.float64)
    return np.concatenate([pos, -pos])


def decode(bits, fmt):
    """f64 values of float8 codes by the format's definition (inf/NaN codes included)."""
    specials = FORMATS[fmt][3]
    out = []
    for c in np.asarray(bits).view(np.uint8):
        c = int(c)
        v = value_of(c & 0x7F, fmt)
        if v is None:
            v = np.inf if (specials == "ieee" and c & 0x7F == 0x7C) else np.nan
        if specials == "fnuz" and c == 0x80:
            v = np.nan
        out.append(-v if c & 0x80 else v)
    return np.array(out)
