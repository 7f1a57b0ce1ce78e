"""Command line for long runs and triage (the pytest tier is the same, one test per seed)::

    python -m conformance.fuzz --peer simt --seeds 0:500 [--reduce] [--show SEED]

Prints one line per failing seed (``known`` when a divergence in divergences.py explains it) and
a summary by status.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time

from .generator import generate
from .reducer import reduce_program
from .runner import run_case
from .seeds import parse_seeds, generator_limits


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.fuzz")
    ap.add_argument("--peer", default="reference",
                    help="reference | simt | nvidia | amd | triton | a naiad target")
    ap.add_argument("--seeds", default="0:100", help="A:B (B excluded) or one seed N")
    ap.add_argument("--reduce", action="store_true", help="shrink every new failure")
    ap.add_argument("--show", type=int, help="print the source of one seed and exit")
    args = ap.parse_args(argv)
    if args.show is not None:
        print(generate(args.show, **generator_limits(args.peer)).source())
        return 0
    counts = collections.Counter()
    t0 = time.time()
    for seed in parse_seeds(args.seeds):
        p = generate(seed, **generator_limits(args.peer))
        out = run_case(p, args.peer)
        label = "known" if out.failed and out.known else out.status
        counts[label] += 1
        if out.failed:
            tags = ",".join(r.split(":", 1)[0] for r in out.known)
            print(f"seed {seed}: {label} {out.status}: {out.detail} [{tags}]", flush=True)
            if args.reduce and not out.known:
                small = reduce_program(p, args.peer, out)
                print(small.source(), flush=True)
    print(f"{dict(counts)} in {time.time() - t0:.1f}s", file=sys.stderr)
    return 1 if counts["mismatch"] + counts["error"] + counts["invariant"] else 0


if __name__ == "__main__":
    sys.exit(main())
