"""The pytest plugin ``naiad compat-test`` runs Triton's unit tests under (``-p
naiad.compat.pytest_plugin``).

It supplies what Triton's own ``python/conftest.py`` would (the ``device`` fixture, markers), and
in ``naiad`` mode installs the ``triton`` -> naiad import hook before the test modules are
imported. Every test's outcome is recorded with its root cause (exception type and message head)
and written as JSON for the harness (``--naiad-compat-report FILE``).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from naiad.compat.harness import root_cause

MODE_ENV = "NAIAD_COMPAT_PEER"        # "naiad" (default) or "triton-interpreter"
TARGET_ENV = "NAIAD_COMPAT_TARGET"    # naiad target in naiad mode
TIMEOUT_ENV = "NAIAD_COMPAT_TIMEOUT"  # seconds per test (0: none)


def _mode() -> str:
    return os.environ.get(MODE_ENV, "naiad")


#: Triton dtypes that test modules name at import time (in parametrize lists). Where naiad's
#: language lacks one, the harness process gets a placeholder so the module still collects; a
#: test that uses it then fails with this error instead of the whole file failing to import.
COLLECTION_DTYPES = ("float8e4b15", "float8e4nv", "float8e5", "float8e4b8", "float8e5b16")


class UnsupportedDtype:
    """A Triton dtype naiad does not have (harness placeholder; any use raises)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tl.{self.name} (not supported by naiad)"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise NotImplementedError(f"naiad does not support dtype {self.name}")


def _placeholders_for_collection() -> None:
    import naiad.language as tl

    for name in COLLECTION_DTYPES:
        if not hasattr(tl, name):
            setattr(tl, name, UnsupportedDtype(name))


def _stand_in_for_triton() -> None:
    """naiad mode: ``triton`` is naiad from now on in this (the harness's pytest) process."""
    from naiad.compat import triton_alias

    triton_alias.install()
    _placeholders_for_collection()
    target = os.environ.get(TARGET_ENV)
    if target:
        import naiad

        naiad.set_target(target)


def pytest_addoption(parser):
    parser.addoption("--naiad-compat-report", default=None,
                     help="write the outcome of every test with its root cause as JSON here")
    parser.addoption("--device", default=None,
                     help="device the tests run on (default: cpu for the reference/interpreter, "
                          "cuda for GPU targets)")


def pytest_configure(config):
    if os.environ.get(MODE_ENV, "naiad") == "naiad":   # before the test modules are imported
        _stand_in_for_triton()
    for mark in ("interpreter", "cpu", "multi_gpu", "enable_warmup", "disable_warmup"):
        config.addinivalue_line("markers", f"{mark}: Triton's marker")
    config._naiad_compat = {"outcomes": {}, "causes": {}, "started": time.time()}


def _default_device() -> str:
    if _mode() != "naiad":
        return "cpu"
    from naiad.runtime.targets import current_state

    return "cuda" if current_state().spec.compiled else "cpu"


@pytest.fixture
def device(request):
    return request.config.getoption("--device") or _default_device()


@pytest.fixture
def fresh_knobs():
    if _mode() == "naiad":
        pytest.skip("naiad has no triton.knobs (Triton's compiler settings)")
    from triton._internal_testing import _fresh_knobs_impl

    fresh_function, reset_function = _fresh_knobs_impl()
    try:
        yield fresh_function()
    finally:
        reset_function()


@pytest.fixture
def fresh_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path))
    yield str(tmp_path)


@pytest.fixture
def with_allocator():
    """Triton's fixture: a scratch-memory allocator installed for the test."""
    import triton   # naiad's stand-in in naiad mode, Triton itself otherwise

    def alloc(size, alignment, stream):
        import torch

        return torch.empty(size, dtype=torch.int8, device=_default_device())

    triton.set_allocator(alloc)
    try:
        yield
    finally:
        try:
            triton.set_allocator(None)
        except Exception:  # noqa: BLE001 -- a Triton version that wants an allocator object
            pass


# -- per-test timeout ------------------------------------------------------------------------------
class CompatTimeout(Exception):
    """A test ran longer than the harness allows."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = float(os.environ.get(TIMEOUT_ENV, "0") or 0)
    if limit <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise CompatTimeout(f"test ran longer than {limit:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- outcomes and root causes ----------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    state = item.config._naiad_compat
    nodeid = item.nodeid
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            state["outcomes"][nodeid] = "skipped"
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            state["causes"][nodeid] = str(reason).removeprefix("Skipped: ")[:120]
        elif report.failed:
            state["outcomes"][nodeid] = "failed"
            exc = call.excinfo
            if exc is not None:
                state["causes"][nodeid] = root_cause(exc.typename, exc.value)
            else:
                state["causes"][nodeid] = "unknown"
        elif report.when == "call":
            if hasattr(report, "wasxfail"):
                state["outcomes"][nodeid] = "xfailed"
            else:
                state["outcomes"][nodeid] = "passed"


def pytest_sessionfinish(session, exitstatus):
    state = session.config._naiad_compat
    path = session.config.getoption("--naiad-compat-report")
    if not path:
        return
    with open(path, "w") as f:
        json.dump({"mode": _mode(), "target": os.environ.get(TARGET_ENV),
                   "seconds": time.time() - state["started"], "python": sys.version.split()[0],
                   "outcomes": state["outcomes"], "causes": state["causes"]}, f)
