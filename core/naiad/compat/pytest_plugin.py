"""The pytest plugin ``naiad compat-test`` runs Triton's unit tests under (``-p
naiad.compat.pytest_plugin``).

It supplies what Triton's own ``python/conftest.py`` would (the ``device`` fixture, markers), and
in ``naiad`` mode installs the ``triton`` -> naiad import hook before the test modules are
imported. Every test's outcome is recorded with its root cause (exception type and message head)
and written as JSON for the harness (``--naiad-compat-report FILE``).

Under pytest-xdist (``-n N``) the workers attach each root cause to the test's report and the
controller records and writes them; ``--naiad-compat-shard i/n`` keeps a deterministic share of
the selected tests (every n-th id in sorted order, starting at the i-th), the same in every worker.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time

import pytest

from naiad.compat.harness import root_cause

MODE_ENV = "NAIAD_COMPAT_PEER"        # "naiad" (default), "triton-interpreter" or "triton"
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
    parser.addoption("--naiad-compat-shard", default=None, metavar="I/N",
                     help="run only the I-th of every N selected tests in sorted id order")
    parser.addoption("--device", default=None,
                     help="device the tests run on (default: cpu for the reference/interpreter, "
                          "cuda for GPU targets)")


def pytest_configure(config):
    if _mode() == "naiad":   # before the test modules are imported
        _stand_in_for_triton()
    elif _mode() == "triton":
        _backfill_internal_testing(config.args)
    for mark in ("interpreter", "cpu", "multi_gpu", "enable_warmup", "disable_warmup"):
        config.addinivalue_line("markers", f"{mark}: Triton's marker")
    config._naiad_compat = {"outcomes": {}, "causes": {}, "started": time.time()}


def _backfill_internal_testing(paths=()) -> None:
    """Compiled Triton older than the test files (3.6 on the H200 against 3.9's tests): the
    ``is_*`` hardware/mode checks its ``triton._internal_testing`` lacks answer False (they ask
    about newer chips, other vendors' families or Triton's compile-warmup mode), so the test
    modules still import: the known ones and every ``is_*`` the test files import from it."""
    import importlib
    import re

    wanted = set(BACKFILLED_CHECKS)
    for path in paths:
        try:
            text = open(str(path).split("::")[0], encoding="utf-8").read()
        except OSError:
            continue
        for block in re.findall(r"from triton\._internal_testing import \(([^)]*)\)", text):
            wanted.update(re.findall(r"\b(is_\w+)\b", block))
    testing = importlib.import_module("triton._internal_testing")
    for name in sorted(wanted):
        if not hasattr(testing, name):
            setattr(testing, name, lambda: False)


#: ``triton._internal_testing`` checks the test files import that older Triton releases lack
BACKFILLED_CHECKS = ("is_compile_warmup", "is_sm12x", "is_hip_rdna4m", "is_hip_gfx1250",
                     "is_hip_cdna", "is_hip_rdna4", "is_hip_cdna4", "is_xpu", "is_hip_rdna3",
                     "is_hip_cdna2", "is_hip_cdna3")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n) with 1 <= i <= n; anything else is a usage error."""
    index, sep, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise pytest.UsageError(f"a shard is I/N with 1 <= I <= N, got {text!r}")
    return i, n


def shard_of(nodeids, index: int, count: int) -> set:
    """The ids in shard ``index`` of ``count``: every ``count``-th id of the sorted list,
    starting at the ``index``-th (1-based)."""
    return set(sorted(nodeids)[index - 1::count])


@pytest.hookimpl(trylast=True)     # after -m / -k deselected theirs
def pytest_collection_modifyitems(config, items):
    text = config.getoption("--naiad-compat-shard")
    if not text:
        return
    index, count = parse_shard(text)
    keep = shard_of([item.nodeid for item in items], index, count)
    dropped = [item for item in items if item.nodeid not in keep]
    items[:] = [item for item in items if item.nodeid in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)


def _default_device() -> str:
    if _mode() == "triton":
        return "cuda"
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
    if _in_xdist_worker(item.config):
        # a test stuck outside Python (a GPU kernel that never ends) never sees the alarm: the
        # watchdog ends the worker, xdist records the test as crashed and starts a fresh one
        faulthandler.dump_traceback_later(2 * limit + 30, exit=True)

    def expire(signum, frame):
        raise CompatTimeout(f"test ran longer than {limit:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


# -- outcomes and root causes ----------------------------------------------------------------------
CAUSE_KEY = "naiad_compat_cause"


def _in_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the root cause to the report, so it reaches the xdist controller with it."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        cause = root_cause(call.excinfo.typename, call.excinfo.value)
        report.user_properties.append((CAUSE_KEY, cause))
        if _in_xdist_worker(item.config) and _sticky_device_error(cause):
            item.config._naiad_compat_restart = True


def pytest_runtest_logreport(report):
    """Record the outcome (runs in the controller under xdist, else in the one process): the call
    phase's, a setup that did not pass, or a worker crash (xdist's report of it)."""
    state = _STATE.get("state")
    if state is None:
        return
    nodeid, outcomes, causes = report.nodeid, state["outcomes"], state["causes"]
    if report.when != "call":
        crashed = report.when not in ("setup", "teardown") and report.failed
        if not (crashed or (report.when == "setup" and not report.passed)):
            return
        if outcomes.get(nodeid) == "failed":    # a crash after the failure that caused it
            return
    if report.skipped:
        outcomes[nodeid] = "skipped"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        causes[nodeid] = str(reason).removeprefix("Skipped: ")[:120]
    elif report.failed:
        outcomes[nodeid] = "failed"
        causes[nodeid] = dict(report.user_properties or ()).get(CAUSE_KEY) or _crash_cause(report)
    else:
        outcomes[nodeid] = "xfailed" if hasattr(report, "wasxfail") else "passed"


def _crash_cause(report) -> str:
    text = str(report.longrepr or "")
    if "worker" in text and "crashed" in text:
        return "WorkerCrash: the test process died (signal, device fault or watchdog)"
    return "unknown"


#: messages of device errors after which a CUDA/HIP context is unusable for the process
STICKY_DEVICE_ERRORS = ("illegal memory access", "ILLEGAL_ADDRESS", "unspecified launch failure",
                        "LAUNCH_FAILED", "misaligned address", "MISALIGNED_ADDRESS",
                        "illegal instruction", "ILLEGAL_INSTRUCTION", "device-side assert")


def _sticky_device_error(cause: str) -> bool:
    return any(marker in cause for marker in STICKY_DEVICE_ERRORS)


def pytest_runtest_teardown(item, nextitem):
    """An xdist worker whose device context a test broke ends after that test; xdist starts a
    fresh worker for the rest, so one fault does not fail every later test of the worker."""
    if getattr(item.config, "_naiad_compat_restart", False):
        sys.stderr.flush()
        os._exit(3)


_STATE: dict = {}


def pytest_sessionstart(session):
    _STATE["state"] = session.config._naiad_compat
    _STATE["config"] = session.config


def pytest_sessionfinish(session, exitstatus):
    _write_report(session.config)


def pytest_keyboard_interrupt(excinfo):
    """Interrupted (``--deadline``, Ctrl-C): write what ran now, before xdist tears its
    workers down (which may wait on a stuck one); sessionfinish writes it again if reached."""
    config = _STATE.get("config")
    if config is not None:
        _write_report(config)


def _write_report(config) -> None:
    path = config.getoption("--naiad-compat-report")
    if not path or _in_xdist_worker(config):
        return
    state = config._naiad_compat
    with open(path, "w") as f:
        json.dump({"mode": _mode(), "target": os.environ.get(TARGET_ENV),
                   "shard": config.getoption("--naiad-compat-shard"),
                   "workers": _worker_count(config),
                   "seconds": time.time() - state["started"], "python": sys.version.split()[0],
                   "outcomes": state["outcomes"], "causes": state["causes"]}, f)


def _worker_count(config) -> int:
    try:
        return int(config.getoption("numprocesses") or 0)
    except (ValueError, TypeError):
        return 0
