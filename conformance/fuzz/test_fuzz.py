"""The fuzz tier: one test per (peer, seed); see docs/conformance.md ("The fuzz tier").

    pytest conformance --backend=simt -p simt_backend --tier=fuzz --seeds 0:500
    pytest conformance --backend=nvidia --tier=fuzz --seeds 10000:14000   # on the H200
    pytest conformance --backend=reference --tier=fuzz --seeds 1234       # replay one seed

Per --backend entry: ``reference`` checks the reference executor's invariants on every seed and
compares it with the SIMT simulator (the real GPU lowering on CPU threads) on a subset;
``nvidia``/``amd`` execute and compare when their device is present, else compile (the compile
tier); ``simt`` compares every seed; ``triton`` compares with Triton's interpreter (skipped when
triton is not importable). A failure is reduced to a small repro printed with its seed; a failure
explained by a known divergence (divergences.py) is an xfail naming it.
"""
from __future__ import annotations

import importlib.util

import pytest

from .generator import generate
from .reducer import reduce_program
from .runner import ROOT, run_case
from .seeds import generator_limits, parse_seeds

#: CI's deterministic default seeds per peer (well under a minute each on 2 cores)
DEFAULT_SEEDS = {"reference": "0:300", "simt": "0:100", "triton": "0:300", "other": "0:60"}
#: with --backend=reference and no --seeds, also run this many seeds against the SIMT simulator
#: (a test-only backend of the source checkout; an installed suite has no tests/ folder)
SIMT_SUBSET = "0:30"
SIMT_BACKEND = ROOT / "tests" / "gpu" / "simt_backend.py"


def _explicit_seed(config):
    """The suite-wide ``--seed N`` (added for the other tiers), when given on the command line."""
    args = [str(a) for a in config.invocation_params.args]
    for i, a in enumerate(args):
        if a == "--seed" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--seed="):
            return a.split("=", 1)[1]
    return None


def _cases(config):
    backends = [b.strip() for b in config.getoption("--backend").split(",") if b.strip()]
    seeds = config.getoption("--seeds") or _explicit_seed(config)
    for backend in backends:
        base = backend.split(":", 1)[0]
        chosen = seeds or DEFAULT_SEEDS.get(base, DEFAULT_SEEDS["other"])
        for seed in parse_seeds(chosen):
            yield backend, seed
        if base == "reference" and not seeds and SIMT_BACKEND.exists():
            for seed in parse_seeds(SIMT_SUBSET):
                yield "simt", seed


def pytest_generate_tests(metafunc):
    if "fuzz_case" in metafunc.fixturenames:
        cases = list(_cases(metafunc.config))
        metafunc.parametrize("fuzz_case", cases,
                             ids=[f"{b}-fuzz-seed{s}" for b, s in cases])


def test_fuzz(fuzz_case):
    peer, seed = fuzz_case
    if peer == "triton" and importlib.util.find_spec("triton") is None:
        pytest.skip("Triton is not installed (the Triton peer is optional)")
    program = generate(seed, **generator_limits(peer))
    outcome = run_case(program, peer)
    if not outcome.failed:
        return
    replay = f"pytest conformance --backend={peer} --tier=fuzz --seeds {seed}"
    if outcome.known:
        pytest.xfail(f"seed {seed}: known divergence ({'; '.join(outcome.known)}): "
                     f"{outcome.detail}")
    small = reduce_program(program, peer, outcome, budget=60)
    pytest.fail(f"seed {seed} on {peer}: {outcome.status}: {outcome.detail}\n"
                f"replay: {replay}\nreduced repro:\n{small.source()}", pytrace=False)
