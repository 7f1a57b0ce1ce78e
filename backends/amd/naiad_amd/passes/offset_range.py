"""Integer ranges of i32 offset tensors, for deciding when a buffer instruction is legal.

``value_range(v)`` is an interval ``(lo, hi)`` that contains every element of ``v`` in every
program of every launch, or None when naiad cannot bound it. It follows the ops offsets are built
from: constants, ``make_range``, ``program_id`` (0 .. 2**31 - 1), integer arguments specialised
to 1, ``splat``/``broadcast``/``expand_dims``/``convert_layout``, ``add``/``sub``/``mul``,
``and`` with a non-negative operand, ``rem`` by a positive constant, ``min``/``max``. A result
outside the i32 range is None: the kernel's own i32 arithmetic would have wrapped there, so no
bound holds.
"""
from __future__ import annotations

from naiad.ir import Value, i32

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1

_SAME = ("splat", "broadcast", "expand_dims", "convert_layout")


def _fits(lo: int, hi: int):
    return (lo, hi) if I32_MIN <= lo and hi <= I32_MAX else None


class RangeAnalysis:
    """Memoised ranges for the values of one function (``fn`` gives the argument facts)."""

    def __init__(self, fn=None):
        self.memo: dict[Value, tuple[int, int] | None] = {}
        self.args: dict[Value, tuple[int, int]] = {}
        if fn is not None:
            for arg, attrs in zip(fn.args, fn.arg_attrs):
                if attrs.get("equal_to") == 1:
                    self.args[arg] = (1, 1)

    def __call__(self, v: Value):
        if v not in self.memo:
            self.memo[v] = None  # cycles (loop-carried values) stay unbounded
            self.memo[v] = self._compute(v)
        return self.memo[v]

    def _compute(self, v: Value):
        if v.type.scalar != i32:
            return None
        op = v.defining_op
        if op is None:
            return self.args.get(v)
        name, a = op.name, op.attrs
        if name == "constant":
            c = a.get("value")
            return (c, c) if isinstance(c, int) and not isinstance(c, bool) else None
        if name == "make_range":
            return _fits(a["start"], a["end"] - 1)
        if name == "program_id":
            return (0, I32_MAX)
        if name in _SAME:
            return self(op.operands[0])
        ranges = [self(x) for x in op.operands]
        if name in ("add", "sub", "mul", "min", "max") and None in ranges:
            return None
        if name == "add":
            (l1, h1), (l2, h2) = ranges
            return _fits(l1 + l2, h1 + h2)
        if name == "sub":
            (l1, h1), (l2, h2) = ranges
            return _fits(l1 - h2, h1 - l2)
        if name == "mul":
            (l1, h1), (l2, h2) = ranges
            products = (l1 * l2, l1 * h2, h1 * l2, h1 * h2)
            return _fits(min(products), max(products))
        if name in ("min", "max"):
            (l1, h1), (l2, h2) = ranges
            pick = min if name == "min" else max
            return (pick(l1, l2), pick(h1, h2))
        if name == "and":
            bounds = [r[1] for r in ranges if r is not None and r[0] >= 0]
            return (0, min(bounds)) if bounds else None
        if name == "rem":
            num, den = ranges
            if num is not None and num[0] >= 0 and den is not None and den[0] > 0:
                return (0, min(num[1], den[1] - 1))
            return None
        return None
