"""Command line for long runs and triage (the pytest tier runs the same cases, one test each)::

    python -m conformance.fuzz --peer simt --seeds 0:500 [--jobs 8] [--reduce]
    python -m conformance.fuzz --show SEED

Prints one line per failing seed (``known`` plus the tags when a divergence in divergences.py
explains it) and a summary by status; exits 1 when a failure is new. ``--jobs N`` runs the seeds
in N worker processes (spawned, so each initialises its own GPU context).
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import sys
import time

from .generator import generate
from .divergences import known_tags
from .runner import run_seed
from .seeds import generator_limits, parse_seeds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.fuzz")
    ap.add_argument("--peer", default="reference",
                    help="reference | simt | nvidia | amd | triton | a naiad target")
    ap.add_argument("--seeds", default="0:100", help="A:B (B excluded) or one seed N")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--reduce", action="store_true", help="shrink every new failure")
    ap.add_argument("--avoid-known", action="store_true",
                    help="generate without the constructs of the peer's known divergences "
                         "(other kernels than the default ones: finds what the tags would hide)")
    ap.add_argument("--show", type=int, help="print the source of one seed and exit")
    args = ap.parse_args(argv)
    if args.show is not None:
        avoid = known_tags(args.peer) if args.avoid_known else frozenset()
        print(generate(args.show, avoid=avoid, **generator_limits(args.peer)).source())
        return 0
    jobs = [(args.peer, seed, args.reduce, args.avoid_known) for seed in parse_seeds(args.seeds)]
    counts = collections.Counter()
    t0 = time.time()
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.imap(run_seed, jobs, chunksize=4)
            for label, line in results:
                counts[label] += 1
                if line:
                    print(line, flush=True)
    else:
        for job in jobs:
            label, line = run_seed(job)
            counts[label] += 1
            if line:
                print(line, flush=True)
    print(f"{dict(counts)} in {time.time() - t0:.1f}s", file=sys.stderr)
    return 1 if counts["mismatch"] + counts["error"] + counts["invariant"] else 0


if __name__ == "__main__":
    sys.exit(main())
