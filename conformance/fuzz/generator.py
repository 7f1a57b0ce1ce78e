"""Seeded generator of valid naiad kernels over the language of docs/language.md.

``generate(seed)`` always returns the same :class:`~.program.Program` for a seed. Every
expression's dtype is tracked with the documented promotion rules (dtypes.py), integer UB is
guarded (shift amounts masked to the width, divisors forced into [1, 16)), and constructs whose
results are known to differ between implementations carry a *hazard* tag (divergences.py says why
and on which backend), so a mismatch on a tagged kernel is reported as a known divergence.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from . import dtypes as dt
from .program import Program

#: statement kinds and their weights
STMT_WEIGHTS = {"expr": 10, "reduce": 3, "scan": 2, "shape": 2, "dot": 2, "for": 2, "while": 1,
                "if": 1, "call": 2, "atomic": 2, "program_store": 1}
FLOAT_MATH = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor",
              "ceil", "abs"]
COMBINES = {"add": "a + b", "max": "tl.maximum(a, b)", "min": "tl.minimum(a, b)",
            "xor": "a ^ b", "or": "a | b", "and": "a & b", "mul": "a * b"}


#: a pseudo-hazard carried by float values whose last bits may differ between correct
#: implementations (math functions, summation order); see _discontinuous
INEXACT = "~inexact"
#: a pseudo-hazard carried by a loop index only (never by what is computed from it): Triton's
#: interpreter types ``range``/``tl.range`` indices as Python numbers (see _h)
LOOP_INDEX = "~loop_index"


@dataclass(frozen=True)
class Expr:
    text: str
    dtype: str
    hazards: frozenset = frozenset()
    scalar: bool = False       # a 0-d run-time value (k, alpha, a loop index)


class Generator:
    """One kernel's worth of random choices."""

    def __init__(self, seed: int, max_elements: int = 512, max_stmts: int = 12,
                 avoid: frozenset = frozenset()):
        self.seed = seed
        self.avoid = frozenset(avoid)
        self.r = random.Random(seed)
        self.max_elements = max_elements
        self.max_stmts = max_stmts
        self.counter = 0
        self.helpers: list[tuple[str, str]] = []
        self.cross_lane = False

    # -- small helpers --------------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(list(seq))

    def weighted(self, weights: dict):
        keys = list(weights)
        return self.r.choices(keys, [weights[k] for k in keys])[0]

    def leaf(self, pool: list[Expr], pred=lambda e: True) -> Expr | None:
        cands = [e for e in pool if pred(e)]
        if not cands:
            return None
        # favour recent values so chains grow deep
        i = min(len(cands) - 1, int(len(cands) * (1 - self.r.random() ** 2)))
        return cands[i]

    def literal(self, d: str) -> str:
        if dt.is_float(d):
            return self.pick(["0.5", "2.0", "-1.5", "3.0", "0.25", "-0.0", "1.0"])
        if dt.is_unsigned(d):
            return str(self.r.randint(0, 7))
        return str(self.r.randint(-4, 7))

    # -- expressions ----------------------------------------------------------------------
    def expr(self, pool: list[Expr], depth: int = 2) -> Expr:
        """A tensor-valued expression over ``pool`` (at least one tensor leaf)."""
        tensors = [e for e in pool if not e.scalar]
        if depth <= 0 or self.chance(0.25):
            return self.leaf(tensors)
        kind = self.weighted({"arith": 6, "div": 2, "intdiv": 2, "bit": 3, "shift": 2,
                              "cmp": 2, "unary": 2, "math": 3, "cast": 4, "where": 2,
                              "minmax": 2, "fma": 1, "umulhi": 1})
        a = self.expr(pool, depth - 1)
        e = getattr(self, "_" + kind)(a, pool, depth)
        if e is not None and (self.avoid & (e.hazards - a.hazards) or
                              e.dtype == "bfloat16" and "bfloat16" in self.avoid):
            return a       # --avoid-known: keep away from constructs with a known divergence
        return e or a

    def operand(self, pool, depth, pred=lambda e: True, allow_scalar=True) -> Expr | None:
        """A second operand: a sub-expression, a scalar argument or a literal (by the caller)."""
        if allow_scalar and self.chance(0.15):
            s = self.leaf(pool, lambda e: e.scalar and pred(e))
            if s:
                return s
        for _ in range(3):
            b = self.expr(pool, depth - 1) if self.chance(0.5) else self.leaf(pool, pred)
            if b is not None and pred(b) and not b.scalar:
                return b
        return self.leaf([e for e in pool if not e.scalar], pred)

    @staticmethod
    def _h(*exprs: Expr, extra=()) -> frozenset:
        """The hazards of an expression over ``exprs``. The loop-index mark stays on the index
        itself; where the index meets an 8/16-bit integer tensor, the expression is tagged."""
        out = set(extra)
        for e in exprs:
            out |= e.hazards
        if LOOP_INDEX in out:
            out.discard(LOOP_INDEX)
            if any(dt.is_int(e.dtype) and dt.width(e.dtype) < 32 for e in exprs
                   if LOOP_INDEX not in e.hazards):
                out.add("loop_index_weak")
        return frozenset(out)

    def _arith(self, a, pool, depth):
        if a.dtype == "int1":
            return None
        op = self.pick("+-*")
        if self.chance(0.3):
            return Expr(f"({a.text} {op} {self.literal(a.dtype)})", a.dtype, a.hazards)
        b = self.operand(pool, depth, lambda e: e.dtype != "int1")
        if b is None:
            return None
        return Expr(f"({a.text} {op} {b.text})", dt.promote(a.dtype, b.dtype),
                    self._h(a, b, extra=_weak_arg(a, b)))

    def _div(self, a, pool, depth):
        if a.dtype == "int1":
            return None
        b = self.operand(pool, depth, lambda e: e.dtype != "int1" and not (
            dt.is_int(e.dtype) and dt.is_int(a.dtype)
            and dt.is_unsigned(e.dtype) != dt.is_unsigned(a.dtype)))
        if b is None:
            return None
        p = dt.promote(a.dtype, b.dtype)
        res = "float32" if not dt.is_float(p) or dt.width(p) == 16 else p
        # float32 '/' is Triton's fast division on NVIDIA (div.full.f32, <= 2 ulp): its last
        # bits may differ from the reference's correctly rounded quotient
        extra = {INEXACT} if res == "float32" else set()
        return Expr(f"({a.text} / {b.text})", res, self._h(a, b, extra=extra))

    def _intdiv(self, a, pool, depth):
        op = self.pick(["//", "%"])
        if dt.is_float(a.dtype) and op == "%":
            b = self.operand(pool, depth, lambda e: dt.is_float(e.dtype), allow_scalar=False)
            if b is None:
                return None
            p = dt.promote(a.dtype, b.dtype)
            res = "float32" if dt.width(p) == 16 else p
            return Expr(f"({a.text} % {b.text})", res,
                        self._h(a, b, extra={"float_mod"} | _discontinuous(a) |
                                _discontinuous(b)))
        if not dt.is_int(a.dtype):
            return None
        if self.chance(0.4):
            return Expr(f"({a.text} {op} {self.r.randint(1, 9)})", a.dtype, a.hazards)
        b = self.operand(pool, depth, lambda e: dt.is_int(e.dtype)
                         and dt.is_unsigned(e.dtype) == dt.is_unsigned(a.dtype),
                         allow_scalar=False)
        if b is None:
            return None
        # divisor in [1, 16): no division by zero, no INT_MIN // -1
        return Expr(f"({a.text} {op} (({b.text} & 15) | 1))", dt.promote(a.dtype, b.dtype),
                    self._h(a, b))

    def _bit(self, a, pool, depth):
        if dt.is_float(a.dtype):
            return None
        op = self.pick("&|^")
        if a.dtype != "int1" and self.chance(0.3):
            return Expr(f"({a.text} {op} {self.literal(a.dtype)})", a.dtype, a.hazards)
        b = self.operand(pool, depth, lambda e: not dt.is_float(e.dtype))
        if b is None:
            return None
        return Expr(f"({a.text} {op} {b.text})", dt.promote(a.dtype, b.dtype), self._h(a, b))

    def _shift(self, a, pool, depth):
        if not dt.is_int(a.dtype):
            return None
        op = self.pick(["<<", ">>"])
        if self.chance(0.3):
            return Expr(f"({a.text} {op} {self.r.randint(0, dt.width(a.dtype) - 1)})", a.dtype,
                        a.hazards)
        b = self.operand(pool, depth, lambda e: dt.is_int(e.dtype))
        if b is None:
            return None
        p = dt.promote(a.dtype, b.dtype)
        extra = {"shift_signedness"} if op == ">>" and dt.is_unsigned(a.dtype) != \
            dt.is_unsigned(b.dtype) else set()
        if op == ">>" and p == "uint64" and not dt.is_unsigned(a.dtype):
            extra.add("signed_shift_to_uint64")
        return Expr(f"({a.text} {op} ({b.text} & {dt.width(p) - 1}))", p,
                    self._h(a, b, extra=extra))

    def _cmp(self, a, pool, depth):
        op = self.pick(["<", "<=", ">", ">=", "==", "!="])
        if a.dtype != "int1" and self.chance(0.3):
            return Expr(f"({a.text} {op} {self.literal(a.dtype)})", "int1",
                        self._h(a, extra=_discontinuous(a)))
        b = self.operand(pool, depth, lambda e: (e.dtype == "int1") == (a.dtype == "int1"))
        if b is None:
            return None
        return Expr(f"({a.text} {op} {b.text})", "int1",
                    self._h(a, b, extra=_discontinuous(a) | _discontinuous(b) | _weak_arg(a, b)))

    def _unary(self, a, pool, depth):
        if a.dtype == "int1":
            return Expr(f"(~{a.text})", "int1", a.hazards)
        if dt.is_float(a.dtype) or self.chance(0.5):
            return Expr(f"(-{a.text})", a.dtype, a.hazards)
        return Expr(f"(~{a.text})", a.dtype, a.hazards)

    def _math(self, a, pool, depth):
        if a.dtype == "int1":
            return None
        fn = self.pick(FLOAT_MATH + ["sigmoid"])
        if fn == "abs":
            extra = {"abs_int_min"} if dt.is_int(a.dtype) and not dt.is_unsigned(a.dtype) \
                else set()
            return Expr(f"tl.abs({a.text})", a.dtype, self._h(a, extra=extra))
        if not dt.is_float(a.dtype) or dt.width(a.dtype) == 16:
            # math functions take fp32/fp64 only (as Triton's): convert first, as a user must
            a = Expr(f"{a.text}.to(tl.float32)", "float32",
                     self._h(a, extra=_cast_hazards(a.dtype, "float32")))
        extra = set()
        if fn in ("sin", "cos"):
            extra.add("trig_large_argument")
        if fn in ("floor", "ceil"):
            extra |= _discontinuous(a)
        else:
            extra.add(INEXACT)
        return Expr(f"tl.{fn}({a.text})", a.dtype, self._h(a, extra=extra))

    def _cast(self, a, pool, depth):
        if self.chance(0.2):
            others = dt.same_width(a.dtype)
            if others:
                to = self.pick(others)
                extra = {"nan_payload"} | _discontinuous(a) if dt.is_float(a.dtype) else set()
                extra |= {"bfloat16"} if to == "bfloat16" else set()
                return Expr(f"{a.text}.to(tl.{to}, bitcast=True)", to, self._h(a, extra=extra))
        to = self.pick(dt.ALL)
        if to == a.dtype:
            return None
        if dt.is_float(a.dtype) and dt.is_float(to) and dt.width(to) < dt.width(a.dtype) \
                and self.chance(0.3):
            return Expr(f"{a.text}.to(tl.{to}, fp_downcast_rounding=\"rtz\")", to,
                        self._h(a, extra={"rtz"}))
        if dt.is_float(a.dtype) and dt.is_int(to) and self.chance(0.7):
            # keep the value in range: out-of-range float -> int is undefined
            lo = 0.0 if dt.is_unsigned(to) else -100.0
            text = (f"tl.where({a.text} != {a.text}, 0.0, "
                    f"tl.minimum(tl.maximum({a.text}, {lo}), 100.0)).to(tl.{to})")
            return Expr(text, to, self._h(a, extra=_discontinuous(a)))
        extra = _cast_hazards(a.dtype, to) | ({"bfloat16"} if to == "bfloat16" else set())
        if not dt.is_float(to):
            extra |= _discontinuous(a)      # float -> int/bool is a step function (seed 10893)
        return Expr(f"{a.text}.to(tl.{to})", to, self._h(a, extra=extra))

    def _where(self, a, pool, depth):
        c = self.leaf(pool, lambda e: e.dtype == "int1" and not e.scalar)
        if c is None or self.chance(0.4):
            c = self._cmp(a, pool, depth)
            if c is None:
                return None
        b = self.operand(pool, depth, lambda e: True, allow_scalar=False)
        if b is None:
            return None
        if (a.dtype == "int1") != (b.dtype == "int1"):
            return None
        return Expr(f"tl.where({c.text}, {a.text}, {b.text})", dt.promote(a.dtype, b.dtype),
                    self._h(a, b, c))

    def _minmax(self, a, pool, depth):
        if a.dtype == "int1":
            return None
        b = self.operand(pool, depth, lambda e: e.dtype != "int1")
        if b is None:
            return None
        fn = self.pick(["maximum", "minimum"])
        p = dt.promote(a.dtype, b.dtype)
        nan = ", propagate_nan=tl.PropagateNan.ALL" if dt.is_float(p) and self.chance(0.3) else ""
        return Expr(f"tl.{fn}({a.text}, {b.text}{nan})", p, self._h(a, b, extra=_weak_arg(a, b)))

    def _fma(self, a, pool, depth):
        if not dt.is_float(a.dtype):
            return None
        b = self.operand(pool, depth, lambda e: e.dtype != "int1", allow_scalar=False)
        c = self.operand(pool, depth, lambda e: e.dtype != "int1", allow_scalar=False)
        if b is None or c is None:
            return None
        d = a.dtype
        bt = b.text if b.dtype == d else f"{b.text}.to(tl.{d})"
        ct = c.text if c.dtype == d else f"{c.text}.to(tl.{d})"
        extra = _cast_hazards(b.dtype, d) | _cast_hazards(c.dtype, d)
        return Expr(f"tl.fma({a.text}, {bt}, {ct})", d, self._h(a, b, c, extra=extra))

    def _umulhi(self, a, pool, depth):
        if not dt.is_int(a.dtype) or dt.width(a.dtype) < 32:
            return None
        b = self.operand(pool, depth, lambda e: e.dtype == a.dtype, allow_scalar=False)
        if b is None:
            return None
        extra = set() if dt.is_unsigned(a.dtype) else {"umulhi_signed"}
        return Expr(f"tl.umulhi({a.text}, {b.text})", a.dtype, self._h(a, b, extra=extra))

    def cast_to(self, e: Expr, d: str) -> Expr:
        """``e`` converted to ``d`` without undefined behaviour."""
        if e.dtype == d:
            return e
        if dt.is_float(e.dtype) and dt.is_int(d):
            lo = 0.0 if dt.is_unsigned(d) else -100.0
            return Expr(f"tl.where({e.text} != {e.text}, 0.0, tl.minimum(tl.maximum("
                        f"{e.text}, {lo}), 100.0)).to(tl.{d})", d,
                        self._h(e, extra=_discontinuous(e)))
        extra = _cast_hazards(e.dtype, d) | (set() if dt.is_float(d) else _discontinuous(e))
        return Expr(f"{e.text}.to(tl.{d})", d, self._h(e, extra=extra))


