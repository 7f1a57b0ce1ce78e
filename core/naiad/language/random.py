"""Counter-based random numbers: Philox 4x32-10 (and 4x64 for 64-bit counters), bit for bit the
streams Triton's ``tl.rand``/``randint``/``randn`` produce for the same seed and offsets.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a counter
(c0..c3) and a key (k0, k1) through rounds of multiply-high/xor; each round bumps the key by the
Weyl constants. Triton keys it with the seed's low and high 32 bits and counts with the offset.
Built from the language's integer operators (``umulhi``, wrapping ``*``/``+``), so every backend
runs it without a lowering of its own.
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_int, builtin, tensor
from .math import cos, log, maximum, sin, sqrt, umulhi
from .semantics import describe

N_ROUNDS_DEFAULT = 10

# (round multipliers A, B; key increments A, B) per counter width
_CONSTANTS = {
    32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
    64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B),
}


def _int_tensor(s, x, what: str) -> tensor:
    x = s.to_tensor(x)
    if not x.type.scalar.is_int or x.type.scalar == irt.i1:
        raise CompilationError(f"{what} must be an integer, got {describe(x)}")
    return x


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """``n_rounds`` Philox rounds of counter (c0, c1, c2, c3) (uint32 or uint64) under key
    (k0, k1); returns the four words."""
    s = _semantic
    c0, c1, c2, c3 = (s.to_tensor(c) for c in (c0, c1, c2, c3))
    t = c0.type.scalar
    if t not in (irt.u32, irt.u64):
        raise CompilationError(f"philox_impl needs uint32 or uint64 counters, got {t}")
    mul_a, mul_b, key_a, key_b = _CONSTANTS[t.bitwidth]
    for _ in range(as_int(n_rounds, "n_rounds")):
        c0, c1, c2, c3 = (
            s.binary("xor", s.binary("xor", umulhi(mul_b, c2, _semantic=s), c1), k0),
            s.binary("mul", mul_b, c2),
            s.binary("xor", s.binary("xor", umulhi(mul_a, c0, _semantic=s), c3), k1),
            s.binary("mul", mul_a, c0),
        )
        k0 = s.binary("add", k0, key_a)
        k1 = s.binary("add", k1, key_b)
    return c0, c1, c2, c3


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """Philox of the counter (c0..c3) keyed by ``seed``: 32-bit counters use the 4x32 variant
    (key = the seed's low and high words), 64-bit ones the 4x64 variant (key = seed, 0)."""
    s = _semantic
    seed = s.cast(_int_tensor(s, seed, "the seed"), irt.u64)
    cs = [_int_tensor(s, c, "a philox counter") for c in (c0, c1, c2, c3)]
    width = cs[0].type.scalar.bitwidth
    if width == 32:
        t = irt.u32
        k0 = s.cast(s.binary("and", seed, 0xFFFFFFFF), t)
        k1 = s.cast(s.binary("and", s.binary("rshift", seed, 32), 0xFFFFFFFF), t)
    elif width == 64:
        t = irt.u64
        k0, k1 = seed, s.constant(0, t)
    else:
        raise CompilationError(f"philox needs 32- or 64-bit counters, got {cs[0].type}")
    cs = [s.bitcast(c, t) for c in cs]
    return philox_impl(*cs, k0, k1, n_rounds, _semantic=s)


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """Four blocks of random uint32 for a ``seed`` scalar and an ``offset`` block (the
    fastest entry point: one Philox evaluation per offset)."""
    s = _semantic
    offset = _int_tensor(s, offset, "the offset")
    lo = s.cast(offset, irt.u32)
    zero = s.binary("mul", lo, 0)
    hi = s.cast(s.binary("rshift", offset, 32), irt.u32) \
        if offset.type.scalar.bitwidth > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds, _semantic=s)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """One block of random uint32 (the first word of :func:`randint4x`)."""
    return randint4x(seed, offset, n_rounds, _semantic=_semantic)[0]


@builtin
def uint_to_uniform_float(x, _semantic=None):
    """A random 32/64-bit integer as a float32 uniform in [0, 1): its bits as a signed
    integer, folded to non-negative (``~x`` for negatives), times the largest scale that keeps
    the product below 1."""
    s = _semantic
    x = _int_tensor(s, x, "uint_to_uniform_float's input")
    width = x.type.scalar.bitwidth
    if width == 32:
        x, scale = s.bitcast(x, irt.i32), 4.6566127342e-10
    elif width == 64:
        x, scale = s.bitcast(x, irt.i64), 1.0842020432385337e-19
    else:
        raise CompilationError(f"uint_to_uniform_float needs a 32- or 64-bit integer, got "
                               f"{x.type}")
    x = s.select(s.compare("lt", x, 0), s.unary("invert", x), x)
    return s.binary("mul", x, scale)


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """A block of float32 uniform in [0, 1)."""
    s = _semantic
    return uint_to_uniform_float(randint(seed, offset, n_rounds, _semantic=s), _semantic=s)


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """Four blocks of float32 uniform in [0, 1)."""
    s = _semantic
    return tuple(uint_to_uniform_float(i, _semantic=s)
                 for i in randint4x(seed, offsets, n_rounds, _semantic=s))


@builtin
def pair_uniform_to_normal(u1, u2, _semantic=None):
    """Box-Muller: two uniforms in [0, 1) to two standard normals."""
    s = _semantic
    u1 = maximum(1.0e-7, u1, _semantic=s)
    theta = s.binary("mul", 6.283185307179586, u2)
    r = sqrt(s.binary("mul", -2.0, log(u1, _semantic=s)), _semantic=s)
    return (s.binary("mul", r, cos(theta, _semantic=s)),
            s.binary("mul", r, sin(theta, _semantic=s)))


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """A block of float32 drawn from N(0, 1)."""
    s = _semantic
    i1, i2, _, _ = randint4x(seed, offset, n_rounds, _semantic=s)
    u1 = uint_to_uniform_float(i1, _semantic=s)
    u2 = uint_to_uniform_float(i2, _semantic=s)
    return pair_uniform_to_normal(u1, u2, _semantic=s)[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _semantic=None):
    """Four blocks of float32 drawn from N(0, 1)."""
    s = _semantic
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds, _semantic=s)
    return (pair_uniform_to_normal(u1, u2, _semantic=s)
            + pair_uniform_to_normal(u3, u4, _semantic=s))
