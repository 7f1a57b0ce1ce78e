"""pip-install one of docs/examples' plugin distributions into a temporary folder (for tests)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pip_install(src: Path, target: Path) -> None:
    """pip-install ``src`` into the folder ``target``: first with the environment's own
    setuptools (offline, fast), else with an isolated build (fetches setuptools)."""
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
            "--disable-pip-version-check", "--target", str(target)]
    attempts = [base + ["--no-build-isolation", str(src)], base + [str(src)]]
    logs = []
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            return
        logs.append(f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    pytest.fail("could not pip-install the example plugin:\n" + "\n".join(logs))


def install_example(name: str, work: Path) -> Path:
    """Install ``docs/examples/<name>`` from a copy (so pip's build/ and *.egg-info never land in
    the repository); returns the folder to put on PYTHONPATH."""
    src = work / "src"
    shutil.copytree(ROOT / "docs" / "examples" / name, src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = work / "site"
    pip_install(src, site)
    return site


def env_with(site: Path, *extra: Path) -> dict:
    """The environment of a subprocess that sees the installed example and this checkout."""
    env = dict(os.environ)
    paths = [str(site), *map(str, extra)] + [
        str(ROOT / p) for p in ("core", "backends/reference", "backends/nvidia", "backends/amd")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    env.pop("NAIAD_TARGET", None)
    return env
