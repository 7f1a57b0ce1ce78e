"""naiad-stage-stats: an out-of-tree naiad plugin that observes every compiled stage.

It implements one hook, ``naiad_stage_done``, which naiad calls after each pipeline stage
(``tile``, ``gpu``, ``llir``, ``ptx``, ``cubin``, ``amdgcn``, ``hsaco``...). For each stage it
counts how many kernels went through it and how big their IR was; read the figures from
:data:`STATS` or print them with :func:`report`.

Installed with pip, it is discovered through its entry point (group ``naiad.backends``) with no
code on the user's side; ``naiad targets`` lists it among the plugins.
"""
from __future__ import annotations

import threading

import pluggy

# The marker naiad exports as ``naiad.hookimpl``; built from the project name so that importing
# this plugin never imports naiad itself (naiad imports the plugin while building its manager).
hookimpl = pluggy.HookimplMarker("naiad")

#: stage name -> {"count", "bytes", "lines", "max_bytes", "kernels": [names]}
STATS: dict[str, dict] = {}
_lock = threading.Lock()


def _size(ir) -> tuple[int, int]:
    if isinstance(ir, str):
        return len(ir.encode("utf-8")), ir.count("\n") + (0 if ir.endswith("\n") or not ir else 1)
    if isinstance(ir, (bytes, bytearray, memoryview)):
        return len(ir), 0
    text = str(ir)
    return len(text.encode("utf-8")), text.count("\n") + 1


@hookimpl
def naiad_stage_done(stage, ir, target, metadata):
    """Record one finished stage (called by naiad's compiler; the return value is ignored)."""
    nbytes, nlines = _size(ir)
    name = (metadata or {}).get("name", "?")
    with _lock:
        entry = STATS.setdefault(stage, {"count": 0, "bytes": 0, "lines": 0, "max_bytes": 0,
                                         "kernels": []})
        entry["count"] += 1
        entry["bytes"] += nbytes
        entry["lines"] += nlines
        entry["max_bytes"] = max(entry["max_bytes"], nbytes)
        entry["kernels"].append(f"{name}@{target}")


def reset() -> None:
    """Forget everything recorded so far."""
    with _lock:
        STATS.clear()


def report() -> str:
    """The statistics as a small table."""
    rows = [f"{'stage':<8} {'count':>5} {'bytes':>10} {'lines':>8} {'max bytes':>10}"]
    with _lock:
        for stage, e in STATS.items():
            rows.append(f"{stage:<8} {e['count']:>5} {e['bytes']:>10} {e['lines']:>8} "
                        f"{e['max_bytes']:>10}")
    return "\n".join(rows)
