"""Axis info: what is known, per value and per dimension, about the integers and pointers a kernel
computes — the facts that let a backend vectorize and coalesce memory accesses.

For each dimension ``d`` of a value (a scalar counts as one dimension of size 1):

* **contiguity** ``c``: along ``d`` the elements come in runs of ``c`` (starting at indices that are
  multiples of ``c``) whose values increase by exactly 1;
* **divisibility** ``D``: the largest power of two known to divide the first element of every such
  run (every element when ``c == 1``), capped at ``MAX_DIVISIBILITY``;
* **constancy** ``k``: along ``d`` the elements come in runs of ``k`` equal values.

Pointers count in **elements** of their pointee: a pointer tensor with contiguity 4 addresses 4
consecutive elements, and divisibility 4 means the run's first address is a multiple of 4 elements;
its byte alignment is ``divisibility * itemsize`` (see :meth:`AxisInfo.alignment_bytes`). Facts
given from outside are in bytes for pointers, as the runtime measures addresses:
``Function.arg_attrs[i] = {"divisibility": 16}`` on a ``ptr<f32>`` argument becomes divisibility 4.
The same holds for the ``divisibility`` attribute of ``hint`` ops on pointers.

Besides the three tuples, an :class:`Info` records a known integer ``constant`` and whether every
element is ``non_negative``; both sharpen ``div``/``rem``/``cmp`` rules. Like Triton's analysis, the
transfer functions assume index arithmetic does not overflow its type.

``assume`` ops (``tl.assume``) add facts the rules cannot prove: ``x >= c`` / ``x > c`` (either
operand order, ``c`` a constant >= 0 -- or > -1 when strict -- or any value known non-negative)
and ``&`` of such comparisons make ``x`` ``non_negative``. A fact holds from the ``assume``
onwards: for the ops after it in its block, in their regions, and -- where ``x`` is defined in that
block -- for ``x`` itself in the final result. Uses of ``x`` before the ``assume`` are not
sharpened (the promise is only known to hold once the ``assume`` is reached).

Entry point: :func:`analyze` (a function) -> :class:`AxisInfo`; ``info.get(value)`` gives its
:class:`Info`. Extra ops (GPU-IR ops) teach the analysis with :func:`register_transfer`.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Callable

from ..ir.core import Block, Function, Operation, Value
from ..ir.ops import MATH_UNARY
from ..ir.types import PointerType, ScalarType, Type
from .rewrite import is_terminator
from .scalar_eval import normalize, wrap_int

MAX_DIVISIBILITY = 1 << 30
MAX_LOOP_ITERATIONS = 8


def pow2_divisor(n: int) -> int:
    """Largest power of two dividing ``n`` (``MAX_DIVISIBILITY`` for 0), capped."""
    n = abs(int(n))
    if n == 0:
        return MAX_DIVISIBILITY
    return min(n & -n, MAX_DIVISIBILITY)


@dataclass(frozen=True)
class Info:
    """Facts about one value, one entry per dimension (see the module docstring)."""
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None
    non_negative: bool = False

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def __str__(self) -> str:
        text = (f"contiguity={list(self.contiguity)}, divisibility={list(self.divisibility)}, "
                f"constancy={list(self.constancy)}")
        if self.constant is not None:
            text += f", constant={self.constant}"
        if self.non_negative:
            text += ", non_negative"
        return text


def dims(t: Type) -> tuple[int, ...]:
    """The dimensions axis info tracks for type ``t``: its shape, ``(1,)`` for scalars."""
    return tuple(t.shape) or (1,)


def pessimistic(t: Type) -> Info:
    n = len(dims(t))
    return Info((1,) * n, (1,) * n, (1,) * n)


def _itemsize(t: Type) -> int:
    st = t.scalar
    if isinstance(st, PointerType):
        pointee = st.pointee
        return pointee.itemsize if isinstance(pointee, ScalarType) else 8
    return st.itemsize if isinstance(st, ScalarType) else 1


def bytes_to_elements(div_bytes: int, t: Type) -> int:
    """Byte divisibility of a pointer -> element divisibility (1 when not element-aligned)."""
    size = _itemsize(t)
    d = pow2_divisor(div_bytes)
    return d // size if d % size == 0 and d >= size else 1


# -- lattice helpers -----------------------------------------------------------------------------
def elem_div(info: Info, d: int) -> int:
    """Divisibility of every element along dim ``d`` (run starts only when contiguity > 1)."""
    if info.constant is not None:
        return pow2_divisor(info.constant)
    return info.divisibility[d] if info.contiguity[d] == 1 else 1


def every_element_div(info: Info) -> int:
    """Power of two dividing every element of the value."""
    if info.constant is not None:
        return pow2_divisor(info.constant)
    best = 1
    for c, dv in zip(info.contiguity, info.divisibility):
        if c == 1:
            best = max(best, dv)
    return best


def regroup(div: int, contig: int, g: int) -> int:
    """Divisibility of run starts when runs of ``contig`` are cut into runs of ``g``."""
    if contig == 1 or g == contig:
        return div
    if g < contig and contig % g == 0:
        return min(div, pow2_divisor(g))
    return 1


def join(a: Info, b: Info) -> Info:
    """What holds for a value that is either ``a`` or ``b`` (control-flow merge)."""
    c, dv, k = [], [], []
    for i in range(a.rank):
        g = gcd(a.contiguity[i], b.contiguity[i])
        c.append(g)
        dv.append(min(regroup(a.divisibility[i], a.contiguity[i], g),
                      regroup(b.divisibility[i], b.contiguity[i], g)))
        k.append(gcd(a.constancy[i], b.constancy[i]))
    const = a.constant if a.constant == b.constant else None
    return Info(tuple(c), tuple(dv), tuple(k), const, a.non_negative and b.non_negative)


def _finish(info: Info, t: Type) -> Info:
    """Clamp to the type's dimensions; unsigned values are non-negative."""
    ds = dims(t)
    if info.rank != len(ds):
        return pessimistic(t)
    c = tuple(max(1, min(x, n)) for x, n in zip(info.contiguity, ds))
    k = tuple(max(1, min(x, n)) for x, n in zip(info.constancy, ds))
    dv = tuple(max(1, min(x, MAX_DIVISIBILITY)) for x in info.divisibility)
    st = t.scalar
    nonneg = info.non_negative or (isinstance(st, ScalarType) and (st.is_unsigned or st.is_bool))
    const = info.constant
    if const is not None and isinstance(st, ScalarType) and st.is_int:
        const = int(wrap_int(const, st))
        nonneg = nonneg or const >= 0
    elif not (isinstance(st, ScalarType) and st.is_int):
        const = None
    return Info(c, dv, k, const, nonneg)


