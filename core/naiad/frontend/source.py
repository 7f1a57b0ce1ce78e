"""Where a kernel's code lives: maps AST positions (of the dedented source) back to the real file,
line and column, and turns problems at a node into located ``CompilationError``s."""
from __future__ import annotations

import ast
import inspect
from typing import NamedTuple

from ..errors import CompilationError


class SourceLoc(NamedTuple):
    """A position in a kernel's file; ``col`` is 0-based like ``CompilationError.col``."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"


class SourceInfo:
    """The source of one @jit function: its file, first line, raw lines and dedent amount."""

    def __init__(self, jit_fn):
        self.name = jit_fn.__name__
        self.filename = jit_fn.filename
        dedented = jit_fn.source.splitlines()   # raises a clear error when there is none
        try:
            raw_lines, first = inspect.getsourcelines(jit_fn.fn)
        except (OSError, TypeError):
            raw_lines, first = None, jit_fn.first_line
        if raw_lines is None or inspect.cleandoc("".join(raw_lines)) != inspect.cleandoc(
                jit_fn.source):
            # exec'd or replaced source (Triton's _unsafe_update_src): its own lines
            raw_lines = [line + "\n" for line in dedented]
        self.raw_lines = raw_lines
        self.first_line = first
        raw0 = raw_lines[0].rstrip("\n") if raw_lines else ""
        self.dedent = len(raw0) - len(dedented[0]) if dedented else 0

    def loc(self, node: ast.AST) -> SourceLoc | None:
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return None
        return SourceLoc(self.filename, self.first_line + lineno - 1,
                         getattr(node, "col_offset", 0) + self.dedent)

    def line_text(self, node: ast.AST) -> str | None:
        lineno = getattr(node, "lineno", None)
        if lineno is None or not 1 <= lineno <= len(self.raw_lines):
            return None
        return self.raw_lines[lineno - 1].rstrip("\n")

    def error(self, message: str, node: ast.AST | None) -> CompilationError:
        """A ``CompilationError`` pointing at ``node`` (or unlocated when node is None)."""
        loc = self.loc(node) if node is not None else None
        if loc is None:
            return CompilationError(f"in @jit function {self.name!r}: {message}")
        return CompilationError(message, filename=loc.filename, lineno=loc.line, col=loc.col,
                                source_line=self.line_text(node))
