"""The example out-of-tree backend (docs/examples/backend_plugin): installed with pip, found
through its entry point, built on the SDK only, and it passes the conformance suite."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from example_install import ROOT, env_with, install_example

PACKAGE = ROOT / "docs" / "examples" / "backend_plugin" / "naiad_example"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    return install_example("backend_plugin", tmp_path_factory.mktemp("example_backend"))


def test_the_example_imports_only_the_sdk():
    allowed = {"naiad.backend", "naiad.plugins", "naiad.errors", "naiad.ir"}
    for path in PACKAGE.rglob("*.py"):
        for module in re.findall(r"^\s*(?:from|import)\s+(naiad[\w.]*)", path.read_text(), re.M):
            assert module in allowed, f"{path.name} imports {module}"


def test_naiad_lists_the_installed_backend(installed):
    out = subprocess.run([sys.executable, "-m", "naiad.cli", "targets"], env=env_with(installed),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "naiad_example.plugin [naiad-example-backend 0.1.0]" in out.stdout
    assert re.search(r"^\s+example\s+1\s+interpreted\s+yes \(host\)\s+example", out.stdout, re.M)


def test_the_example_passes_the_conformance_suite(installed, tmp_path):
    env = env_with(installed)
    env["NAIAD_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "conformance", "--backend=example", "-x"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail + proc.stderr[-2000:]
    total = re.search(r"^example\s+total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", proc.stdout, re.M)
    assert total, tail
    passed, failed, skipped, _ = map(int, total.groups())
    # the same cases as on the reference backend (a few skip there too, each with its reason)
    assert passed > 1500 and failed == 0 and skipped < 10, tail
