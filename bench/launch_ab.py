"""Tiny-kernel launch host time of two naiad trees on a GPU, each in fresh processes, alternating.

    python3 bench/launch_ab.py OLD_TREE NEW_TREE [--rounds 2] [--per-batch 2000]

Why: the launch-overhead row of ``bench/gpu.py`` moves by a few µs between device sessions, more
than a change to the warm path does; two trees timed back to back on the same machine, in turns,
tell the change from the session. Each run is a fresh process importing naiad from that tree
only (``core`` and ``backends/*`` first on ``sys.path``) and timing ``tiny_kernel[(1,)](x, 1)``
as ``bench/gpu.py``'s ``launch_overhead`` does (median of 7 batches of ``--per-batch`` launches).
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

CHILD = """
import sys, pathlib
tree = pathlib.Path(sys.argv[1]).resolve()
sys.path[:0] = [str(tree / p) for p in ("core", "backends/nvidia", "backends/reference",
                                        "backends/amd")]
sys.path.insert(0, sys.argv[2])
import naiad, gpu
assert pathlib.Path(naiad.__file__).resolve().is_relative_to(tree), naiad.__file__
import torch
nk = gpu.load_kernels("naiad")
x = torch.empty(64, device="cuda", dtype=torch.int32)
print(gpu.per_launch_us(lambda: nk.tiny_kernel[(1,)](x, 1), 7, int(sys.argv[3])))
"""


def one_run(tree: str, per_batch: int) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, tree, str(HERE), str(per_batch)],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-800:])
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--per-batch", type=int, default=2000)
    args = ap.parse_args()
    times = {"old": [], "new": []}
    for _ in range(args.rounds):
        for name in ("old", "new"):
            times[name].append(one_run(getattr(args, name), args.per_batch))
            print(f"{name}: {times[name][-1]:.2f} us", flush=True)
    print("| tree | tiny launch, fresh process, each run (µs) |\n|---|---|")
    for name in ("old", "new"):
        print(f"| {name} ({getattr(args, name)}) | "
              f"{', '.join(f'{t:.2f}' for t in times[name])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