def _uniform(t: Type, div: int, constant=None, non_negative=False) -> Info:
    """A value with all elements equal (a scalar, a splat, a constant)."""
    ds = dims(t)
    n = len(ds)
    return Info((1,) * n, (div,) * n, ds if t.is_tensor else (1,) * n, constant, non_negative)


# -- transfer functions ---------------------------------------------------------------------------
Transfer = Callable[[Operation, list[Info]], list[Info]]
_TRANSFER: dict[str, Transfer] = {}


def register_transfer(op_name: str, fn: Transfer) -> None:
    """Teach the analysis op ``op_name``: ``fn(op, operand_infos) -> result infos``."""
    _TRANSFER[op_name] = fn


def _rule(*names):
    def deco(fn):
        for n in names:
            _TRANSFER[n] = fn
        return fn
    return deco


def _is_int_type(v: Value) -> bool:
    st = v.type.scalar
    return isinstance(st, ScalarType) and st.is_int


@_rule("constant")
def _constant(op, ins):
    t = op.result.type
    st = t.scalar
    value = normalize(op.attrs.get("value"), t)
    if isinstance(st, ScalarType) and st.is_int and value is not None:
        v = int(value)
        return [_uniform(t, pow2_divisor(v), v, v >= 0)]
    return [_uniform(t, 1)]


@_rule("make_range")
def _make_range(op, ins):
    start, end = int(op.attrs["start"]), int(op.attrs["end"])
    return [Info((end - start,), (pow2_divisor(start),), (1,), None, start >= 0)]


@_rule("program_id", "num_programs")
def _ids(op, ins):
    return [Info((1,), (1,), (1,), None, True)]


@_rule("splat")
def _splat(op, ins):
    (a,) = ins
    return [_uniform(op.result.type, every_element_div(a), a.constant, a.non_negative)]


@_rule("broadcast")
def _broadcast(op, ins):
    (a,) = ins
    src, dst = dims(op.operands[0].type), dims(op.result.type)
    c, dv, k = list(a.contiguity), list(a.divisibility), list(a.constancy)
    for i, (s, n) in enumerate(zip(src, dst)):
        if s == 1 and n != 1:
            c[i], k[i] = 1, n
    return [Info(tuple(c), tuple(dv), tuple(k), a.constant, a.non_negative)]


