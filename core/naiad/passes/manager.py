"""PassManager: runs a named pipeline of passes over a module, times each pass, verifies the IR
between passes in debug mode and dumps it before/after chosen passes.

A pass is any callable ``pass(module, ctx)`` (its name is its ``name`` attribute or
``__name__``), or a ``(name, callable)`` pair. ``ctx`` is a :class:`PassContext` carrying the
options and the pipeline name; passes that need no context ignore it.

Environment (read when the manager is created; constructor arguments override):

``NAIAD_DUMP``  comma-separated; besides the stage names the driver understands (``tile``...):
    ``before:NAME``  print the IR before every run of pass ``NAME`` (e.g. ``before:canonicalize``)
    ``after:NAME``   print the IR after every run of pass ``NAME``
    ``before:*`` / ``after:*``  before/after every pass
    ``all-passes``   the input IR once, then the IR after every pass
    ``NAME`` may be qualified by the pipeline: ``after:generic/cse``. Dumps go to stderr (or the
    ``dump_stream`` argument), each headed ``// ----- naiad IR after pass cse (4/8, generic) -----``.
``NAIAD_DEBUG=1``   verify the IR (``naiad.ir.verifier.verify``) before the first pass and after
    every pass; a broken IR raises ``IRError`` naming the pass that broke it. A pass whose output
    a later pass must complete (e.g. a backend pass that gives some tensors layouts before layout
    assignment gives the rest theirs) sets ``fn.leaves_partial_ir = True``: the check after it is
    skipped, and the next pass's check covers both.
``NAIAD_PASS_TIMING=1``  print the per-pass timing table to stderr after each run.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..errors import IRError
from ..ir.core import Module


@dataclass
class PassContext:
    """What a pass may consult: the options (dict or options object) and the pipeline's name."""
    options: Any = None
    pipeline: str = ""
    stats: dict = field(default_factory=dict)


@dataclass
class PassTiming:
    name: str
    seconds: float
    changed: bool | None


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def parse_dump_spec(text: str) -> tuple[set[str], set[str], bool]:
    """``NAIAD_DUMP`` text -> (passes to dump before, passes to dump after, all-passes)."""
    before, after, every = set(), set(), False
    for item in text.split(","):
        item = item.strip()
        if item == "all-passes":
            every = True
        elif item.startswith("before:"):
            before.add(item[len("before:"):].strip())
        elif item.startswith("after:"):
            after.add(item[len("after:"):].strip())
    return before, after, every


class PassManager:
    """An ordered, named list of passes. ``run(module)`` applies them in place and returns it."""

    def __init__(self, name: str = "pipeline", passes: Sequence = (), *, debug: bool | None = None,
                 dump: str | None = None, timing: bool | None = None, dump_stream=None,
                 verifier: Callable[[Module], None] | None = None):
        self.name = name
        self.passes: list[tuple[str, Callable]] = []
        for p in passes:
            self.add(p)
        self.debug = _env_flag("NAIAD_DEBUG") if debug is None else debug
        spec = os.environ.get("NAIAD_DUMP", "") if dump is None else dump
        self.dump_before, self.dump_after, self.dump_all = parse_dump_spec(spec)
        self.print_timing = _env_flag("NAIAD_PASS_TIMING") if timing is None else timing
        self.dump_stream = dump_stream
        self._verifier = verifier
        #: timings of the last run, one entry per pass run, in order
        self.timings: list[PassTiming] = []

    def add(self, p, name: str | None = None) -> "PassManager":
        if isinstance(p, tuple):
            name, p = p
        if not callable(p):
            raise TypeError(f"pass {p!r} is not callable")
        name = name or getattr(p, "name", None) or getattr(p, "__name__", None) or repr(p)
        self.passes.append((name, p))
        return self

    @property
    def pass_names(self) -> list[str]:
        return [n for n, _ in self.passes]

    # -- running ---------------------------------------------------------------------------------
    def run(self, module: Module, options: Any = None, ctx: PassContext | None = None) -> Module:
        ctx = ctx or PassContext(options=options, pipeline=self.name)
        self.timings = []
        verify = self._get_verifier() if self.debug else None
        if verify is not None:
            self._verify(verify, module, "the pipeline's input")
        if self.dump_all and self.passes:
            self._dump(module, f"before pass {self.passes[0][0]} (pipeline input)")
        total = len(self.passes)
        for i, (name, fn) in enumerate(self.passes, 1):
            where = f"{i}/{total}, {self.name}"
            if self._wants(self.dump_before, name):
                self._dump(module, f"before pass {name} ({where})")
            start = time.perf_counter()
            result = fn(module, ctx)
            elapsed = time.perf_counter() - start
            self.timings.append(PassTiming(name, elapsed, result if isinstance(result, bool) else None))
            if verify is not None and not getattr(fn, "leaves_partial_ir", False):
                self._verify(verify, module, f"pass {name} ({where})")
            if self.dump_all or self._wants(self.dump_after, name):
                self._dump(module, f"after pass {name} ({where})")
        if self.print_timing:
            print(self.timing_report(), file=self._stream())
        return module

    __call__ = run

    def _wants(self, names: set[str], pass_name: str) -> bool:
        return bool(names) and ("*" in names or pass_name in names
                                or f"{self.name}/{pass_name}" in names)

    def _stream(self):
        return self.dump_stream if self.dump_stream is not None else sys.stderr

    def _dump(self, module: Module, what: str) -> None:
        from ..ir.printer import print_module

        print(f"// ----- naiad IR {what} -----\n{print_module(module)}", file=self._stream())

    def _get_verifier(self):
        if self._verifier is not None:
            return self._verifier
        try:
            from ..ir.verifier import verify
        except ImportError:
            return None
        return verify

    @staticmethod
    def _verify(verify, module: Module, after: str) -> None:
        try:
            verify(module)
        except IRError as e:
            raise IRError(f"invalid IR after {after}: {e}") from e

    # -- reporting -------------------------------------------------------------------------------
    @property
    def total_seconds(self) -> float:
        return sum(t.seconds for t in self.timings)

    def timing_report(self) -> str:
        """A table of the last run: pass, milliseconds, share of the total, changed?"""
        total = self.total_seconds or 1e-12
        lines = [f"// pass timings, pipeline {self.name}: {self.total_seconds * 1e3:.3f} ms",
                 f"{'pass':<20} {'ms':>9} {'%':>6}  changed"]
        for t in self.timings:
            changed = "-" if t.changed is None else ("yes" if t.changed else "no")
            lines.append(f"{t.name:<20} {t.seconds * 1e3:>9.3f} {100 * t.seconds / total:>6.1f}  "
                         f"{changed}")
        return "\n".join(lines)
