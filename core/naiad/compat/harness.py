"""``naiad compat-test PATH``: Triton's own language tests with naiad standing in for triton.

Runs ``test_core.py`` and ``test_standard.py`` from PATH (unmodified; never copied into naiad) in
a pytest subprocess with :mod:`naiad.compat.pytest_plugin`, on the tests Triton marks
``interpreter`` (``-m interpreter``), and prints pass/fail/skip counts and a histogram of the
failures by root cause (exception type + message head). ``--peer triton-interpreter`` runs the
same selection on Triton's interpreter (``TRITON_INTERPRET=1``) for the CPU baseline, ``--peer
triton`` on compiled Triton (device=cuda) for the GPU baseline; ``--against`` compares with a
saved report of the other peer: how many of the baseline's passes naiad passes, on the tests both
ran. ``--sample 1/N`` / ``--shard I/N`` keep a deterministic share of the tests (every N-th id in
sorted order) and ``-n N`` runs them in N pytest-xdist workers, so a GPU run fits a time budget.
"""
from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import NaiadError

TEST_FILES = ("test_core.py", "test_standard.py")

_LOCATION = re.compile(r"^\S+\.py:\d+(:\d+)?:\s*")
_NUMBER = re.compile(r"(?<![A-Za-z_0-9])-?\d+(\.\d+)?")
_QUOTED = re.compile(r"'([^']{0,60})'")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,39}")


def _fold_quoted(match) -> str:
    """A quoted identifier (an attribute or parameter name) stays; other quoted values fold."""
    return match.group(0) if _IDENTIFIER.fullmatch(match.group(1)) else "'…'"
_ANGLED = re.compile(r"<[^<>]{0,200}>")


def root_cause(typename: str, message: str) -> str:
    """``Type: message head`` with locations, numbers, quoted values and ``<...>`` folded (quoted
    identifiers such as a missing attribute's name stay), so the same cause in different tests
    groups together."""
    lines = [ln.strip() for ln in str(message).strip().splitlines() if ln.strip()]
    head = lines[0] if lines else ""
    head = _LOCATION.sub("", head)
    head = _QUOTED.sub(_fold_quoted, head)
    head = _ANGLED.sub("<…>", head)
    head = _NUMBER.sub("N", head)
    if len(head) > 90:
        head = head[:90] + "…"
    return f"{typename}: {head}" if head else typename


def test_files(path: str) -> list[str]:
    """Triton's test files under ``path``, as absolute paths (pytest runs in their folder)."""
    p = Path(path).resolve()
    if p.is_file():
        return [str(p)]
    if not p.is_dir():
        raise NaiadError(f"no such file or folder: {path}")
    files = [str(p / f) for f in TEST_FILES if (p / f).is_file()]
    if not files:
        raise NaiadError(f"{path} holds neither of Triton's {', '.join(TEST_FILES)}")
    return files


PEERS = ("naiad", "triton-interpreter", "triton")


def pytest_command(files, report_path, keyword=None, junit=None, maxfail=None,
                   extra=(), shard=None, workers=None) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", *files, "-m", "interpreter",
           "-p", "naiad.compat.pytest_plugin", "-p", "no:cacheprovider", "-q", "--no-header",
           "-o", "addopts=", "--tb=no", "-rN", f"--naiad-compat-report={report_path}",
           "-W", "ignore::DeprecationWarning", "-W", "ignore::UserWarning"]
    if keyword:
        cmd += ["-k", keyword]
    if junit:
        cmd += [f"--junitxml={junit}"]
    if maxfail:
        cmd += [f"--maxfail={maxfail}"]
    if shard:
        cmd += [f"--naiad-compat-shard={shard}"]
    if workers:
        cmd += ["-n", str(workers)]
    return cmd + list(extra)


