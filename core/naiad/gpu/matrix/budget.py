"""Pass ``check_shared_memory``: the kernel's shared memory fits the target.

Runs after the shared-memory allocation. The limit is ``TargetInfo.shared_memory_bytes``
(None: not checked). A kernel over it is a compile error naming the kernel, its need, the
limit and the largest user, rather than a launch failure (or, on some drivers, a silent
out-of-bounds access) on the device.
"""
from __future__ import annotations

import linecache

from ...errors import CompilationError
from ...ir.core import Module
from ...ir.printer import print_op


def check_shared_memory(module: Module, ctx=None) -> None:
    limit = getattr(getattr(ctx, "target_info", None), "shared_memory_bytes", None)
    if not limit:
        return
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        need = int(fn.attrs.get("shared", 0))
        if need <= limit:
            continue
        users = [op for op in fn.walk() if op.attrs.get("scratch")]
        worst = max(users, key=lambda o: o.attrs["scratch"], default=None)
        where, loc = "", {}
        if worst is not None:
            where = (f"; the largest user needs {worst.attrs['scratch']} bytes: "
                     f"{print_op(worst).strip().splitlines()[0]}")
            if isinstance(worst.loc, tuple) and len(worst.loc) >= 2:
                filename, lineno = worst.loc[0], worst.loc[1]
                col = worst.loc[2] if len(worst.loc) > 2 else 0
                line = linecache.getline(str(filename), int(lineno)).rstrip("\n") or None
                loc = dict(filename=filename, lineno=lineno, col=col, source_line=line)
        target = getattr(ctx, "target", None)
        raise CompilationError(
            f"kernel {fn.name} needs {need} bytes of shared memory but {target or 'the target'} "
            f"has {limit} bytes per program{where}; use smaller blocks, fewer warps or fewer "
            f"pipeline stages", **loc)
