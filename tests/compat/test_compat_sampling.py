"""The compat harness's GPU-run features: deterministic samples/shards, the compiled-Triton peer,
parallel workers through pytest-xdist, and comparisons restricted to the tests both reports ran."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from naiad.compat import harness, pytest_plugin
from naiad.errors import NaiadError


def test_shards_partition_the_sorted_ids_whatever_their_order():
    ids = [f"t[{i:02d}]" for i in range(10)]
    shuffled = ids[::-1][3:] + ids[::-1][:3]
    shards = [pytest_plugin.shard_of(shuffled, i, 3) for i in (1, 2, 3)]
    assert shards[0] == {"t[00]", "t[03]", "t[06]", "t[09]"}
    assert set().union(*shards) == set(ids)
    assert sum(len(s) for s in shards) == len(ids)


@pytest.mark.parametrize("sample, shard, wanted", [("1/4", None, "1/4"), (None, "3/5", "3/5"),
                                                   (None, None, None)])
def test_sample_is_the_first_shard(sample, shard, wanted):
    assert harness.shard_from(sample, shard) == wanted


@pytest.mark.parametrize("sample, shard", [("2/4", None), ("1/0", None), ("x", None),
                                           (None, "5/4"), (None, "0/3"), ("1/2", "1/2")])
def test_bad_samples_and_shards_are_usage_errors(sample, shard):
    with pytest.raises(NaiadError, match="--sample|--shard"):
        harness.shard_from(sample, shard)


def test_workers_without_xdist_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "xdist" else real(name, *a))
    with pytest.raises(NaiadError, match="pytest-xdist.*not installed"):
        harness.check_workers(4)
    harness.check_workers(None)


def test_compiled_triton_peer_runs_without_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    env = harness.peer_environment("triton", "nvidia")
    assert env["NAIAD_COMPAT_PEER"] == "triton" and "TRITON_INTERPRET" not in env
    assert harness.peer_environment("triton-interpreter", "nvidia")["TRITON_INTERPRET"] == "1"
    assert harness.peer_environment("naiad", "nvidia")["NAIAD_COMPAT_TARGET"] == "nvidia"
    with pytest.raises(NaiadError, match="unknown peer"):
        harness.peer_environment("cuda", "nvidia")


def test_compare_on_a_sample_counts_only_the_tests_both_ran():
    ours = {"shard": "1/2", "outcomes": {"a": "passed", "c": "failed"}}
    base = {"outcomes": {"a": "passed", "b": "passed", "c": "passed", "d": "failed"}}
    text = harness.compare(ours, base)
    assert text.startswith("on the 2 tests both ran (shards differ: 1/2 vs all)")
    assert "of the 2 tests the baseline passes, this run passes 1 (50.0%)" in text


SAMPLED_TESTS = textwrap.dedent('''
    import os
    import pytest


    @pytest.mark.interpreter
    @pytest.mark.parametrize("i", range(8))
    def test_numbered(i, device):
        assert device == "cpu"
        if i == 4:
            raise ValueError("expected 3 but got 4")
        if i == 6:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
''')


def _compat(*args, cwd):
    return subprocess.run([sys.executable, "-m", "naiad", "compat-test", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("workers", [None, 2])
def test_sampled_run_records_the_shard_and_the_root_causes(tmp_path, workers):
    if workers and importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed here (the -n path needs it)")
    (tmp_path / "test_core.py").write_text(SAMPLED_TESTS)
    report = tmp_path / "r.json"
    args = ["--sample", "1/2", "--report", str(report)] + (["-n", str(workers)] if workers else [])
    done = _compat(str(tmp_path), *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    assert data["shard"] == "1/2"
    assert sorted(data["outcomes"]) == [f"test_core.py::test_numbered[{i}]" for i in (0, 2, 4, 6)]
    assert data["causes"]["test_core.py::test_numbered[4]"] == "ValueError: expected N but got N"
    assert "illegal memory access" in data["causes"]["test_core.py::test_numbered[6]"]
    assert "4 tests, shard 1/2" in done.stdout and "2 passed, 2 failed" in done.stdout


def test_relative_test_folder_resolves_to_absolute_files(tmp_path, monkeypatch):
    """pytest runs in the tests' folder: a relative path (e.g. `.carry/triton-tests` on the
    device machine) must reach it as absolute files, or nothing is collected."""
    from naiad.compat.harness import test_files

    folder = tmp_path / ".hidden_tests"
    folder.mkdir()
    (folder / "test_core.py").write_text("")
    monkeypatch.chdir(tmp_path)
    (got,) = test_files(".hidden_tests")
    assert got == str(folder / "test_core.py") and got.startswith("/")


def test_checks_an_older_triton_lacks_are_backfilled(tmp_path, monkeypatch):
    """Triton 3.6's `_internal_testing` lacks `is_*` checks that 3.9's test files import:
    each one the files import answers False, so the modules import (else 0 tests ran). An
    old `triton._internal_testing` is stood in by a bare module (no Triton needed)."""
    import sys
    import types

    from naiad.compat.pytest_plugin import _backfill_internal_testing

    testing = types.ModuleType("triton._internal_testing")
    testing.is_cuda = lambda: True
    monkeypatch.setitem(sys.modules, "triton", types.ModuleType("triton"))
    monkeypatch.setitem(sys.modules, "triton._internal_testing", testing)
    tests = tmp_path / "test_core.py"
    tests.write_text("from triton._internal_testing import (\n    is_cuda,\n"
                     "    is_made_up_family,\n)\n")
    _backfill_internal_testing([str(tests)])
    assert testing.is_made_up_family() is False and testing.is_cuda() is True
    assert testing.is_hip_rdna3() is False          # one of the known names