@_rule("expand_dims")
def _expand_dims(op, ins):
    (a,) = ins
    axis = int(op.attrs["axis"])
    if axis < 0:
        axis += len(dims(op.result.type))
    ed = every_element_div(a)
    c, dv, k = list(a.contiguity), list(a.divisibility), list(a.constancy)
    if not op.operands[0].type.is_tensor:
        c, dv, k = [], [], []
    c.insert(axis, 1)
    dv.insert(axis, ed)
    k.insert(axis, 1)
    return [Info(tuple(c), tuple(dv), tuple(k), a.constant, a.non_negative)]


@_rule("reshape")
def _reshape(op, ins):
    (a,) = ins
    src, dst = dims(op.operands[0].type), dims(op.result.type)
    if src == dst:
        return [a]
    ed = every_element_div(a)
    if [n for n in src if n != 1] == [n for n in dst if n != 1]:
        # only size-1 dimensions come or go: carry the others' facts over in order
        kept = [i for i, n in enumerate(src) if n != 1]
        c, dv, k = [], [], []
        j = 0
        for n in dst:
            if n == 1:
                c.append(1), dv.append(ed), k.append(1)
            else:
                i = kept[j]
                j += 1
                c.append(a.contiguity[i]), dv.append(a.divisibility[i]), k.append(a.constancy[i])
        return [Info(tuple(c), tuple(dv), tuple(k), a.constant, a.non_negative)]
    n = len(dst)
    if all(kk == s for kk, s in zip(a.constancy, src)):
        return [Info((1,) * n, (ed,) * n, dst, a.constant, a.non_negative)]
    return [Info((1,) * n, (ed,) * n, (1,) * n, a.constant, a.non_negative)]


@_rule("trans")
def _trans(op, ins):
    (a,) = ins
    order = [int(i) for i in op.attrs["order"]]
    return [Info(tuple(a.contiguity[i] for i in order), tuple(a.divisibility[i] for i in order),
                 tuple(a.constancy[i] for i in order), a.constant, a.non_negative)]


def _const_binop(op, a: Info, b: Info, fn):
    if a.constant is None or b.constant is None:
        return None
    try:
        return fn(a.constant, b.constant)
    except (ZeroDivisionError, ValueError):
        return None


@_rule("add", "addptr")
def _add(op, ins):
    a, b = ins
    c, dv, k = [], [], []
    for i in range(a.rank):
        g = max(gcd(a.contiguity[i], b.constancy[i]), gcd(a.constancy[i], b.contiguity[i]))
        c.append(g)
        dv.append(min(regroup(a.divisibility[i], a.contiguity[i], g),
                      regroup(b.divisibility[i], b.contiguity[i], g)))
        k.append(gcd(a.constancy[i], b.constancy[i]))
    if op.name == "addptr":
        return [Info(tuple(c), tuple(dv), tuple(k))]
    const = _const_binop(op, a, b, lambda x, y: x + y)
    return [Info(tuple(c), tuple(dv), tuple(k), const, a.non_negative and b.non_negative)]


@_rule("sub")
def _sub(op, ins):
    a, b = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    c, dv, k = [], [], []
    for i in range(a.rank):
        g = gcd(a.contiguity[i], b.constancy[i])
        c.append(g)
        dv.append(min(regroup(a.divisibility[i], a.contiguity[i], g),
                      regroup(b.divisibility[i], b.contiguity[i], g)))
        kk = gcd(a.constancy[i], b.constancy[i])
        if a.contiguity[i] > 1 and b.contiguity[i] > 1:  # (s + j) - (t + j) is constant
            kk = max(kk, gcd(a.contiguity[i], b.contiguity[i]))
        k.append(kk)
    const = _const_binop(op, a, b, lambda x, y: x - y)
    nonneg = b.constant == 0 and a.non_negative
    return [Info(tuple(c), tuple(dv), tuple(k), const, nonneg)]


@_rule("mul")
def _mul(op, ins):
    a, b = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    if a.constant == 1:
        return [b]
    if b.constant == 1:
        return [a]
    n = a.rank
    dv = tuple(min(MAX_DIVISIBILITY, elem_div(a, i) * elem_div(b, i)) for i in range(n))
    k = tuple(gcd(a.constancy[i], b.constancy[i]) for i in range(n))
    const = _const_binop(op, a, b, lambda x, y: x * y)
    return [Info((1,) * n, dv, k, const, a.non_negative and b.non_negative)]


def _is_pow2(m) -> bool:
    return m is not None and m > 0 and (m & (m - 1)) == 0


