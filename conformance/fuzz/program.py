"""A generated kernel as data: statements the reducer can drop, and its rendering to source.

A :class:`Program` renders to one Python module (``naiad`` or ``triton`` spelling) holding its
``@jit`` helpers and the kernel ``kernel``. Every statement defines zero or more variables of the
kernel's tile shape (``SHAPE``) with known dtypes, so the reducer can replace any statement by
constants of the same dtypes and keep the kernel valid.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import dtypes as dt


@dataclass(frozen=True)
class Stmt:
    """Source lines (4-space indented blocks allowed) defining ``outs`` [(name, dtype)]."""

    lines: tuple[str, ...]
    outs: tuple[tuple[str, str], ...] = ()
    kind: str = "expr"
    helpers: tuple[str, ...] = ()
    hazards: frozenset = frozenset()
    cross_lane: bool = False

    def uses(self, name: str) -> bool:
        pat = re.compile(rf"\b{re.escape(name)}\b")
        return any(pat.search(line) for line in self.lines)


@dataclass(frozen=True)
class Buffer:
    """An array argument: ``role`` in input / output / atomic / unique (one slot per element) /
    program (one slot per program)."""

    name: str
    dtype: str
    role: str
    value: str = ""        # output: the variable stored; atomic: number of slots
    other: str | None = None  # input: the load's ``other``

    @property
    def param(self) -> str:
        return f"{self.name}_ptr"


@dataclass(frozen=True)
class Program:
    seed: int
    rank: int
    R: int
    C: int
    grid: int
    n: int                      # valid rows (rank 2) or elements (rank 1)
    m: int                      # valid columns (rank 2)
    k: int                      # a run-time i32 argument (loop trips, conditions)
    alpha: float                # a run-time fp32 argument
    num_warps: int
    buffers: tuple[Buffer, ...]
    stmts: tuple[Stmt, ...]
    helpers: tuple[tuple[str, str], ...] = ()   # (name, source) of module-level @jit functions
    masked_other: bool = True   # loads give ``other`` (needed when lanes mix)

    # -- facts --------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return (self.C,) if self.rank == 1 else (self.R, self.C)

    @property
    def elements_per_program(self) -> int:
        return self.C if self.rank == 1 else self.R * self.C

    @property
    def hazards(self) -> frozenset:
        out = set()
        for s in self.stmts:
            out |= s.hazards
        used = {h for s in self.stmts for h in s.helpers}
        helper_text = "".join(src for name, src in self.helpers if name in used)
        if any(b.dtype == "bfloat16" for b in self.buffers) or "bfloat16" in helper_text or \
                any("bfloat16" in line for s in self.stmts for line in s.lines):
            out.add("bfloat16")
        return frozenset(out)

    def with_(self, **kw) -> "Program":
        return replace(self, **kw)

    # -- rendering ----------------------------------------------------------------------------
    def source(self, flavor: str = "naiad") -> str:
        head = ("import naiad as triton\nimport naiad.language as tl\n" if flavor == "naiad"
                else "import triton\nimport triton.language as tl\n")
        used = {h for s in self.stmts for h in s.helpers}
        parts = [f"# naiad fuzz seed {self.seed}\n{head}"]
        for name, src in self.helpers:
            if name in used:
                parts.append(f"\n@triton.jit\n{src}")
        parts.append("\n@triton.jit\n" + self._kernel_source())
        return "\n".join(parts)

    def _kernel_source(self) -> str:
        params = [b.param for b in self.buffers] + ["n", "m", "k", "alpha", "R: tl.constexpr",
                                                    "C: tl.constexpr"]
        body = ["pid = tl.program_id(0)"]
        if self.rank == 1:
            body += ["offs = pid * C + tl.arange(0, C)", "mask = offs < n"]
        else:
            body += ["rows = pid * R + tl.arange(0, R)", "cols = tl.arange(0, C)",
                     "offs = rows[:, None] * C + cols[None, :]",
                     "mask = (rows[:, None] < n) & (cols[None, :] < m)"]
        for b in self.buffers:
            if b.role == "input":
                other = f", other={b.other}" if self.masked_other else ""
                body.append(f"{b.name} = tl.load({b.param} + offs, mask=mask{other})")
        for s in self.stmts:
            body.extend(s.lines)
        for b in self.buffers:
            if b.role == "output":
                body.append(f"tl.store({b.param} + offs, {b.value}, mask=mask)")
        lines = [f"def kernel({', '.join(params)}):"] + ["    " + line for line in body]
        return "\n".join(lines) + "\n"

    def replacement(self, index: int) -> "Program":
        """The program with statement ``index`` replaced by constants of the same dtypes."""
        old = self.stmts[index]
        lines = tuple(f"{name} = tl.full({shape_text(self)}, 1, tl.{d})" for name, d in old.outs)
        stmts = list(self.stmts)
        stmts[index] = Stmt(lines, old.outs, kind="const")
        return self.with_(stmts=tuple(stmts))

    def without_dead(self) -> "Program":
        """Drop statements whose variables nothing uses (side effects are kept)."""
        stmts = list(self.stmts)
        live_outputs = [b.value for b in self.buffers if b.role == "output"]
        changed = True
        while changed:
            changed = False
            for i in range(len(stmts) - 1, -1, -1):
                s = stmts[i]
                if not s.outs or s.kind in ("atomic", "program_store"):
                    continue
                later = stmts[i + 1:]
                if any(v in live_outputs for v, _ in s.outs):
                    continue
                if any(t.uses(v) for v, _ in s.outs for t in later):
                    continue
                del stmts[i]
                changed = True
        used_inputs = {b.name for b in self.buffers if b.role == "input"
                       and (b.name in live_outputs or any(s.uses(b.name) for s in stmts))}
        buffers = tuple(b for b in self.buffers if b.role != "input" or b.name in used_inputs)
        return self.with_(stmts=tuple(stmts), buffers=buffers)


def shape_text(p: Program) -> str:
    return "[C]" if p.rank == 1 else "[R, C]"

