"""Where a tutorial call's host time goes: naiad against Triton, same call, same process.

    python3 bench/host_path_profile.py /path/to/triton-tutorials --cases "grouped gemm,matmul_tma"
        [--calls 50] [--profile 30] [--out host.md]

Why: in ``bench/triton_tutorials.py``'s clock (L2 flush, event, call, event, sync) the host time of
a call shows up in the measured time once it exceeds what the GPU has queued; for calls that
synchronise inside (tutorial 08 builds its pointer arrays with ``torch.tensor(..., device=)``)
all of it does. Per case (after a warm-up call, autotuning done) this prints for naiad and
Triton: the host time of one call between two device synchronisations (median), the device
time per call back-to-back (events around ``--calls`` calls, no flush), the synced time as the
tutorial bench measures it, and for naiad a cProfile of ``--profile`` calls (top functions by
own time and by cumulative time) so a slow host path names its function.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import triton_tutorials as tt  # noqa: E402


def host_us(torch, fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def maps_encoded() -> int | None:
    """Tensor maps naiad's NVIDIA launcher has encoded so far (None before the first)."""
    import naiad.runtime.targets as targets

    cache = getattr(targets.current_state().launcher, "_tensor_maps", None)
    return getattr(cache, "encoded", None)


def profile_text(fn, calls: int, top: int = 22) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("--cases", required=True, help="comma-separated case names (a substring)")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--profile", type=int, default=30)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import naiad
    import torch

    wanted = [w.strip() for w in args.cases.split(",") if w.strip()]
    picked = [c for c in tt.cases(False) if any(w == c.name for w in wanted)]
    files = {p.name[:2]: p for p in args.tutorials.glob("[0-9][0-9]-*.py")}
    clock = tt.Clock(torch, "cuda", 20)
    lines = ["| case | compiler | host us/call (synced) | device ms b2b | clock ms (bench) | "
             "tensor maps encoded per call |", "|---|---|---|---|---|---|"]
    profiles = []
    loaded = {}
    for case in picked:
        if case.tutorial not in loaded:
            loaded[case.tutorial] = tt.load_both(files[case.tutorial], True)
        mods = loaded[case.tutorial]
        inputs = case.inputs(torch, "cuda", False)
        for impl in ("naiad", "triton"):
            mod = mods[impl]
            if isinstance(mod, BaseException):
                lines.append(f"| {case.name} | {impl} | load failed: {mod} | | |")
                continue
            ctx = naiad.target(str(naiad.get_target())) if impl == "naiad" else tt._nullcontext()
            with ctx:
                def fn(m=mod):
                    return case.call(m, inputs)
                fn()
                fn()
                before = maps_encoded() if impl == "naiad" else None
                h = host_us(torch, fn, args.calls)
                b = clock.back_to_back(fn, args.calls)
                c = clock(fn)
                after = maps_encoded() if impl == "naiad" else None
                per_call = "-" if after is None else \
                    f"{(after - (before or 0)) / (2 * args.calls + clock.reps + 1):.2f}"
                lines.append(f"| {case.name} | {impl} | {h:.1f} | {b:.4f} | {c:.4f} | "
                             f"{per_call} |")
                print(lines[-1], flush=True)
                if impl == "naiad" and args.profile:
                    profiles.append(f"### {case.name} (naiad, {args.profile} calls)\n```\n"
                                    f"{profile_text(fn, args.profile)}```")
                    print(profiles[-1], flush=True)
    text = "\n".join(lines) + "\n\n" + "\n\n".join(profiles)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
