"""The conformance suite prints its seed and replays a case's inputs with --seed."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASE = "conformance/test_elementwise.py"


def _run(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          CASE, "-k", "reference-execute", "--co", *args],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_seed_is_printed_and_settable():
    assert "naiad conformance seed: 4242 (replay with --seed 4242)" in _run("--seed", "4242")
    fresh = [line for line in _run().splitlines() if "naiad conformance seed:" in line]
    assert len(fresh) == 1 and "4242" not in fresh[0]


def test_a_case_stream_depends_only_on_the_seed_and_the_case():
    import numpy as np

    sys.path.insert(0, str(ROOT))
    try:
        from conformance import conftest
    finally:
        sys.path.remove(str(ROOT))
    conftest._SEED[:] = [7]
    a = np.random.default_rng(conftest.case_seed("t.py::test_x[f32]")).random(4)
    b = np.random.default_rng(conftest.case_seed("t.py::test_x[f32]")).random(4)
    c = np.random.default_rng(conftest.case_seed("t.py::test_x[f16]")).random(4)
    conftest._SEED[:] = [8]
    d = np.random.default_rng(conftest.case_seed("t.py::test_x[f32]")).random(4)
    assert np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(a, d)
