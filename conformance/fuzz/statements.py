"""Statement builders of the generator: reductions, scans, shape ops, dot, loops, branches, helper
calls, atomics; and the assembly of a whole :class:`Program`."""
from __future__ import annotations

from . import dtypes as dt
from .generator import COMBINES, INEXACT, LOOP_INDEX, STMT_WEIGHTS, Expr, Generator
from .program import Buffer, Program, Stmt

FLOAT_OTHERS = ["0.0", "1.5", "-2.0", "-0.0", 'float("inf")', 'float("nan")']


def build_program(g: Generator) -> Program:
    r = g.r
    want_dot = g.chance(0.2) and g.max_elements >= 256
    if want_dot:
        rank, R, C = 2, 16, 16
    elif g.chance(0.45):
        rank, R = 1, 1
        C = r.choice([c for c in (8, 16, 32, 64, 128) if c <= g.max_elements])
    else:
        rank = 2
        shapes = [(a, b) for a in (1, 2, 4, 8, 16) for b in (2, 4, 8, 16, 32)
                  if a * b <= g.max_elements and a * b >= 4]
        R, C = r.choice(shapes)
    grid = r.randint(1, 4)
    if rank == 1:
        n, m = r.randint((grid - 1) * C + 1, grid * C), C
    else:
        n = r.randint((grid - 1) * R + 1, grid * R)
        m = C if g.chance(0.6) else r.randint(1, C)
    ctx = Ctx(g, rank, R, C)
    n_inputs = r.randint(1, 4)
    for i in range(n_inputs):
        choices = [x for x in dt.ALL if x != "bfloat16" or "bfloat16" not in g.avoid]
        d = r.choice(choices) if i else r.choice([x for x in choices if x != "int1"])
        ctx.add_input(f"x{i}", d)
    ctx.pool.append(Expr("k", "int32", scalar=True))
    ctx.pool.append(Expr("alpha", "float32", scalar=True))
    n_stmts = r.randint(2, g.max_stmts)
    if want_dot:
        ctx.stmt_dot()
    for _ in range(n_stmts):
        kind = g.weighted(STMT_WEIGHTS)
        getattr(ctx, "stmt_" + kind)()
    ctx.add_outputs()
    return Program(seed=g.seed, rank=rank, R=R, C=C, grid=grid, n=n, m=m,
                   k=_not_one(r.randint(0, 5)), alpha=round(r.uniform(-3, 3) * 8) / 8,
                   num_warps=r.choice([1, 2, 4]), buffers=tuple(ctx.buffers),
                   stmts=tuple(ctx.stmts), helpers=tuple(g.helpers),
                   masked_other=ctx.cross_lane or g.chance(0.5))


