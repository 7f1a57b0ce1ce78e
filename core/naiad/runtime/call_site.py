"""The user's line that made a host call go wrong, added to the error it raised.

A bad argument to ``kernel.warmup(...)`` or ``compiled[grid](...)`` is found inside naiad's
runtime, several frames below the user's code; the message names the call line itself so it
reads right where tracebacks are cut short (notebooks, logged exceptions). Only error paths
pay for the stack walk.
"""
from __future__ import annotations

import os
import sys

from ..errors import DeviceError, OptionError
from .specialize import ArgumentError

#: the user's mistakes in a call's arguments (compile errors already name the kernel's line)
CALL_ERRORS = (ArgumentError, OptionError, DeviceError)

#: naiad's package folder: frames under it are not the user's
_NAIAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_call_site() -> str | None:
    """``file:line`` of the innermost frame outside naiad (and outside generated code)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_NAIAD_DIR) and not filename.startswith("<naiad"):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def at_call_site(exc: Exception, what: str) -> Exception:
    """A copy of ``exc`` (same type) whose message ends with where the user called ``what``."""
    site = user_call_site()
    if site is None or getattr(exc, "_naiad_call_site", None):
        return exc
    try:
        new = type(exc)(f"{exc} [{what} called at {site}]")
    except Exception:   # noqa: BLE001 -- an error type with another constructor: keep it
        return exc
    new._naiad_call_site = site
    return new
