"""``tl.dot_scaled``: matrix product of microscaled (OCP MX) operands.

An operand is e2m1 (two 4-bit values per uint8, the first in the low bits), e4m3 / e5m2
(float8e4nv / float8e5, or their bits as uint8), or bf16 / fp16; a scale is one e8m0 byte
(2**(byte - 127); 255 is NaN) per 32 (K / scale columns) consecutive K elements of a row of the
lhs or of a column of the rhs (given as ``[N, K // group]``, not transposed).

naiad emulates it on every backend, in the language, as Triton does on chips without native
MX instructions: each operand is widened to f32 and multiplied by its scale (both exact: the
formats have at most 3 mantissa bits and the scale is a power of two), then rounded to the
compute type -- fp16 when either format is fp16, else bf16 -- and ``tl.dot`` multiplies the
16-bit operands with an f32 accumulator (tensor cores on the GPUs). The rounding is exact except
where a scaled value leaves the compute type's range: beyond fp16's 65504 (inf, as Triton) or
below bf16's / fp16's smallest subnormal. e8m0 byte 0 is 2**-127 (0 once rounded to fp16,
as in Triton's interpreter).
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_bool, builtin, tensor, unwrap
from .semantics import describe

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
_STORAGE = {"e4m3": (irt.ScalarType("f8e4nv"), irt.u8), "e5m2": (irt.ScalarType("f8e5"), irt.u8),
            "bf16": (irt.bf16, irt.u16), "fp16": (irt.f16, irt.u16)}


def _e2m1_values(s, nibbles: tensor) -> tensor:
    """f32 values of 4-bit e2m1 codes (i32): sign, 2 exponent bits (bias 1), 1 mantissa bit."""
    exp = s.binary("and", s.binary("rshift", nibbles, 1), 3)
    man = s.binary("and", nibbles, 1)
    sub = s.binary("mul", s.cast(man, irt.f32), 0.5)                         # 0, 0.5
    # (2 + m) * 2**(e - 2) for e >= 1, 2**(e-2) built from its f32 bits
    pow2 = s.bitcast(s.binary("lshift", s.binary("add", exp, 125), 23), irt.f32)
    normal = s.binary("mul", s.cast(s.binary("add", man, 2), irt.f32), pow2)
    mag = s.select(s.compare("eq", exp, 0), sub, normal)
    negative = s.compare("ne", s.binary("and", nibbles, 8), 0)
    return s.select(negative, s.unary("neg", mag), mag)


def _unpack_e2m1(s, x: tensor, axis: int) -> tensor:
    """uint8 pairs -> f32 values, the packed ``axis`` (-1 or -2) doubling in length."""
    from .shape import join, permute, reshape

    if x.type.scalar != irt.u8:
        raise CompilationError(f"e2m1 operands must be packed as uint8, got {x.type.scalar}")
    bits = s.cast(x, irt.i32)
    lo = _e2m1_values(s, s.binary("and", bits, 15))
    hi = _e2m1_values(s, s.binary("rshift", bits, 4))
    pair = join(lo, hi, _semantic=s)                        # [..., R, C, 2]
    *lead, r, c = x.shape
    if axis == -1:
        return reshape(pair, [*lead, r, 2 * c], _semantic=s)
    order = list(range(len(lead))) + [len(lead), len(lead) + 2, len(lead) + 1]
    return reshape(permute(pair, order, _semantic=s), [*lead, 2 * r, c], _semantic=s)


def _widen(s, x, fmt: str, k_pack: bool, is_rhs: bool, what: str) -> tensor:
    x = unwrap(x)
    if not isinstance(x, tensor) or len(x.shape) not in (2, 3):
        raise CompilationError(f"tl.dot_scaled's {what} must be a 2-D (or batched 3-D) tensor, "
                               f"got {describe(x)}")
    if fmt == "e2m1":
        k_axis = -2 if is_rhs else -1
        other_axis = -1 if is_rhs else -2
        return _unpack_e2m1(s, x, k_axis if k_pack else other_axis)
    if not k_pack:
        raise CompilationError("only mxfp4 inputs can be packed along a dimension different "
                               f"than K ({what} is {fmt})")
    typed, bits = _STORAGE[fmt]
    elem = x.type.scalar
    if elem == bits:
        x = s.bitcast(x, typed)
    elif elem != typed:
        raise CompilationError(f"Unexpected dtype for {fmt}. Got {elem} ({what}: expected "
                               f"{typed} or its bits as {bits})")
    return s.cast(x, irt.f32)


def _scale_factors(s, scale: tensor, rows: int, k: int, what: str) -> tensor:
    """e8m0 bytes ``[..., rows, k // group]`` -> f32 factors ``[..., rows, k]``."""
    from .shape import expand_dims, reshape

    if scale.type.scalar not in (irt.u8, irt.i8):
        raise CompilationError(f"{what} must hold e8m0 bytes as uint8, got {scale.type.scalar}")
    *lead, r, groups = scale.shape
    if r != rows or groups == 0 or k % groups:
        raise CompilationError(f"{what} must be a tensor of shape [..., {rows}, {k // 32}] "
                               f"(one byte per group of K), got {list(scale.shape)}")
    byte = s.binary("and", s.cast(scale, irt.i32), 255)
    bits = s.binary("lshift", byte, 23)
    bits = s.select(s.compare("eq", byte, 0), s.to_tensor(0x00400000), bits)  # 2**-127
    f = s.bitcast(bits, irt.f32)
    f = s.select(s.compare("eq", byte, 255), s.to_tensor(float("nan")), f)
    group = k // groups
    f = s.broadcast_to(expand_dims(f, len(f.shape), _semantic=s), (*lead, rows, groups, group))
    return reshape(f, [*lead, rows, k], _semantic=s)


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=None,
               _semantic=None):
    """``(lhs * 2**lhs_scale) @ (rhs * 2**rhs_scale) + acc`` in f32 (see the module doc)."""
    from .linalg import dot
    from .shape import trans

    s = _semantic
    fa, fb = unwrap(lhs_format), unwrap(rhs_format)
    for what, f in (("lhs_format", fa), ("rhs_format", fb)):
        if f not in FORMATS:
            raise CompilationError(f"NYI: {what} {f!r}; tl.dot_scaled supports "
                                   f"{', '.join(FORMATS)}")
    od = unwrap(out_dtype)
    if od is not None and od.to_ir() != irt.f32:
        raise CompilationError("Only float32 is supported for out_dtype at the moment")
    as_bool(fast_math, "fast_math")
    a = _widen(s, lhs, fa, as_bool(lhs_k_pack, "lhs_k_pack"), False, "lhs")
    b = _widen(s, rhs, fb, as_bool(rhs_k_pack, "rhs_k_pack"), True, "rhs")
    if len(a.shape) != len(b.shape):
        raise CompilationError(f"Both inputs must be either 2D or 3D; (lhs: {list(a.shape)} vs "
                               f"rhs: {list(b.shape)})")
    *_, m, k = a.shape
    *_, k2, n = b.shape
    if k != k2:
        raise CompilationError(f"Reduction dimension should pack the same number of elements; "
                               f"(lhs: {list(unwrap(lhs).shape)} vs rhs: "
                               f"{list(unwrap(rhs).shape)})")
    for scale, is_rhs in ((unwrap(lhs_scale), False), (unwrap(rhs_scale), True)):
        if scale is None:
            continue
        scale = s.to_tensor(scale)
        if not scale.is_block():    # one scale byte for the whole operand
            scale = s.splat(scale, (n if is_rhs else m, 1))
        what = "rhs_scale" if is_rhs else "lhs_scale"
        factors = _scale_factors(s, scale, n if is_rhs else m, k, what)
        if is_rhs:
            order = list(range(len(factors.shape) - 2)) + [len(factors.shape) - 1,
                                                           len(factors.shape) - 2]
            b = s.binary("mul", b, trans(factors, order, _semantic=s))
        else:
            a = s.binary("mul", a, factors)
    compute = irt.f16 if "fp16" in (fa, fb) else irt.bf16
    a, b = s.cast(a, compute), s.cast(b, compute)
    return dot(a, b, acc, _semantic=s)
