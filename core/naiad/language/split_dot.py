"""Split-precision float32 dots: ``input_precision`` ``tf32x3``, ``bf16x3`` and ``bf16x6``.

Tensor cores multiply tf32 or bf16, not f32. Triton emulates a more accurate f32 product by
splitting each operand into a sum of narrower parts and adding the cross products that matter:

* ``tf32x3``: ``x = big + small`` with ``big`` x's leading tf32 bits (10 mantissa bits, the
  rest of the f32 masked off, so ``small = x - big`` is exact); ``small*big + big*small +
  big*big`` as three ``tf32`` dots;
* ``bf16x3``: ``x = hi + mid (+ rest)`` with ``hi = bf16(x)``, ``mid = bf16(x - hi)``;
  ``mid*hi + hi*mid + hi*hi`` as three bf16 dots (f32 accumulator);
* ``bf16x6``: also ``lo = bf16(x - hi - mid)``; ``lo*hi + hi*lo + mid*mid + mid*hi +
  hi*mid + hi*hi``.

The small terms are added first (into the caller's accumulator) so they are not lost against
the big one. The split is built here, in the tile IR every backend receives, so the reference
executor, the GPU backends and a vendor's plugin all compute the same decomposition, and
accelerate-matmul sees ordinary ``tf32`` / bf16 dots. An infinite operand gives NaN (its
``small`` part is inf - inf), as in Triton's emulation.
"""
from __future__ import annotations

from ..ir import types as irt

SPLIT_PRECISIONS = ("tf32x3", "bf16x3", "bf16x6")
#: f32 bits kept by the tf32 ``big`` part: sign, 8 exponent bits, 10 mantissa bits
TF32_MASK = 0xFFFFE000 - (1 << 32)   # as i32


def _tf32_parts(s, x):
    big = s.bitcast(s.binary("and", s.bitcast(x, irt.i32), TF32_MASK), irt.f32)
    return big, s.binary("sub", x, big)


def _bf16_parts(s, x, count: int):
    parts, rest = [], x
    for i in range(count):
        p = s.cast(rest, irt.bf16)
        parts.append(p)
        if i + 1 < count:
            rest = s.binary("sub", rest, s.cast(p, irt.f32))
    return parts


#: (a part, b part) index pairs of each scheme, smallest products first
_TERMS = {"tf32x3": ((1, 0), (0, 1), (0, 0)),
          "bf16x3": ((1, 0), (0, 1), (0, 0)),
          "bf16x6": ((2, 0), (0, 2), (1, 1), (1, 0), (0, 1), (0, 0))}


def split_dot(s, a, b, acc, precision: str, shape):
    """``a @ b + acc`` for f32 ``a``, ``b`` (``acc`` f32 or None) as the ``precision`` scheme's
    sum of narrower dots; returns the f32 result tensor."""
    if precision == "tf32x3":
        pa, pb = _tf32_parts(s, a), _tf32_parts(s, b)
        part_precision = "tf32"
    else:
        n = 3 if precision == "bf16x6" else 2
        pa, pb = _bf16_parts(s, a, n), _bf16_parts(s, b, n)
        part_precision = "ieee"
    c = acc if acc is not None else s.full(shape, 0, irt.f32)
    for i, j in _TERMS[precision]:
        c = s.op("dot", [pa[i], pb[j], c], irt.tensor(shape, irt.f32),
                 input_precision=part_precision)
    return c