def _divisor_facts(b: Info, rank: int) -> list[tuple[int, int]]:
    """Per dim: (power of two dividing every divisor element, constancy of the divisor)."""
    return [(elem_div(b, i), b.constancy[i]) for i in range(rank)]


def _aligned_block(a: Info, i: int, div_y: int, k_y: int) -> tuple[int, int]:
    """For runs of consecutive ``a`` values split at multiples of a divisor ``y`` (every ``y``
    divisible by ``div_y``, constant over ``k_y``): the largest block ``g`` of consecutive
    values, starting at a multiple of ``g``, that no multiple of ``y`` splits, and the
    divisibility of the block starts. ``g == 1`` when nothing is known."""
    ci = a.contiguity[i]
    if ci == 1:
        return 1, a.divisibility[i]
    g = pow2_divisor(gcd(ci, gcd(div_y, k_y)))
    start = regroup(a.divisibility[i], ci, g)
    if g > 1 and start % g == 0:
        return g, start
    return 1, 1


def _quotient_runs(a: Info, facts, aligned: bool, exact_by: int | None) -> Info:
    """``a / y``: blocks that no multiple of ``y`` splits give one quotient (needs floor-like
    division: non-negative dividends for truncation). ``exact_by``: a constant power-of-two
    divisor, for which quotients of multiples keep divisibility."""
    c, dv, k = [], [], []
    for i, (div_y, k_y) in enumerate(facts):
        g, start = _aligned_block(a, i, div_y, k_y) if aligned else (1, 1)
        c.append(1)
        if g > 1:
            k.append(max(g, gcd(a.constancy[i], k_y)))
            m = exact_by
            dv.append(start // m if m and g == a.contiguity[i] == m and start % m == 0 else 1)
        else:
            k.append(gcd(a.constancy[i], k_y))
            ed = elem_div(a, i)
            dv.append(ed // exact_by if exact_by and ed % exact_by == 0 else 1)
    return Info(tuple(c), tuple(dv), tuple(k), None, a.non_negative)


def _remainder_runs(a: Info, facts, aligned: bool) -> Info:
    """``a % y`` (or floor-mod when ``aligned`` regardless of sign): inside a block no
    multiple of ``y`` splits, the remainders stay consecutive."""
    c, dv, k = [], [], []
    for i, (div_y, k_y) in enumerate(facts):
        g, start = _aligned_block(a, i, div_y, k_y) if aligned else (1, 1)
        if g > 1:
            c.append(g)
            dv.append(min(start, div_y))
            k.append(1)
        else:
            c.append(1)
            dv.append(min(elem_div(a, i), div_y))
            k.append(gcd(a.constancy[i], k_y))
    return Info(tuple(c), tuple(dv), tuple(k))


@_rule("div")
def _div(op, ins):
    a, b = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    const = _const_binop(op, a, b, _trunc_div)
    if b.constant == 1:
        return [a]
    m = b.constant if _is_pow2(b.constant) else None
    info = _quotient_runs(a, _divisor_facts(b, a.rank), a.non_negative, m)
    nonneg = a.non_negative and (b.non_negative or (b.constant or 0) > 0)
    return [Info(info.contiguity, info.divisibility, info.constancy, const, nonneg)]


def _trunc_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@_rule("rem")
def _rem(op, ins):
    a, b = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    const = _const_binop(op, a, b, lambda x, y: x - _trunc_div(x, y) * y)
    info = _remainder_runs(a, _divisor_facts(b, a.rank), a.non_negative)
    return [Info(info.contiguity, info.divisibility, info.constancy, const, a.non_negative)]


@_rule("shl")
def _shl(op, ins):
    a, b = ins
    s = b.constant
    if s == 0:
        return [a]
    n = a.rank
    k = tuple(gcd(a.constancy[i], b.constancy[i]) for i in range(n))
    if s is None or s < 0 or s >= 63:
        return [Info((1,) * n, (1,) * n, k)]
    dv = tuple(min(MAX_DIVISIBILITY, elem_div(a, i) << s) for i in range(n))
    const = a.constant << s if a.constant is not None else None
    return [Info((1,) * n, dv, k, const, a.non_negative)]


@_rule("shr")
def _shr(op, ins):
    a, b = ins
    s = b.constant
    if s == 0:
        return [a]
    if s is None or s < 0 or s >= 63:
        return [_constancy_only(op, ins)]
    m = 1 << s  # shr is floor division: blocks aligned to multiples of 2^s share a quotient
    info = _quotient_runs(a, [(m, d) for d in dims(op.results[0].type)], True, m)
    const = a.constant >> s if a.constant is not None else None
    return [Info(info.contiguity, info.divisibility, info.constancy, const, a.non_negative)]


@_rule("and")
def _and(op, ins):
    a, b = ins
    for x, y in ((a, b), (b, a)):
        if y.constant is not None and y.constant > 0 and _is_pow2(y.constant + 1):
            m = y.constant + 1  # x & (m-1) is x floor-mod m, for either sign of x
            info = _remainder_runs(x, [(m, d) for d in dims(op.results[0].type)], True)
            const = _const_binop(op, a, b, lambda p, q: p & q)
            return [Info(info.contiguity, info.divisibility, info.constancy, const, True)]
    n = a.rank
    dv = tuple(max(elem_div(a, i), elem_div(b, i)) for i in range(n))
    k = tuple(gcd(a.constancy[i], b.constancy[i]) for i in range(n))
    const = _const_binop(op, a, b, lambda p, q: p & q)
    return [Info((1,) * n, dv, k, const, a.non_negative or b.non_negative)]


@_rule("or", "xor")
def _or(op, ins):
    a, b = ins
    n = a.rank
    dv = tuple(min(elem_div(a, i), elem_div(b, i)) for i in range(n))
    k = tuple(gcd(a.constancy[i], b.constancy[i]) for i in range(n))
    fn = (lambda p, q: p | q) if op.name == "or" else (lambda p, q: p ^ q)
    const = _const_binop(op, a, b, fn)
    return [Info((1,) * n, dv, k, const, a.non_negative and b.non_negative)]


@_rule("max", "min")
def _minmax(op, ins):
    a, b = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    n = a.rank
    dv = tuple(min(elem_div(a, i), elem_div(b, i)) for i in range(n))
    k = tuple(gcd(a.constancy[i], b.constancy[i]) for i in range(n))
    fn = max if op.name == "max" else min
    nonneg = (a.non_negative or b.non_negative) if op.name == "max" else (
        a.non_negative and b.non_negative)
    return [Info((1,) * n, dv, k, _const_binop(op, a, b, fn), nonneg)]


@_rule("cmp")
def _cmp(op, ins):
    a, b = ins
    pred = op.attrs.get("pred")
    n = a.rank
    k = []
    for i in range(n):
        kk = gcd(a.constancy[i], b.constancy[i])
        # x < n (or x >= n) over runs of consecutive x flips only at n: constant on aligned
        # blocks whose size divides the run length, the run starts and n itself.
        for lhs, rhs, preds in ((a, b, ("lt", "ge")), (b, a, ("gt", "le"))):
            if pred in preds and lhs.contiguity[i] > 1 and rhs.constancy[i] > 1:
                g = gcd(lhs.contiguity[i], rhs.constancy[i])
                blk = min(pow2_divisor(g), regroup(lhs.divisibility[i], lhs.contiguity[i], g),
                          elem_div(rhs, i))
                kk = max(kk, blk)
        k.append(kk)
    return [Info((1,) * n, (1,) * n, tuple(k), None, True)]


@_rule("select")
def _select(op, ins):
    cond, a, b = ins
    if cond.constant is not None:
        return [a if cond.constant else b]
    both = join(a, b)
    c, dv, k = [], [], []
    for i in range(both.rank):
        g = gcd(both.contiguity[i], cond.constancy[i])
        c.append(g)
        dv.append(min(regroup(a.divisibility[i], a.contiguity[i], g),
                      regroup(b.divisibility[i], b.contiguity[i], g)))
        k.append(gcd(both.constancy[i], cond.constancy[i]))
    return [Info(tuple(c), tuple(dv), tuple(k), both.constant, both.non_negative)]


@_rule("cast")
def _cast(op, ins):
    (a,) = ins
    src, dst = op.operands[0].type.scalar, op.result.type.scalar
    if isinstance(src, ScalarType) and isinstance(dst, ScalarType) and src.is_int and dst.is_int:
        if _int_widening(src, dst) or (a.non_negative and dst.bitwidth > 1
                                        and dst.bitwidth - dst.is_signed >= src.bitwidth - src.is_signed):
            return [a]
        n = a.rank
        cap = 1 << min(dst.bitwidth, 30)
        dv = tuple(min(elem_div(a, i), cap) for i in range(n))
        return [Info((1,) * n, dv, a.constancy, a.constant)]
    return [_constancy_only(op, ins)]


def _int_widening(src: ScalarType, dst: ScalarType) -> bool:
    if src.is_bool:
        return True
    if dst.is_bool:
        return False
    if src.is_signed:
        return dst.is_signed and dst.bitwidth >= src.bitwidth
    return dst.bitwidth >= src.bitwidth if dst.is_unsigned else dst.bitwidth > src.bitwidth


@_rule("bitcast")
def _bitcast(op, ins):
    (a,) = ins
    src, dst = op.operands[0].type, op.result.type
    if src.scalar.is_pointer and dst.scalar.is_pointer and _itemsize(src) == _itemsize(dst):
        return [a]
    return [_constancy_only(op, ins)]


@_rule("neg")
def _neg(op, ins):
    (a,) = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    n = a.rank
    dv = tuple(elem_div(a, i) for i in range(n))
    const = -a.constant if a.constant is not None else None
    return [Info((1,) * n, dv, a.constancy, const, a.constant == 0)]


@_rule("abs")
def _abs(op, ins):
    (a,) = ins
    if not _is_int_type(op.operands[0]):
        return [_constancy_only(op, ins)]
    n = a.rank
    dv = tuple(elem_div(a, i) for i in range(n))
    const = abs(a.constant) if a.constant is not None else None
    return [Info((1,) * n, dv, a.constancy, const, True)]


def _constancy_only(op, ins, constant=None) -> Info:
    """Equal inputs give equal outputs: runs of constancy survive any elementwise op."""
    n = len(dims(op.results[0].type))
    k = [dims(op.results[0].type)[i] if op.results[0].type.is_tensor else 1 for i in range(n)]
    for info in ins:
        if info.rank == n:
            k = [gcd(x, y) for x, y in zip(k, info.constancy)]
    return Info((1,) * n, (1,) * n, tuple(k), constant)


for _name in tuple(MATH_UNARY) + ("not", "fma", "umulhi"):
    if _name not in _TRANSFER:
        _TRANSFER[_name] = lambda op, ins: [_constancy_only(op, ins)]


@_rule("hint")
def _hint(op, ins):
    (a,) = ins
    t = op.result.type
    n = a.rank
    c, dv, k = list(a.contiguity), list(a.divisibility), list(a.constancy)
    for attr, target in (("contiguity", c), ("divisibility", dv), ("constancy", k)):
        if attr not in op.attrs:
            continue
        given = op.attrs[attr]
        values = list(given) if isinstance(given, (list, tuple)) else [given] * n
        if len(values) != n:
            continue
        for i, v in enumerate(values):
            v = int(v)
            if attr == "divisibility":
                v = bytes_to_elements(v, t) if t.scalar.is_pointer else pow2_divisor(v)
            target[i] = max(target[i], v)
    for i in range(n):
        if c[i] > 1:
            k[i] = 1  # a trusted contiguity hint rules out constancy
    return [Info(tuple(c), tuple(dv), tuple(k), a.constant, a.non_negative)]


# -- the analysis ---------------------------------------------------------------------------------
class AxisInfo:
    """The result of :func:`analyze`: :class:`Info` per value of one function."""

    def __init__(self, function: Function):
        self.function = function
        self._infos: dict[Value, Info] = {}

    def get(self, value: Value) -> Info:
        """The facts about ``value`` (pessimistic for values the analysis never saw)."""
        info = self._infos.get(value)
        return info if info is not None else pessimistic(value.type)

    __getitem__ = get

    def contiguity(self, value: Value, dim: int = -1) -> int:
        return self.get(value).contiguity[dim]

    def divisibility(self, value: Value, dim: int = -1) -> int:
        return self.get(value).divisibility[dim]

    def constancy(self, value: Value, dim: int = -1) -> int:
        return self.get(value).constancy[dim]

    def alignment_bytes(self, ptr: Value, dim: int = -1) -> int:
        """Byte alignment of the first address of every contiguous run of pointer ``ptr``."""
        return min(self.divisibility(ptr, dim) * _itemsize(ptr.type), MAX_DIVISIBILITY)

    def contiguity_order(self, value: Value) -> list[int]:
        """Dimensions from most to least contiguous (ties: the minor dimension first)."""
        c = self.get(value).contiguity
        return sorted(range(len(c)), key=lambda i: (-c[i], -i))

    def vector_elements(self, ptr: Value, mask: Value | None = None, dim: int = -1,
                        max_bytes: int = 16) -> int:
        """Elements along ``dim`` one vector access of ``ptr`` may cover: contiguous, aligned to
        the vector's size in bytes, at most ``max_bytes``, and (with ``mask``) with the mask
        constant across the vector."""
        info = self.get(ptr)
        size = _itemsize(ptr.type)
        v = min(pow2_divisor(info.contiguity[dim]), info.divisibility[dim],
                max(1, max_bytes // size))
        if mask is not None:
            v = min(v, pow2_divisor(self.get(mask).constancy[dim]))
        return max(1, v)

    def names(self) -> dict[Value, str]:
        """Printed names (``%x``) of the function's values, as the printer assigns them."""
        from ..ir.printer import Printer

        p = Printer()
        p.print_function(self.function)
        return dict(p.namer.names)

    def named(self, name: str) -> Info:
        """The Info of the value printed as ``%name`` (for tests and debugging)."""
        wanted = name if name.startswith("%") else "%" + name
        for v, n in self.names().items():
            if n == wanted:
                return self.get(v)
        raise KeyError(f"no value named {wanted} in @{self.function.name}")

    def __str__(self) -> str:
        lines = [f"// axis info of @{self.function.name}"]
        for v, n in self.names().items():
            if v in self._infos:
                lines.append(f"{n}: {self._infos[v]}")
        return "\n".join(lines)


def analyze(function: Function, *, assume_non_negative: bool = False,
            positive_divisors: bool = False) -> AxisInfo:
    """Compute axis info for every value of ``function``.

    ``assume_non_negative``: take every integer value to be >= 0, as Triton's analysis implicitly
    does. That is what index arithmetic computes in correct kernels (a negative offset reads
    outside its buffer) and it lets ``rem``/``div`` by runtime sizes keep contiguity (e.g. the
    matmul tutorial's ``(pid_n * BLOCK + arange) % N``), but it is an assumption, not a proof:
    off by default, where only provably non-negative values (ids, ranges, unsigned types and
    what is computed from them) count.

    ``positive_divisors``: the narrower assumption the layout passes make for the addresses of
    memory accesses (:meth:`naiad.gpu.axis.AxisFacts.address_facts`): a quotient ``x // y`` by
    a run-time ``y`` is non-negative when ``x`` is -- the divisor is taken to be positive, as
    the sizes and group counts index arithmetic divides by are. A remainder's sign is its
    dividend's whatever the divisor, so this is all tutorial 03's grouped program ids
    (``(pid % group) // size_m``, ``size_m`` a ``min`` of run-time values) need; a value that
    is negative for another reason (``pid * BN + arange - 64``) stays unproven."""
    result = AxisInfo(function)
    _Analyzer(result._infos, assume_non_negative, positive_divisors).run(function)
    return result


class _Analyzer:
    def __init__(self, infos: dict[Value, Info], assume_non_negative: bool = False,
                 positive_divisors: bool = False):
        self.infos = infos
        self.assume_non_negative = assume_non_negative
        self.positive_divisors = positive_divisors
        self._scopes: list[tuple[Block, dict[Value, Info]]] = []

    def finish(self, info: Info, t: Type) -> Info:
        info = _finish(info, t)
        st = t.scalar
        if self.assume_non_negative and not info.non_negative and isinstance(st, ScalarType) \
                and st.is_int:
            info = Info(info.contiguity, info.divisibility, info.constancy, info.constant,
                        info.constant is None or info.constant >= 0)
        return info

    def set(self, v: Value, info: Info) -> None:
        self.infos[v] = self.finish(info, v.type)

    def info(self, v: Value) -> Info:
        got = self.infos.get(v)
        return got if got is not None else pessimistic(v.type)

    def run(self, fn: Function) -> None:
        for arg, attrs in zip(fn.args, fn.arg_attrs):
            self.set(arg, _argument_info(arg, attrs))
        self.block(fn.body.block)

    def block(self, block: Block) -> None:
        before = {}   # infos of outer values an assume in this block sharpened, to restore
        self._scopes.append((block, before))
        for op in block.ops:
            self.op(op)
        self._scopes.pop()
        self.infos.update(before)

    def assume(self, op: Operation) -> None:
        """Read ``x >= 0``-style facts from an ``assume`` (see the module docstring)."""
        block, before = self._scopes[-1]
        for x in self._assumed_non_negative(op.operands[0]):
            info = self.info(x)
            if info.non_negative or not _is_int_type(x):
                continue
            owner = x.owner if x.is_block_arg else x.owner.parent
            if owner is not block and x not in before:
                before[x] = info
            self.infos[x] = Info(info.contiguity, info.divisibility, info.constancy,
                                 info.constant, True)

    def _assumed_non_negative(self, cond: Value) -> list[Value]:
        """Values that ``cond`` being true proves non-negative."""
        d = cond.defining_op
        if d is None:
            return []
        if d.name == "and":
            return [x for v in d.operands for x in self._assumed_non_negative(v)]
        if d.name != "cmp":
            return []
        a, b = d.operands
        pred = d.attrs.get("pred")
        x, bound = {"ge": (a, b), "gt": (a, b), "le": (b, a), "lt": (b, a)}.get(pred, (None, None))
        if x is None:
            return []
        low = self.info(bound)
        strict = pred in ("gt", "lt")
        if low.non_negative or (strict and low.constant == -1):
            return [x]
        return []

    def op(self, op: Operation) -> None:
        if op.name == "assume":
            self.assume(op)
        elif op.name == "for":
            self._for(op)
        elif op.name == "while":
            self._while(op)
        elif op.name == "if":
            self._if(op)
        elif op.regions:
            for r in op.regions:  # reduce/scan combine bodies: scalars, nothing known
                for a in r.block.args:
                    self.set(a, pessimistic(a.type))
                self.block(r.block)
            for res in op.results:
                self.set(res, pessimistic(res.type))
        else:
            fn = _TRANSFER.get(op.name)
            if fn is None or is_terminator(op):
                for res in op.results:
                    self.set(res, pessimistic(res.type))
                return
            ins = [self.info(v) for v in op.operands]
            if self.positive_divisors and op.name == "div" and ins[1].constant is None:
                ins[1] = _as_non_negative(ins[1])
            outs = fn(op, ins)
            for res, info in zip(op.results, outs):
                self.set(res, info)

    def _fixpoint(self, args: list[Value], inits: list[Info], body, feedback) -> list[Info]:
        """Iterate ``body()`` with ``args`` set to the running join of ``inits`` and what
        ``feedback()`` yields, until stable; returns the final argument infos."""
        state = [self.finish(i, a.type) for i, a in zip(inits, args)]
        for it in range(MAX_LOOP_ITERATIONS + 1):
            for a, s in zip(args, state):
                self.infos[a] = s
            body()
            if it == MAX_LOOP_ITERATIONS:
                break
            new = [self.finish(join(s, f), a.type) for s, f, a in zip(state, feedback(), args)]
            if new == state:
                return state
            state = new
        state = [pessimistic(a.type) for a in args]
        for a, s in zip(args, state):
            self.infos[a] = s
        body()
        return state

    def _for(self, op: Operation) -> None:
        body = op.regions[0].block
        lb, _, step = (self.info(v) for v in op.operands[:3])
        iv = body.args[0]
        self.set(iv, Info((1,), (min(elem_div(lb, 0), elem_div(step, 0)),), (1,), None,
                          lb.non_negative and step.non_negative))
        inits = [self.info(v) for v in op.operands[3:]]
        state = self._fixpoint(body.args[1:], inits, lambda: self.block(body),
                               lambda: [self.info(v) for v in body.terminator.operands])
        for r, s in zip(op.results, state):
            self.set(r, s)

    def _while(self, op: Operation) -> None:
        before, after = op.regions[0].block, op.regions[1].block

        def run_both():
            self.block(before)
            for a, v in zip(after.args, before.terminator.operands[1:]):
                self.set(a, self.info(v))
            self.block(after)

        inits = [self.info(v) for v in op.operands]
        self._fixpoint(before.args, inits, run_both,
                       lambda: [self.info(v) for v in after.terminator.operands])
        for r, v in zip(op.results, before.terminator.operands[1:]):
            self.set(r, self.info(v))

    def _if(self, op: Operation) -> None:
        then, other = op.regions[0].block, op.regions[1].block
        self.block(then)
        self.block(other)
        for i, r in enumerate(op.results):
            a = self.info(then.terminator.operands[i])
            b = self.info(other.terminator.operands[i])
            self.set(r, join(a, b))


def _as_non_negative(info: Info) -> Info:
    return Info(info.contiguity, info.divisibility, info.constancy, info.constant, True)


def _argument_info(arg: Value, attrs: dict) -> Info:
    t = arg.type
    if attrs.get("equal_to") == 1 and _is_int_type(arg):
        return _uniform(t, 1, 1, True)
    div = attrs.get("divisibility")
    if div is None or t.is_tensor:
        return pessimistic(t)
    if t.scalar.is_pointer:
        return _uniform(t, bytes_to_elements(int(div), t))
    if _is_int_type(arg):
        return _uniform(t, pow2_divisor(int(div)))
    return pessimistic(t)
