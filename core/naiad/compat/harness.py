"""``naiad compat-test PATH``: Triton's own language tests with naiad standing in for triton.

Runs ``test_core.py`` and ``test_standard.py`` from PATH (unmodified; never copied into naiad) in
a pytest subprocess with :mod:`naiad.compat.pytest_plugin`, on the tests Triton marks
``interpreter`` (``-m interpreter``), and prints pass/fail/skip counts and a histogram of the
failures by root cause (exception type + message head). ``--peer triton-interpreter`` runs the
same selection on Triton's interpreter (``TRITON_INTERPRET=1``) for the baseline; ``--against``
compares with a saved report of the other peer: how many of the baseline's passes naiad passes.
"""
from __future__ import annotations

import collections
import json
import os
import re
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
    p = Path(path)
    if p.is_file():
        return [str(p)]
    if not p.is_dir():
        raise NaiadError(f"no such file or folder: {path}")
    files = [str(p / f) for f in TEST_FILES if (p / f).is_file()]
    if not files:
        raise NaiadError(f"{path} holds neither of Triton's {', '.join(TEST_FILES)}")
    return files


def pytest_command(files, report_path, keyword=None, junit=None, maxfail=None,
                   extra=()) -> list[str]:
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
    return cmd + list(extra)


def show(report: str, against: str | None = None) -> int:
    """Print the summary of a saved report (and its comparison with another)."""
    with open(report) as f:
        data = json.load(f)
    label = ("Triton interpreter" if data.get("mode") != "naiad"
             else f"naiad {data.get('target') or ''}".strip())
    print(summarize(data, label))
    if against:
        with open(against) as f:
            print(compare(data, json.load(f)))
    return 0


def run_compat(path, backend="reference", keyword=None, extra=(), peer="naiad", junit=None,
               maxfail=None, timeout=None, report=None, against=None) -> int:
    """Run the selection, print the summary; returns 0 when a report was produced."""
    files = test_files(path)
    env = dict(os.environ)
    env["NAIAD_COMPAT_PEER"] = peer
    if peer == "naiad":
        env["NAIAD_COMPAT_TARGET"] = backend
    else:
        env["TRITON_INTERPRET"] = "1"
    if timeout:
        env["NAIAD_COMPAT_TIMEOUT"] = str(timeout)
    with tempfile.TemporaryDirectory(prefix="naiad-compat-") as tmp:
        report_path = report or os.path.join(tmp, "report.json")
        cmd = pytest_command(files, report_path, keyword, junit, maxfail, extra)
        print("running:", " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, cwd=str(Path(files[0]).parent), env=env)
        if not os.path.exists(report_path):
            print(f"naiad compat-test: pytest exited with {rc} and wrote no report",
                  file=sys.stderr)
            return rc or 1
        with open(report_path) as f:
            data = json.load(f)
    label = f"naiad {backend}" if peer == "naiad" else "Triton interpreter"
    print(summarize(data, label))
    if against:
        with open(against) as f:
            other = json.load(f)
        print(compare(data, other))
    return 0


def counts(data: dict) -> collections.Counter:
    return collections.Counter(data["outcomes"].values())


def histogram(data: dict, outcome: str = "failed") -> list[tuple[str, int]]:
    causes = collections.Counter(data["causes"].get(n, "unknown")
                                 for n, o in data["outcomes"].items() if o == outcome)
    return causes.most_common()


def summarize(data: dict, label: str, top: int = 30) -> str:
    c = counts(data)
    total = sum(c.values())
    lines = [f"{label}: {total} tests: {c['passed']} passed, {c['failed']} failed, "
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
    """How many of the baseline's passing tests ``data`` passes (the issue's 97% criterion)."""
    base_pass = {n for n, o in baseline["outcomes"].items() if o == "passed"}
    ours = data["outcomes"]
    both = sum(1 for n in base_pass if ours.get(n) == "passed")
    share = 100.0 * both / len(base_pass) if base_pass else 0.0
    extra = sum(1 for n, o in ours.items() if o == "passed" and n not in base_pass)
    return (f"of the {len(base_pass)} tests the baseline passes, this run passes {both} "
            f"({share:.1f}%); it also passes {extra} the baseline does not")
