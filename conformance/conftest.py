"""pytest plumbing of the conformance suite: --backend, --skip-list, --seed, tiers, summary table."""
from __future__ import annotations

import os
import zlib
from collections import defaultdict

import numpy as np
import pytest

TIERS = ("compile", "execute")
#: every tier --tier can select; "fuzz" is the random-program tier in conformance/fuzz/
ALL_TIERS = TIERS + ("fuzz",)
_results: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
_BACKENDS: list[str] = ["reference"]
#: the session's seed: --seed N, else fresh; printed in the header and the summary for replay.
_SEED: list[int] = []


def pytest_addoption(parser):
    group = parser.getgroup("naiad conformance")
    group.addoption("--backend", default=os.environ.get("NAIAD_CONFORMANCE_BACKEND", "reference"),
                    help="backend (plugin) under test: reference, nvidia, amd, or a vendor's; "
                         "a target such as nvidia:sm_80 selects an architecture; a comma-separated "
                         "list runs the suite once per backend")
    group.addoption("--skip-list", default=None, metavar="FILE",
                    help="known failures: one 'test-id reason' per line (# comments allowed); "
                         "listed tests are marked xfail with the reason")
    group.addoption("--tier", default=None, metavar="T[,T]",
                    help=f"run only these tiers ({', '.join(ALL_TIERS)}); default: all")
    group.addoption("--seeds", default=None, metavar="A:B|N",
                    help="fuzz tier: the seeds to generate (A:B, B excluded) or one seed N to "
                         "replay; default: a fixed range per backend (conformance/fuzz/README)")
    group.addoption("--seed", type=int, default=None, metavar="N",
                    help="seed of the random inputs (default: a fresh one, printed at the start "
                         "and the end); rerun with --seed N to replay a failure exactly")


def _backends(config) -> list[str]:
    return [b.strip() for b in config.getoption("--backend").split(",") if b.strip()]


def _device_present(target_name: str) -> bool:
    from naiad.runtime.targets import resolve_target

    _, spec = resolve_target(target_name)
    if not spec.compiled:
        return True
    try:
        return spec.detect_arch() is not None
    except Exception:
        return False


def pytest_generate_tests(metafunc):
    if "conformance_tier" in metafunc.fixturenames:
        metafunc.parametrize("conformance_backend", _backends(metafunc.config))
        metafunc.parametrize("conformance_tier", TIERS)


@pytest.fixture
def conformance_tier(request):
    return request.param


@pytest.fixture
def conformance_backend(request):
    return request.param


def case_seed(nodeid: str) -> list[int]:
    """Each case's inputs depend only on the session seed and its own id, so ``--seed N``
    replays a case the same way whether it runs alone or with the whole suite."""
    return [_SEED[0], zlib.crc32(nodeid.encode())]


@pytest.fixture
def conf(request, conformance_backend, conformance_tier):
    """The case's view of the backend under test, with fresh random inputs every run."""
    from .harness import Conformance

    rng = np.random.default_rng(case_seed(request.node.nodeid))
    return Conformance(conformance_backend, conformance_tier, rng,
                       _device_present(conformance_backend))


def _read_skip_list(path: str) -> dict[str, str]:
    entries = {}
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            test_id, _, reason = line.partition(" ")
            entries[test_id] = reason.strip() or f"listed in {path}:{lineno}"
    return entries


def pytest_configure(config):
    _BACKENDS[:] = _backends(config)
    seed = config.getoption("--seed")
    _SEED[:] = [seed if seed is not None else int.from_bytes(os.urandom(4), "little")]


def pytest_report_header(config):
    return f"naiad conformance seed: {_SEED[0]} (replay with --seed {_SEED[0]})"


def _select_tiers(config, items):
    wanted = config.getoption("--tier")
    if not wanted:
        return
    tiers = {t.strip() for t in wanted.split(",") if t.strip()}
    unknown = tiers - set(ALL_TIERS)
    if unknown:
        raise pytest.UsageError(f"--tier: unknown tier(s) {sorted(unknown)}; "
                                f"choose from {', '.join(ALL_TIERS)}")
    keep, drop = [], []
    for item in items:
        tier = _tier(item.nodeid)
        (drop if tier != "-" and tier not in tiers else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collection_modifyitems(config, items):
    _select_tiers(config, items)
    path = config.getoption("--skip-list")
    if not path:
        return
    entries = _read_skip_list(path)
    for item in items:
        for test_id, reason in entries.items():
            if item.nodeid == test_id or item.nodeid.endswith("/" + test_id) \
                    or item.nodeid.endswith("::" + test_id) or item.name == test_id \
                    or getattr(item, "originalname", None) == test_id:
                item.add_marker(pytest.mark.xfail(reason=f"skip-list: {reason}", strict=False))


def _category(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return module.removeprefix("test_").removesuffix(".py")


def _params(nodeid: str) -> list[str]:
    return nodeid.rsplit("[", 1)[1].rstrip("]").split("-") if "[" in nodeid else []


def _tier(nodeid: str) -> str:
    return next((p for p in reversed(_params(nodeid)) if p in ALL_TIERS), "-")


def _backend_of(nodeid: str, backends: list[str]) -> str:
    params = _params(nodeid)
    return next((b for b in backends if b in params), backends[0])


def pytest_runtest_logreport(report):
    if "conformance" not in report.nodeid and "naiad_conformance" not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        key = (_backend_of(report.nodeid, _BACKENDS), _category(report.nodeid), _tier(report.nodeid))
        _results[key][outcome] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _results:
        return
    tr = terminalreporter
    tr.section("naiad conformance summary")
    tr.write_line(f"seed {_SEED[0]}: replay with --seed {_SEED[0]}")
    cols = ("passed", "failed", "skipped", "xfailed")
    tr.write_line(f"{'backend':<11}{'category':<16}{'tier':<9}" + "".join(f"{c:>9}" for c in cols))
    totals = defaultdict(lambda: defaultdict(int))
    for (backend, cat, tier), counts in sorted(_results.items()):
        tr.write_line(f"{backend:<11}{cat:<16}{tier:<9}"
                      + "".join(f"{counts.get(c, 0):>9}" for c in cols))
        for c in cols:
            totals[backend][c] += counts.get(c, 0)
    for backend, counts in totals.items():
        tr.write_line(f"{backend:<11}{'total':<25}" + "".join(f"{counts[c]:>9}" for c in cols))
