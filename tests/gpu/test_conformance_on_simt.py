"""A slice of the shared conformance suite's *execute* tier on the CPU SIMT backend
(simt_backend.py): the core lowering's results compared with numpy and the reference executor.

The whole suite runs the same way (about a minute)::

    PYTHONPATH=core:backends/reference:backends/nvidia:backends/amd:tests/gpu \\
        python -m pytest conformance --backend=simt -p simt_backend
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backend", ["simt:w8", "simt:w16"])
def test_scans_and_atomics_execute_on_simt(backend):
    if not (ROOT / "conformance").is_dir():
        pytest.skip("the conformance suite is not in this checkout")
    env = dict(os.environ)
    paths = [ROOT / "core", ROOT / "backends/reference", ROOT / "backends/nvidia",
             ROOT / "backends/amd", ROOT / "tests/gpu"]
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in paths] +
                                        [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "simt_backend",
         f"--backend={backend}", "-k", "execute", "conformance/test_scans.py",
         "conformance/test_atomics.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    last = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"\b[1-9]\d* passed", last) and "failed" not in last, tail
