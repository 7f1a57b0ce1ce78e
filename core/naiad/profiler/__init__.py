"""A stand-in for the part of Triton's profiler (``triton.profiler``, "proton") that scripts call:
sessions (``start``/``activate``/``deactivate``/``finalize``), named ``scope``s with user metrics,
and -- with ``hook="triton"`` -- one entry per kernel launch named and measured by the kernel's
``@jit(launch_metadata=...)`` function. ``naiad.profiler.viewer`` reads the file back.

Why a stand-in: Triton's tutorials 09 and 10 profile with proton and print its tree; under
``naiad run`` they import ``triton.profiler``. Proton records GPU activity through CUPTI/roctracer;
this records **host wall time with the device synchronised before and after** each scope and
launch (``naiad.testing``'s synchroniser), so a time includes the launch overhead that CUPTI
would not count. The file (``<name>.hatchet``, JSON) has proton's tree shape -- frames with
``count``, ``time (ns)`` and the metrics -- but is written by naiad, not by proton.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import time
from dataclasses import dataclass, field

__all__ = ["start", "activate", "deactivate", "finalize", "scope", "enter_scope", "exit_scope"]


@dataclass
class _Node:
    name: str
    count: int = 0
    time_ns: int = 0
    metrics: dict = field(default_factory=dict)
    children: dict = field(default_factory=dict)

    def child(self, name: str) -> "_Node":
        return self.children.setdefault(name, _Node(name))

    def add(self, elapsed_ns: int, metrics: dict) -> None:
        self.count += 1
        self.time_ns += elapsed_ns
        for k, v in (metrics or {}).items():
            if isinstance(v, (int, float)):
                self.metrics[k] = self.metrics.get(k, 0) + v

    def as_json(self) -> dict:
        return {"frame": {"name": self.name, "type": "function"},
                "metrics": {"count": self.count, "time (ns)": self.time_ns, **self.metrics},
                "children": [c.as_json() for c in self.children.values()]}


class _Session:
    def __init__(self, name: str, hook: str | None):
        self.name, self.hook = name, hook
        self.root = _Node("ROOT")
        self.stack = [self.root]
        self.active = True


_sessions: list[_Session] = []


def _sync() -> None:
    from ..testing import _launcher, _synchronizer

    _synchronizer(_launcher())()


def _recording() -> list[_Session]:
    return [s for s in _sessions if s.active]


def start(name: str = "proton", *, context: str = "shadow", data: str = "tree",
          backend: str | None = None, hook: str | None = None, **_ignored) -> int:
    """Start a session writing ``<name>.hatchet`` at :func:`finalize`; returns its id.
    ``hook="triton"`` also records every kernel launch (see the module docstring)."""
    if data != "tree":
        raise ValueError(f"naiad.profiler records data='tree' only, not {data!r}")
    _sessions.append(_Session(name, hook))
    _install_launch_observer()
    return len(_sessions) - 1


def _select(session: int | None) -> list[_Session]:
    if session is None:
        return list(_sessions)
    if not 0 <= session < len(_sessions):
        raise ValueError(f"no profiling session {session} (started: {len(_sessions)})")
    return [_sessions[session]]


def activate(session: int | None = None) -> None:
    for s in _select(session):
        s.active = True


def deactivate(session: int | None = None) -> None:
    for s in _select(session):
        s.active = False


def finalize(session: int | None = None, output_format: str = "hatchet") -> None:
    """Write the session(s) to ``<name>.hatchet`` and end them."""
    if output_format != "hatchet":
        raise ValueError(f"naiad.profiler writes 'hatchet' files only, not {output_format!r}")
    for s in _select(session):
        with open(f"{s.name}.hatchet", "w") as f:
            json.dump([s.root.as_json()], f)
    if session is None:
        _sessions.clear()
    _install_launch_observer()


def enter_scope(name: str) -> None:
    for s in _recording():
        s.stack.append(s.stack[-1].child(name))


def exit_scope(name: str | None = None, elapsed_ns: int = 0, metrics: dict | None = None):
    for s in _recording():
        if len(s.stack) > 1:
            s.stack.pop().add(elapsed_ns, metrics)


@contextlib.contextmanager
def scope(name: str, metrics: dict | None = None):
    """Time the block (device synchronised on both sides) under ``name`` with ``metrics``
    (``flops16``, ``bytes``, ...) added to the entry."""
    if not _recording():
        yield
        return
    _sync()
    sessions = _recording()
    for s in sessions:
        s.stack.append(s.stack[-1].child(name))
    t0 = time.perf_counter_ns()
    try:
        yield
    finally:
        _sync()
        elapsed = time.perf_counter_ns() - t0
        for s in sessions:
            if len(s.stack) > 1:
                s.stack.pop().add(elapsed, metrics)


# -- kernel launches (hook="triton") ------------------------------------------------------------

class _KernelInfo:
    """What Triton's ``launch_metadata(grid, kernel, args)`` reads of ``kernel``."""

    def __init__(self, fn):
        self.name = fn.__name__


def _observe(fn, grid, launch):
    """The launch of ``fn[grid]`` timed into the sessions recording kernel launches."""
    if not any(s.hook == "triton" for s in _recording()):
        return launch

    def timed(*args, **kwargs):
        meta_fn = getattr(fn, "jit_keywords", {}).get("launch_metadata")
        metrics = {}
        name = fn.__name__
        if meta_fn is not None:
            try:
                bound = inspect.signature(fn.fn).bind_partial(*args, **kwargs)
                bound.apply_defaults()
                metrics = dict(meta_fn(grid, _KernelInfo(fn), dict(bound.arguments)) or {})
            except Exception:   # the user's metadata function: never break the launch
                metrics = {}
            name = str(metrics.pop("name", name))
        with scope(name, metrics):
            return launch(*args, **kwargs)

    return timed


def _install_launch_observer() -> None:
    from ..runtime import launch_hooks

    launch_hooks.observer = _observe if any(s.hook == "triton" for s in _sessions) else None
