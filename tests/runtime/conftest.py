"""Fixtures of the runtime tests: a private cache dir, an isolated plugin manager, a stub backend
and a stand-in compiler (see naiad_stub_backend.py)."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from naiad_stub_backend import FakeCompiler, StubBackend  # noqa: E402


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test gets an empty on-disk cache."""
    path = tmp_path / "naiad-cache"
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(path))
    return path


@pytest.fixture
def isolated_pm(monkeypatch):
    """An empty process-wide plugin manager (no entry points) and a clean target state, so the
    tests see exactly the plugins they register, whatever is installed."""
    from naiad.plugins import manager
    from naiad.runtime import targets

    pm = manager.create_plugin_manager(load_entrypoints=False)
    monkeypatch.setattr(manager, "_manager", pm)
    manager.generation += 1
    monkeypatch.setattr(targets, "_env_request", None)
    monkeypatch.setattr(targets, "_default_request", None)
    monkeypatch.setattr(targets, "_default_state", None)
    yield pm
    manager.generation += 1


@pytest.fixture
def stub(isolated_pm):
    """A registered interpreted stub backend named ``stub`` (archs v1/warp 32, v2/warp 64),
    selected as the current target for the test."""
    import naiad

    plugin = StubBackend("stub")
    isolated_pm.register(plugin, name="stub-plugin")
    with naiad.target("stub"):
        yield plugin


@pytest.fixture
def fake_compiler(monkeypatch):
    import naiad.compiler

    fake = FakeCompiler()
    monkeypatch.setattr(naiad.compiler, "compile", fake)
    return fake
