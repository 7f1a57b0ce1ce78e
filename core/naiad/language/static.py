"""Compile-time checks and messages: tl.static_assert, tl.static_print."""
from __future__ import annotations

import sys

from ..errors import CompilationError
from .core import builtin, tensor, unwrap


@builtin
def static_assert(cond, msg="", _semantic=None):
    """Fail compilation with ``msg`` when the compile-time condition ``cond`` is false."""
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        raise CompilationError("tl.static_assert needs a compile-time condition (constexprs "
                               "only), got a run-time value")
    if not cond:
        text = unwrap(msg)
        raise CompilationError(f"static_assert failed" + (f": {text}" if text else ""))
    return None


@builtin
def static_print(*values, sep=" ", end="\n", _semantic=None):
    """Print compile-time values while compiling (tensors print their type)."""
    print(*(unwrap(v) for v in values), sep=sep, end=end, file=sys.stderr)
    return None