def shard_from(sample: str | None, shard: str | None) -> str | None:
    """``--sample 1/N`` is shard 1 of N; the two cannot be combined."""
    if sample and shard:
        raise NaiadError("give --sample or --shard, not both")
    if sample:
        count = sample.partition("/")[2] if "/" in sample else ""
        if sample.partition("/")[0] != "1" or not count.isdigit() or int(count) < 1:
            raise NaiadError(f"--sample is 1/N (every N-th test), got {sample!r}")
        return f"1/{count}"
    if shard:
        index, sep, count = shard.partition("/")
        if not (sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
            raise NaiadError(f"--shard is I/N with 1 <= I <= N, got {shard!r}")
    return shard


def check_workers(workers: int | None) -> None:
    """``-n N`` needs pytest-xdist; say so instead of pytest's 'unrecognized arguments'."""
    if workers is None:
        return
    if workers < 1:
        raise NaiadError(f"-n wants at least one worker, got {workers}")
    if importlib.util.find_spec("xdist") is None:
        raise NaiadError("-n N runs the tests in parallel through pytest-xdist, which is not "
                         "installed here (pip install pytest-xdist), or leave out -n")


def peer_label(peer: str, target: str | None = None) -> str:
    return {"triton-interpreter": "Triton interpreter", "triton": "Triton (compiled)"}.get(
        peer, f"naiad {target or ''}".strip())


def peer_environment(peer: str, backend: str, timeout=None) -> dict:
    """The harness subprocess's environment for ``peer``."""
    if peer not in PEERS:
        raise NaiadError(f"unknown peer {peer!r}; choose one of {', '.join(PEERS)}")
    env = dict(os.environ)
    env["NAIAD_COMPAT_PEER"] = peer
    env.pop("TRITON_INTERPRET", None)
    if peer == "naiad":
        env["NAIAD_COMPAT_TARGET"] = backend
    elif peer == "triton-interpreter":
        env["TRITON_INTERPRET"] = "1"
    if timeout:
        env["NAIAD_COMPAT_TIMEOUT"] = str(timeout)
    return env


def show(report: str, against: str | None = None) -> int:
    """Print the summary of a saved report (and its comparison with another)."""
    with open(report) as f:
        data = json.load(f)
    print(summarize(data, peer_label(data.get("mode", "triton-interpreter"), data.get("target"))))
    if against:
        with open(against) as f:
            print(compare(data, json.load(f)))
    return 0


def run_compat(path, backend="reference", keyword=None, extra=(), peer="naiad", junit=None,
               maxfail=None, timeout=None, report=None, against=None, sample=None, shard=None,
               workers=None, deadline=None) -> int:
    """Run the selection, print the summary; returns 0 when a report was produced."""
    files = test_files(path)
    env = peer_environment(peer, backend, timeout)
    shard = shard_from(sample, shard)
    check_workers(workers)
    if report:
        report = os.path.abspath(report)
    with tempfile.TemporaryDirectory(prefix="naiad-compat-") as tmp:
        report_path = report or os.path.join(tmp, "report.json")
        cmd = pytest_command(files, report_path, keyword, junit, maxfail, extra, shard, workers)
        print("running:", " ".join(cmd), flush=True)
        rc = run_until(cmd, str(Path(files[0]).parent), env, deadline)
        if not os.path.exists(report_path):
            print(f"naiad compat-test: pytest exited with {rc} and wrote no report",
                  file=sys.stderr)
            return rc or 1
        with open(report_path) as f:
            data = json.load(f)
    print(summarize(data, peer_label(peer, backend)))
    if against:
        with open(against) as f:
            other = json.load(f)
        print(compare(data, other))
    return 0


def run_until(cmd, cwd, env, deadline=None) -> int:
    """Run pytest; at ``deadline`` seconds (or when we are interrupted) interrupt it once with
    SIGINT, so it ends the session and still writes the report of the tests that ran."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env)
    try:
        return proc.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        print(f"naiad compat-test: deadline of {deadline:g} s reached; interrupting pytest",
              file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        try:     # a terminal's Ctrl-C reached pytest too; a `timeout` signal reached only us
            return proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def counts(data: dict) -> collections.Counter:
    return collections.Counter(data["outcomes"].values())


def histogram(data: dict, outcome: str = "failed") -> list[tuple[str, int]]:
    causes = collections.Counter(data["causes"].get(n, "unknown")
                                 for n, o in data["outcomes"].items() if o == outcome)
    return causes.most_common()


def summarize(data: dict, label: str, top: int = 30) -> str:
    c = counts(data)
    total = sum(c.values())
    where = f", shard {data['shard']}" if data.get("shard") else ""
    where += f", {data['workers']} workers" if data.get("workers") else ""
    lines = [f"{label}: {total} tests{where}: {c['passed']} passed, {c['failed']} failed, "
             f"{c['skipped']} skipped" + (f", {c['xfailed']} xfailed" if c["xfailed"] else "")
             + f" ({data.get('seconds', 0):.0f} s)"]
    hist = histogram(data)
    if hist:
        lines.append(f"failures by root cause (top {min(top, len(hist))} of {len(hist)}):")
        lines += [f"  {n:6d}  {cause}" for cause, n in hist[:top]]
    skips = histogram(data, "skipped")
    if skips:
        lines.append(f"skip reasons (top {min(10, len(skips))}):")
        lines += [f"  {n:6d}  {cause}" for cause, n in skips[:10]]
    return "\n".join(lines)


def compare(data: dict, baseline: dict) -> str:
    """How many of the baseline's passing tests ``data`` passes (the issue's 97% criterion), on
    the tests both reports ran (a sample against a full run compares on the sample)."""
    ours, theirs = data["outcomes"], baseline["outcomes"]
    common = ours.keys() & theirs.keys()
    base_pass = {n for n in common if theirs[n] == "passed"}
    both = sum(1 for n in base_pass if ours[n] == "passed")
    share = 100.0 * both / len(base_pass) if base_pass else 0.0
    extra = sum(1 for n in common if ours[n] == "passed" and n not in base_pass)
    note = ""
    if data.get("shard") != baseline.get("shard"):
        note = (f" (shards differ: {data.get('shard') or 'all'} vs "
                f"{baseline.get('shard') or 'all'})")
    scope = "" if len(common) == len(ours) == len(theirs) else \
        f"on the {len(common)} tests both ran{note}: "
    return (f"{scope}of the {len(base_pass)} tests the baseline passes, this run passes {both} "
            f"({share:.1f}%); it also passes {extra} the baseline does not")
