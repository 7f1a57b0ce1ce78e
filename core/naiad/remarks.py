"""Performance remarks: why a ``tl.dot`` or a load is not on its fast path, said at the user's
source line.

Why: a kernel that silently falls off the fast path (a matrix instruction, a pipelined load)
can run several times slower with no visible cause. Backend passes call :func:`remark` when
they decline to accelerate an op; ``naiad.compile(...).metadata["remarks"]`` lists the
remarks, and ``NAIAD_REMARKS=1`` also prints them to stderr as they are collected.
"""
from __future__ import annotations

import os
import sys


def where(loc) -> str:
    """``file.py:LINE`` of a source location (or ``<unknown>``)."""
    if loc is None:
        return "<unknown>"
    filename, line = getattr(loc, "filename", None), getattr(loc, "line", None)
    if filename is None or line is None:
        return str(loc)
    return f"{os.path.basename(filename)}:{line}"


def remark(module, loc, what: str, message: str) -> str:
    """Record "``what`` at file:line ``message``" on ``module`` (once) and return it."""
    text = f"{what} at {where(loc)} {message}"
    remarks = module.__dict__.setdefault("remarks", [])
    if text not in remarks:
        remarks.append(text)
    return text


def collect(module) -> list[str]:
    """The module's remarks, in the order the passes made them."""
    return list(module.__dict__.get("remarks", ()))


def enabled() -> bool:
    return os.environ.get("NAIAD_REMARKS", "").strip().lower() not in ("", "0", "false", "no")


def report(name: str, remarks: list[str]) -> None:
    """Print ``remarks`` of kernel ``name`` to stderr when ``NAIAD_REMARKS`` is set."""
    if remarks and enabled():
        for text in remarks:
            print(f"naiad remark ({name}): {text}", file=sys.stderr)
