"""``naiad run script.py [args]``: run an unmodified Triton program with ``triton`` resolved to
naiad, on the selected target."""
from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from ..errors import NaiadError


def run_script(script: str, args: list[str], target: str | None = None) -> int:
    """Run ``script`` as ``__main__`` with ``sys.argv = [script, *args]``; the exit status is
    the script's (``SystemExit`` code, else 0)."""
    path = Path(script)
    if not path.is_file():
        raise NaiadError(f"no such file: {script}")
    from . import triton_alias

    if target is not None:
        import naiad

        naiad.set_target(target)
    triton_alias.install()
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    os.environ.setdefault("NAIAD_RUN", "1")
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == str(path.resolve().parent):
            del sys.path[0]
        del old_path0
    return 0
