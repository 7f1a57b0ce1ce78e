"""Compile time of the tutorial kernels: frontend (Python AST -> tile IR) plus the generic passes.

Runs without a GPU: it stops at the tile IR, which is what every backend starts from. Each
kernel is compiled once to warm up (imports, source parsing), then ``--repeat`` times; the table
shows the median per stage, the total, the first (cold) compile, and the op count before and
after the passes. The target (issue #2) is a matmul under 50 ms.

    python bench/compile_time.py [--repeat 30] [--kernels matmul,softmax] [--markdown]
                                 [--passes]      # per-pass breakdown of the median run
                                 [--check]       # exit 1 when matmul misses the target
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (os.path.join(ROOT, "core"), os.path.join(ROOT, "tests", "kernels")):
    if p not in sys.path:
        sys.path.insert(0, p)

TARGET_MS = {"matmul": 50.0}


def count_ops(module) -> int:
    return sum(1 for fn in module.functions.values() for _ in fn.walk())


def measure(fn, signature, constexprs, repeat: int):
    """Returns dict of timings (seconds lists) and op counts for one kernel."""
    from naiad.frontend import generate
    from naiad.passes import generic_pipeline

    def once():
        t0 = time.perf_counter()
        module = generate(fn, signature, constexprs, {})
        t1 = time.perf_counter()
        before = count_ops(module)
        pm = generic_pipeline({"dump": "", "timing": False, "debug": False})
        pm.run(module)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, before, count_ops(module), pm.timings

    cold = once()
    runs = [once() for _ in range(repeat)]
    frontend = [r[0] for r in runs]
    passes = [r[1] for r in runs]
    totals = [r[0] + r[1] for r in runs]
    median_run = sorted(runs, key=lambda r: r[0] + r[1])[len(runs) // 2]
    return {"frontend": statistics.median(frontend), "passes": statistics.median(passes),
            "total": statistics.median(totals), "min_total": min(totals),
            "cold": cold[0] + cold[1], "ops_before": cold[2], "ops_after": cold[3],
            "pass_timings": median_run[4]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--kernels", default="", help="comma-separated subset of the tutorials")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--passes", action="store_true", help="per-pass breakdown per kernel")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args(argv)

    from tutorials import TUTORIALS

    names = [n for n in args.kernels.split(",") if n] or list(TUTORIALS)
    unknown = [n for n in names if n not in TUTORIALS]
    if unknown:
        ap.error(f"unknown kernels {', '.join(unknown)}; known: {', '.join(TUTORIALS)}")

    results = {}
    for name in names:
        fn, sig, cx = TUTORIALS[name]
        try:
            results[name] = measure(fn, sig, cx, args.repeat)
        except Exception as e:  # report and keep measuring the others
            results[name] = e

    head = ["kernel", "frontend ms", "passes ms", "total ms", "min ms", "cold ms", "ops in→out",
            "target"]
    rows = []
    missed = []
    for name, r in results.items():
        if isinstance(r, Exception):
            rows.append([name, f"error: {type(r).__name__}: {r}"] + [""] * (len(head) - 2))
            missed.append(name)
            continue
        target = TARGET_MS.get(name)
        verdict = ""
        if target is not None:
            ok = r["total"] * 1e3 < target
            verdict = f"< {target:g} ms {'ok' if ok else 'MISSED'}"
            if not ok:
                missed.append(name)
        rows.append([name, f"{r['frontend'] * 1e3:.2f}", f"{r['passes'] * 1e3:.2f}",
                     f"{r['total'] * 1e3:.2f}", f"{r['min_total'] * 1e3:.2f}",
                     f"{r['cold'] * 1e3:.2f}", f"{r['ops_before']}→{r['ops_after']}", verdict])

    print(f"naiad compile time, frontend + generic passes (median of {args.repeat}; "
          f"Python {sys.version.split()[0]}, no GPU needed)")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        for row in [head] + rows:
            print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    if args.passes:
        for name, r in results.items():
            if isinstance(r, Exception):
                continue
            parts = ", ".join(f"{t.name} {t.seconds * 1e3:.3f}" for t in r["pass_timings"])
            print(f"{name}: {parts} (ms)")
    if args.check and missed:
        print(f"missed: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