def _discontinuous(e: Expr) -> set:
    """A step function (compare, float -> int, floor, bitcast) of an inexact float turns a
    last-bit difference into a different value."""
    return {"float_discontinuity"} if dt.is_float(e.dtype) and INEXACT in e.hazards else set()


def _weak_arg(a: Expr, b: Expr) -> set:
    """Triton types an fp32 scalar argument weakly next to an fp16/bf16 tensor."""
    half = dt.is_float(a.dtype) and dt.width(a.dtype) == 16
    return {"float_arg_weak"} if half and b.scalar and b.dtype == "float32" else set()


def _cast_hazards(src: str, to: str) -> set:
    out = set()
    if dt.is_float(src) and dt.is_int(to):
        out.add("float_to_int_range")
    if dt.is_int(src) and dt.width(src) == 64 and dt.width(to) == 16 and dt.is_float(to):
        out.add("int64_to_half_rounding")
    return out


def generate(seed: int, max_elements: int = 512, max_stmts: int = 12,
             avoid: frozenset = frozenset()) -> Program:
    """The kernel of ``seed`` (deterministic). ``avoid``: hazard tags whose constructs are left
    out (the kernels then differ from the default ones of the same seed)."""
    from .statements import build_program

    return build_program(Generator(seed, max_elements, max_stmts, avoid))