class Ctx:
    """The kernel being built: its buffers, statements and the pool of typed tile values."""

    def __init__(self, g: Generator, rank: int, R: int, C: int):
        self.g, self.rank, self.R, self.C = g, rank, R, C
        self.buffers: list[Buffer] = []
        self.stmts: list[Stmt] = []
        self.pool: list[Expr] = []
        self.cross_lane = False

    @property
    def shape(self) -> str:
        return "[C]" if self.rank == 1 else "[R, C]"

    def tiles(self, pred=lambda e: True) -> list[Expr]:
        return [e for e in self.pool if not e.scalar and pred(e)]

    def add_input(self, name: str, d: str):
        if dt.is_float(d):
            other = self.g.pick(FLOAT_OTHERS)
        elif d == "int1":
            other = self.g.pick(["0", "1"])
        else:
            other = self.g.literal(d).lstrip("-") if dt.is_unsigned(d) else self.g.literal(d)
        self.buffers.append(Buffer(name, d, "input", other=other))
        self.pool.append(Expr(name, d))

    def emit(self, lines, outs=(), kind="expr", hazards=frozenset(), helpers=(),
             cross_lane=False):
        if self.g.avoid & set(hazards):
            return         # --avoid-known: drop the statement
        self.stmts.append(Stmt(tuple(lines), tuple(outs), kind, tuple(helpers),
                               frozenset(hazards), cross_lane))
        self.cross_lane |= cross_lane
        inexact = {INEXACT} if kind in ("reduce", "scan", "dot", "atomic") else set()
        for name, d in outs:
            mark = inexact if dt.is_float(d) else set()
            self.pool.append(Expr(name, d, frozenset(hazards) | mark))

    def add_outputs(self):
        tiles = self.tiles()
        count = min(len(tiles), self.g.r.randint(1, 3))
        chosen = []
        for e in reversed(tiles):          # the latest values carry the most computation
            if len(chosen) == count:
                break
            if e.text not in chosen:
                chosen.append(e.text)
        for i, name in enumerate(chosen):
            d = next(e.dtype for e in tiles if e.text == name)
            self.buffers.append(Buffer(f"out{i}", d, "output", value=name))

    def value(self, pred=lambda e: True) -> Expr | None:
        return self.g.leaf(self.pool, lambda e: not e.scalar and pred(e))

    # -- statements -----------------------------------------------------------------------
    def stmt_expr(self):
        e = self.g.expr(self.pool, depth=self.g.r.randint(1, 3))
        name = self.g.fresh()
        self.emit([f"{name} = {e.text}"], [(name, e.dtype)], hazards=e.hazards)

    def _numeric(self, e: Expr) -> Expr:
        """Reductions and scans do not take int1 here: count it as int32."""
        return self.g.cast_to(e, "int32") if e.dtype == "int1" else e

    def _back_to_tile(self, red: str, d: str, axis) -> str:
        """An expression broadcasting reduction result ``red`` back to the tile shape."""
        if axis is None or self.rank == 1:
            return f"{red} + tl.zeros({self.shape}, tl.{d})"
        index = "[:, None]" if axis == 1 else "[None, :]"
        if self.g.chance(0.5):
            return f"tl.broadcast_to({red}{index}, {self.shape})"
        return f"tl.broadcast_to(tl.expand_dims({red}, {axis}), {self.shape})"

    def stmt_reduce(self):
        g = self.g
        a = self.value()
        if a is None:
            return
        a = self._numeric(a)
        axis = None if self.rank == 1 or g.chance(0.25) else g.r.randint(0, 1)
        ax = "" if axis is None and self.rank == 2 else f", axis={0 if axis is None else axis}"
        op = g.pick(["sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce"])
        hazards = set(a.hazards)
        helpers = ()
        if op == "sum":
            d = dt.sum_dtype(a.dtype)
            if dt.width(a.dtype) == 16 and dt.is_float(a.dtype):
                hazards.add("half_accumulation")
            if dt.is_float(a.dtype):
                hazards.add("float_sum")
        elif op in ("max", "min"):
            d = dt.minmax_dtype(a.dtype)
        elif op in ("argmax", "argmin"):
            if axis is None and self.rank == 2:
                return
            d = "int32"
            if dt.is_float(a.dtype):
                hazards.add("argminmax_nan")
        elif op == "xor_sum":
            if not dt.is_int(a.dtype):
                return
            d = a.dtype
        else:
            fn = g.pick(["add", "max", "min", "mul"] +
                        (["xor", "or", "and"] if dt.is_int(a.dtype) else []))
            if dt.is_float(a.dtype) and dt.width(a.dtype) == 16 and fn in ("add", "mul"):
                hazards.add("half_accumulation")
            if dt.is_float(a.dtype) and fn == "mul":
                hazards.add("float_overflow_order")
            if dt.is_float(a.dtype) and fn == "add":
                hazards.add("float_sum")
            d = a.dtype
            helpers = (self.combine(fn),)
            ax_arg = "None" if axis is None else str(axis)
            if self.rank == 1:
                ax_arg = "0"
            red = g.fresh("r")
            name = g.fresh()
            self.emit([f"{red} = tl.reduce({a.text}, {ax_arg}, {helpers[0]})",
                       f"{name} = {self._back_to_tile(red, d, axis)}"], [(name, d)], "reduce",
                      hazards, helpers, cross_lane=True)
            return
        red, name = g.fresh("r"), g.fresh()
        call = f"tl.{op}({a.text}{ax})"
        if g.chance(0.3) and op in ("sum", "max", "min") and axis is not None and self.rank == 2:
            call = f"tl.{op}({a.text}{ax}, keep_dims=True)"
            self.emit([f"{red} = {call}", f"{name} = tl.broadcast_to({red}, {self.shape})"],
                      [(name, d)], "reduce", hazards, cross_lane=True)
            return
        self.emit([f"{red} = {call}", f"{name} = {self._back_to_tile(red, d, axis)}"],
                  [(name, d)], "reduce", hazards, cross_lane=True)

    def combine(self, fn: str) -> str:
        name = f"combine_{fn}"
        if not any(h == name for h, _ in self.g.helpers):
            self.g.helpers.append((name, f"def {name}(a, b):\n    return {COMBINES[fn]}\n"))
        return name

    def stmt_scan(self):
        g = self.g
        a = self.value()
        if a is None:
            return
        a = self._numeric(a)
        axis = 0 if self.rank == 1 else g.r.randint(0, 1)
        hazards = set(a.hazards)
        rev = ", reverse=True" if g.chance(0.3) else ""
        name = g.fresh()
        if g.chance(0.6):
            op = g.pick(["cumsum", "cumprod"])
            d = dt.sum_dtype(a.dtype)
            if dt.is_float(a.dtype) and dt.width(a.dtype) == 16:
                hazards.add("half_accumulation")
            if dt.is_float(a.dtype) and op == "cumprod":
                hazards.add("float_overflow_order")
            if dt.is_float(a.dtype):
                hazards.add("float_sum")
            self.emit([f"{name} = tl.{op}({a.text}, axis={axis}{rev})"], [(name, d)], "scan",
                      hazards, cross_lane=True)
            return
        fn = g.pick(["add", "max", "min"] + (["xor", "or"] if dt.is_int(a.dtype) else []))
        if dt.is_float(a.dtype) and dt.width(a.dtype) == 16 and fn == "add":
            hazards.add("half_accumulation")
        if dt.is_float(a.dtype) and fn == "add":
            hazards.add("float_sum")
        helper = self.combine(fn)
        self.emit([f"{name} = tl.associative_scan({a.text}, {axis}, {helper}{rev})"],
                  [(name, a.dtype)], "scan", hazards, (helper,), cross_lane=True)

    def stmt_shape(self):
        g = self.g
        a = self.value()
        if a is None:
            return
        name = g.fresh()
        choice = g.pick(["pairswap", "deinterleave", "trans", "interleave"])
        if self.rank == 1:
            if choice == "pairswap":
                lo, hi = g.fresh("lo"), g.fresh("hi")
                lines = [f"{lo}, {hi} = tl.split(tl.reshape({a.text}, [C // 2, 2]))",
                         f"{name} = tl.reshape(tl.join({hi}, {lo}), [C])"]
            elif choice == "interleave":
                lo, hi = g.fresh("lo"), g.fresh("hi")
                lines = [f"{lo}, {hi} = tl.split(tl.reshape({a.text}, [C // 2, 2]))",
                         f"{name} = tl.interleave({hi}, {lo})"]
            else:
                lines = [f"{name} = tl.reshape(tl.trans(tl.reshape({a.text}, [2, C // 2])), [C])"]
        else:
            if choice == "trans" and self.R == self.C:
                lines = [f"{name} = " + g.pick([f"tl.trans({a.text})",
                                                f"tl.permute({a.text}, (1, 0))"])]
            elif choice == "deinterleave":
                lines = [f"{name} = tl.reshape(tl.permute(tl.reshape({a.text}, [R, C // 2, 2]), "
                         f"(0, 2, 1)), [R, C])"]
            else:
                lo, hi = g.fresh("lo"), g.fresh("hi")
                lines = [f"{lo}, {hi} = tl.split(tl.reshape({a.text}, [R, C // 2, 2]))",
                         f"{name} = tl.reshape(tl.join({hi}, {lo}), [R, C])"]
        self.emit(lines, [(name, a.dtype)], "shape", a.hazards, cross_lane=True)

    def _tame(self, e: Expr, d: str) -> str:
        """``e`` as a dot operand of dtype ``d``; usually clamped to [-4, 4] with NaN zeroed."""
        if dt.is_int(d):
            src = e if dt.is_int(e.dtype) else None
            return f"{src.text}.to(tl.{d})" if src else f"tl.zeros([R, C], tl.{d})"
        if self.g.chance(0.7):
            x = e.text
            x = x if dt.is_float(e.dtype) else f"{x}.to(tl.float32)"
            return (f"tl.where({x} != {x}, 0.0, tl.minimum(tl.maximum({x}, -4.0), 4.0))"
                    f".to(tl.{d})")
        self.untamed = True
        return f"{e.text}.to(tl.{d})"

    def stmt_dot(self):
        g = self.g
        if self.rank != 2 or self.R != self.C or self.R < 16:
            return
        a, b = self.value(), self.value()
        if a is None or b is None:
            return
        d = g.pick(["float16", "bfloat16", "float32", "float64", "int8"])
        res = {"int8": "int32", "float64": "float64"}.get(d, "float32")
        if d == "int8" and not (dt.is_int(a.dtype) and dt.is_int(b.dtype)):
            d, res = "float16", "float32"
        hazards = set(a.hazards) | set(b.hazards) | {"dot_float"} if res != "int32" else \
            set(a.hazards) | set(b.hazards)
        if d == "bfloat16":
            hazards.add("bfloat16")
        self.untamed = False
        args = [self._tame(a, d), self._tame(b, d)]
        if g.chance(0.4):
            c = self.value()
            if c is not None:
                args.append(self._tame(c, res) if dt.is_float(res) else
                            g.cast_to(c, res).text if dt.is_int(c.dtype) or c.dtype == "int1"
                            else f"tl.zeros([R, C], tl.{res})")
        if d == "float32":
            args.append('input_precision="ieee"')
        if self.untamed and res != "int32":
            hazards.add("float_overflow_order")
        name = g.fresh()
        self.emit([f"{name} = tl.dot({', '.join(args)})"], [(name, res)], "dot", hazards,
                  cross_lane=True)

    def _update(self, acc: Expr, extra: list[Expr]) -> Expr:
        """``acc`` combined with an expression of ``extra``, converted back to acc's dtype."""
        g = self.g
        other = g.expr(extra + [acc], depth=2)
        pool = [acc, other] + [e for e in extra if e.scalar]
        for _ in range(4):
            e = g.expr(pool, depth=2)
            if acc.text in e.text and e.text != acc.text:
                break
        else:
            o = g.cast_to(other, acc.dtype)
            op = "^" if acc.dtype == "int1" else "+"
            e = Expr(f"({acc.text} {op} {o.text})", acc.dtype, g._h(acc, o))
        return g.cast_to(e, acc.dtype)

    def stmt_for(self):
        g = self.g
        a, b = self.value(), self.value()
        if a is None:
            return
        name = g.fresh()
        acc = Expr(name, a.dtype)
        i = g.fresh("i")
        idx = Expr(i, "int32", frozenset({LOOP_INDEX}), scalar=True)
        upd = self._update(acc, [b, idx] if b is not None else [idx])
        head = g.pick([f"for {i} in range({g.r.randint(1, 4)}):",
                       f"for {i} in range(k):", f"for {i} in range(1, k + 2, 2):",
                       f"for {i} in tl.range(0, k):",
                       f"for {i} in tl.static_range({g.r.randint(1, 3)}):"])
        self.emit([f"{name} = {a.text}", head, f"    {name} = {upd.text}"], [(name, a.dtype)],
                  "for", a.hazards | upd.hazards)

    def stmt_while(self):
        g = self.g
        a, b = self.value(), self.value()
        if a is None:
            return
        name, j = g.fresh(), g.fresh("j")
        acc = Expr(name, a.dtype)
        upd = self._update(acc, [b] if b is not None else [])
        self.emit([f"{name} = {a.text}", f"{j} = 0", f"while {j} < k:",
                   f"    {name} = {upd.text}", f"    {j} += 1"], [(name, a.dtype)], "while",
                  a.hazards | upd.hazards)

    def stmt_if(self):
        g = self.g
        e1 = g.expr(self.pool, depth=2)
        e2 = g.cast_to(g.expr(self.pool, depth=2), e1.dtype)
        name = g.fresh()
        cond = g.pick(["k > 2", "pid % 2 == 0", "alpha > 0.0", "(k > 1) and (pid < 3)"])
        hazards = e1.hazards | e2.hazards
        lines = [f"if {cond}:", f"    {name} = {e1.text}", "else:", f"    {name} = {e2.text}"]
        if g.chance(0.3):
            red = self.value(lambda e: dt.is_int(e.dtype))
            if red is not None:
                # a data-dependent scalar condition (one value per program)
                lines[0] = f"if tl.max({red.text}) > 3:"
                hazards |= red.hazards
                self.emit(lines, [(name, e1.dtype)], "if", hazards, cross_lane=True)
                return
        self.emit(lines, [(name, e1.dtype)], "if", hazards)

    def stmt_call(self):
        g = self.g
        a, b = self.value(), self.value()
        if a is None or b is None:
            return
        hname = g.fresh("helper")
        # the parameters carry the arguments' hazards: an inexact float cast to an integer
        # inside the helper is as discontinuous as outside (seed 10893)
        p0, p1 = Expr("p0", a.dtype, a.hazards), Expr("p1", b.dtype, b.hazards)
        t = g.expr([p0, p1], depth=2)
        t_expr = Expr("t", t.dtype)
        ret = g.expr([t_expr, p0, p1], depth=2)
        two = g.chance(0.3)
        body = f"def {hname}(p0, p1, S: tl.constexpr):\n    t = {t.text}\n"
        if two:
            body += f"    return {ret.text}, t * S if S > 1 else t\n"
        else:
            body += f"    return {ret.text}\n"
        g.helpers.append((hname, body))
        s_val = g.r.randint(1, 3)
        name = g.fresh()
        if two:
            name2 = g.fresh()
            s_val = 1 if t.dtype == "int1" else s_val
            self.emit([f"{name}, {name2} = {hname}({a.text}, {b.text}, {s_val})"],
                      [(name, ret.dtype), (name2, t.dtype)], "call", t.hazards | ret.hazards,
                      (hname,))
        else:
            self.emit([f"{name} = {hname}({a.text}, {b.text}, S={s_val})"],
                      [(name, ret.dtype)], "call", t.hazards | ret.hazards, (hname,))

    def stmt_atomic(self):
        g = self.g
        a = self.value()
        if a is None:
            return
        kind = g.pick(["rmw", "rmw", "xchg", "cas", "uniform"])
        d = g.pick(["int32", "uint32", "int64", "float32"])
        index = len([b for b in self.buffers if b.role in ("atomic", "unique")])
        hazards = set()
        if kind == "uniform":
            buf = Buffer(f"cnt{index}", "int32", "atomic", value="1")
            self.buffers.append(buf)
            if g.chance(0.5):
                line = f"tl.atomic_add({buf.param}, 1)"
                hazards.add("atomic_uniform")
            else:
                line = f"tl.atomic_add({buf.param} + tl.zeros({self.shape}, tl.int32), 1, " \
                       f"mask=mask)"
            self.emit([line], (), "atomic", hazards)
            return
        v = g.cast_to(self._numeric(a) if d != "float32" else a, d)
        hazards |= v.hazards
        if kind == "rmw":
            ops = ["add", "max", "min"] + (["and", "or", "xor"] if d != "float32" else [])
            op = g.pick(ops)
            slots = g.pick([1, 4, 8])
            buf = Buffer(f"atom{index}", d, "atomic", value=str(slots))
            self.buffers.append(buf)
            if d == "uint32":
                hazards.add("triton_atomic_dtype")
            if d == "float32" and op in ("max", "min"):
                hazards.add("float_atomic_minmax")
            self.emit([f"tl.atomic_{op}({buf.param} + (offs % {slots}), {v.text}, mask=mask)"],
                      (), "atomic", hazards)
            return
        d_u = "float32" if d == "float32" and kind == "xchg" else d.replace("float32", "int32")
        v = g.cast_to(self._numeric(a), d_u)
        if d_u in ("uint32", "float32"):
            hazards.add("triton_atomic_dtype")
        buf = Buffer(f"uniq{index}", d_u, "unique")
        self.buffers.append(buf)
        name = g.fresh()
        if kind == "xchg":
            lines = [f"{name} = tl.where(mask, tl.atomic_xchg({buf.param} + offs, {v.text}, "
                     f"mask=mask), 0)"]
        else:
            cmp = g.cast_to(self._numeric(self.value() or a), d_u)
            lines = [f"{name} = tl.atomic_cas({buf.param} + offs, ({cmp.text}) & 1, {v.text})"]
        self.emit(lines, [(name, d_u)], "atomic", hazards | v.hazards)

    def stmt_program_store(self):
        g = self.g
        a = self.value()
        if a is None:
            return
        a = self._numeric(a)
        op = g.pick(["sum", "max", "min"])
        d = dt.sum_dtype(a.dtype) if op == "sum" else dt.minmax_dtype(a.dtype)
        hazards = set(a.hazards)
        if op == "sum" and dt.is_float(a.dtype) and dt.width(a.dtype) == 16:
            hazards.add("half_accumulation")
        if op == "sum" and dt.is_float(a.dtype):
            hazards.add("float_sum")
        index = len([b for b in self.buffers if b.role == "program"])
        buf = Buffer(f"per_program{index}", d, "program")
        self.buffers.append(buf)
        self.emit([f"tl.store({buf.param} + pid, tl.{op}({a.text}))"], (), "program_store",
                  hazards, cross_lane=True)


def _not_one(k: int) -> int:
    """A launch specialises an int argument equal to 1 into the Python number 1, typed weakly
    (docs/language.md, "kernel parameters"): ``x_u8 ^ k`` would be uint8, not the int32 the
    generator's model gives ``k`` (seed 933 then fed a uint8 to tl.umulhi)."""
    return 2 if k == 1 else k
