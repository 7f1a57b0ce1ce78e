"""Up-front analysis of a kernel: can its programs run in lockstep, or must they run one by one?

It finds, once per kernel:

* **order-dependent atomics** -- ``atomic_cas``, ``atomic_rmw`` of kind ``xchg``, any atomic whose
  old value is used, and ``volatile`` loads. Their results depend on which program went first
  (tickets, locks, spin waits), so the kernel runs one program at a time, in program order.
* **read-after-write pairs** -- a store (or atomic) followed, in program order or in a later
  iteration of an enclosing loop, by a load from a buffer the store may write (pointer provenance
  is traced back to arguments; anything it cannot trace counts as every buffer). These run in
  lockstep with per-element write tracking and roll back to one-program-at-a-time execution when
  a program reads an element another program wrote.
* the largest per-program value (elements), to size lockstep batches.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from naiad.ir import Function

ANY = None  # provenance: could point anywhere


def _union(a, b):
    if a is ANY or b is ANY:
        return ANY
    return a | b


@dataclass
class KernelAnalysis:
    #: why the kernel must run one program at a time ([] when lockstep is fine)
    sequential_reasons: list[str] = field(default_factory=list)
    #: (bases written, bases read later) pairs; a base is an argument index, ANY = unknown
    raw_pairs: list[tuple] = field(default_factory=list)
    #: bases any op writes (ANY when unknown)
    written: frozenset | None = frozenset()
    #: largest tensor (elements) one program holds at once
    max_numel: int = 1
    #: the kernel has a ``tl.atomic_poll`` (programs may wait for later ones)
    polls: bool = False


class _Walker:
    def __init__(self, module):
        self.module = module
        self.prov: dict = {}
        self.events: list[tuple[str, object, tuple]] = []  # (kind, bases, enclosing loops)
        self.reasons: list[str] = []
        self.max_numel = 1
        self.changed = False
        self.polls = False

    def p(self, v):
        return self.prov.get(v, frozenset()) if v.type.scalar.is_pointer else frozenset()

    def setp(self, v, bases):
        if not v.type.scalar.is_pointer:
            return
        old = self.prov.get(v, frozenset())
        new = _union(old, bases) if old is not ANY else ANY
        if new != old:
            self.prov[v] = new
            self.changed = True

    def numel(self, t):
        n = 1
        for d in t.shape:
            n *= d
        self.max_numel = max(self.max_numel, n)

    def walk_block(self, block, loops, record, depth=0):
        for op in block.ops:
            self.walk_op(op, loops, record, depth)

    def walk_op(self, op, loops, record, depth):
        name = op.name
        for r in op.results:
            self.numel(r.type)
        if name in ("addptr", "splat", "broadcast", "expand_dims", "reshape", "trans", "hint",
                    "convert_layout"):
            self.setp(op.results[0], self.p(op.operands[0]))
        elif name == "split":
            for r in op.results:
                self.setp(r, self.p(op.operands[0]))
        elif name in ("join", "select"):
            bases = frozenset()
            for v in op.operands:
                bases = _union(bases, self.p(v))
            self.setp(op.results[0], bases)
        elif name in ("cast", "bitcast"):
            src = op.operands[0]
            self.setp(op.results[0], self.p(src) if src.type.scalar.is_pointer else ANY)
        elif name == "load":
            if op.attrs.get("volatile"):
                self.reason(record, "a volatile load")
            self.event(record, "R", self.p(op.operands[0]), loops)
            self.setp(op.results[0], ANY)
        elif name == "store":
            self.event(record, "W", self.p(op.operands[0]), loops)
        elif name == "atomic_rmw":
            self.event(record, "W", self.p(op.operands[0]), loops)
            if op.attrs.get("kind") == "xchg":
                self.reason(record, "atomic_xchg (its result depends on program order)")
            elif op.results[0].uses:
                self.reason(record, f"atomic_{op.attrs.get('kind')} whose old value is used")
        elif name == "atomic_cas":
            self.event(record, "W", self.p(op.operands[0]), loops)
            self.reason(record, "atomic_cas (its result depends on program order)")
        elif name == "atomic_poll":
            self.event(record, "R", self.p(op.operands[0]), loops)
            self.reason(record, "atomic_poll (it waits for what other programs write)")
            self.polls = True
        elif name == "dot":
            a, b = op.operands[0].type.shape, op.operands[1].type.shape
            self.max_numel = max(self.max_numel, _prod(a), _prod(b))
        elif name == "for":
            body = op.regions[0].block
            for arg, init in zip(body.args[1:], op.operands[3:]):
                self.setp(arg, self.p(init))
            for arg, y in zip(body.args[1:], body.ops[-1].operands):
                self.setp(arg, self.p(y))
            self.walk_block(body, loops + (id(op),), record, depth)
            for r, y in zip(op.results, body.ops[-1].operands):
                self.setp(r, self.p(y))
        elif name == "while":
            before, after = op.regions[0].block, op.regions[1].block
            for arg, init in zip(before.args, op.operands):
                self.setp(arg, self.p(init))
            for arg, y in zip(before.args, after.ops[-1].operands):
                self.setp(arg, self.p(y))
            cond_vals = before.ops[-1].operands[1:]
            for arg, v in zip(after.args, cond_vals):
                self.setp(arg, self.p(v))
            loops = loops + (id(op),)
            self.walk_block(before, loops, record, depth)
            self.walk_block(after, loops, record, depth)
            for r, v in zip(op.results, cond_vals):
                self.setp(r, self.p(v))
        elif name == "if":
            for region in op.regions:
                self.walk_block(region.block, loops, record, depth)
                term = region.block.ops[-1] if region.block.ops else None
                if term is not None:
                    for r, y in zip(op.results, term.operands):
                        self.setp(r, self.p(y))
        elif name == "call":
            callee = self.module.functions.get(op.attrs.get("callee")) if self.module else None
            if callee is None or depth > 32:
                self.event(record, "W", ANY, loops)
                self.event(record, "R", ANY, loops)
                for r in op.results:
                    self.setp(r, ANY)
                return
            for arg, v in zip(callee.args, op.operands):
                self.setp(arg, self.p(v))
            self.walk_block(callee.body.block, loops, record, depth + 1)
            term = callee.body.block.ops[-1]
            for r, v in zip(op.results, term.operands):
                self.setp(r, self.p(v))
        else:
            # reduce/scan regions hold no memory ops; results are never pointers we track
            for r in op.results:
                if r.type.scalar.is_pointer:
                    self.setp(r, ANY)

    def event(self, record, kind, bases, loops):
        if record:
            self.events.append((kind, bases, loops))

    def reason(self, record, text):
        if record and text not in self.reasons:
            self.reasons.append(text)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def analyze(fn: Function) -> KernelAnalysis:
    """Analyse ``fn`` (its module's callees included)."""
    w = _Walker(fn.module)
    for i, arg in enumerate(fn.args):
        if arg.type.scalar.is_pointer:
            w.prov[arg] = frozenset({i})
    # provenance through loop-carried values needs a fixpoint; then one recording walk
    for _ in range(8):
        w.changed = False
        w.walk_block(fn.body.block, (), False)
        if not w.changed:
            break
    w.walk_block(fn.body.block, (), True)
    pairs = []
    written = frozenset()
    for i, (kind, bases, loops) in enumerate(w.events):
        if kind != "W":
            continue
        written = _union(written, bases)
        for j, (kind2, bases2, loops2) in enumerate(w.events):
            if kind2 != "R":
                continue
            if j > i or set(loops) & set(loops2):
                pairs.append((bases, bases2))
    return KernelAnalysis(w.reasons, pairs, written, w.max_numel, w.polls)
