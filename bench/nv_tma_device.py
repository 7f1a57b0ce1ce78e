"""Tutorial 09's matmuls (TMA and pointer) and 08's grouped TMA GEMM, naiad beside Triton, one
fixed config each, two clocks -- to tell host time from kernel time.

    python3 bench/nv_tma_device.py <triton-tutorials> [--reps N] [--only matmul_tma,...]

Why: ``bench/triton_tutorials.py`` times each call alone (L2 flush, CUDA events, a sync after
every call), so a host launch path slower than the flush shows up as kernel time. Here the
same tutorial host functions (descriptors built per call, as the tutorials do) are timed
twice: "synced" exactly as that bench does, and "back-to-back" (N calls between two events, no
sync in between: the device time once the host keeps ahead). The autotuner of each kernel is
given one config (the same on both sides), so nothing is tuned and both compile once.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (tutorial, host function, autotuned kernel, config predicate)
CONFIGS = {
    "A 128x256x64 s3 w8": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, stages=3,
                               warps=8),
    "B 128x128x64 s4 w4": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, stages=4,
                               warps=4),
    "C 128x128x128 s3 w8": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, stages=3,
                                warps=8),
    "D 128x128x64 s3 w4": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, stages=3,
                               warps=4),
}
CASES = [
    ("09", "matmul", "matmul_kernel", ("A", "B", "D")),
    ("09", "matmul_tma", "matmul_kernel_tma", ("A", "B")),
    ("09", "matmul_tma_persistent", "matmul_kernel_tma_persistent", ("A", "B", "C", "D")),
    ("09", "matmul_descriptor_persistent", "matmul_kernel_descriptor_persistent", ("A",)),
    ("09", "matmul_persistent", "matmul_kernel_persistent", ("A",)),
    ("08", "group_gemm_tma_fn", "grouped_matmul_tma_kernel", ("A",)),
]


def pick(tuner, want: dict):
    """The tuner's one config matching ``want`` (EPILOGUE_SUBTILE off where it exists)."""
    if not hasattr(tuner, "_nv_tma_all_configs"):     # the file's list, before narrowing
        tuner._nv_tma_all_configs = list(tuner.configs)
    for c in tuner._nv_tma_all_configs:
        kw = c.kwargs
        if all(kw.get(k) == v for k, v in want.items() if k.isupper()) and \
                c.num_stages == want["stages"] and c.num_warps == want["warps"] and \
                not kw.get("EPILOGUE_SUBTILE", False):
            return c
    return None


def inputs(torch, tut):
    g = torch.Generator(device="cuda").manual_seed(7)
    if tut == "09":
        a = torch.randn((8192, 512), device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn((8192, 512), device="cuda", dtype=torch.float16, generator=g)
        return (a, b), lambda out: torch.allclose(out.float(), a.float() @ b.float().T,
                                                  atol=1e-1, rtol=1e-2)
    A = [torch.randn((1024, 1024), device="cuda", dtype=torch.float16, generator=g)
         for _ in range(4)]
    B = [torch.randn((1024, 1024), device="cuda", dtype=torch.float16, generator=g)
         for _ in range(4)]
    return (A, B), lambda outs: all(torch.allclose(o.float(), a.float() @ b.float().T,
                                                   atol=1e-1, rtol=1e-2)
                                    for o, a, b in zip(outs, A, B))


def call_of(mod, fn_name, args):
    fn = getattr(mod, fn_name)
    if fn_name in ("matmul", "matmul_persistent"):   # the pointer kernels take B as [K, N]
        a, b = args
        bt = b.T.contiguous()
        return lambda: fn(a, bt)
    if fn_name.startswith("matmul"):        # B as [N, K], no warp specialisation
        return lambda: fn(*args, False)
    return lambda: fn(*args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default=None, help="comma-separated host functions to run")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    import torch

    from triton_tutorials import Clock, load_both

    files = {p.name[:2]: p for p in args.tutorials.glob("[0-9][0-9]-*.py")}
    tuts = {tut for tut, fn_name, _, _ in CASES if only is None or fn_name in only}
    mods = {t: load_both(files[t], True, {"DEVICE": torch.device("cuda")}) for t in tuts}
    clock = Clock(torch, "cuda", args.reps)
    print("| case | config | naiad synced ms | Triton synced ms | speed synced | naiad b2b ms "
          "| Triton b2b ms | speed b2b | correct |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tut, fn_name, kernel, which in CASES:
        if only is not None and fn_name not in only:
            continue
        for label in which:
            name = next(k for k in CONFIGS if k.startswith(label))
            want = CONFIGS[name]
            res = {}
            for side in ("naiad", "triton"):
                mod = mods[tut][side]
                try:
                    tuner = getattr(mod, kernel)
                    cfg = pick(tuner, want)
                    if cfg is None:
                        raise RuntimeError("config not in the tutorial's list")
                    tuner.configs = [cfg]
                    if hasattr(tuner, "cache"):
                        tuner.cache.clear()
                    data, check = inputs(torch, tut)
                    f = call_of(mod, fn_name, data)
                    ok = bool(check(f()))
                    res[side] = (clock(f), clock.back_to_back(f), ok)
                except Exception as exc:   # noqa: BLE001 -- the row says what failed
                    res[side] = (None, None, f"{type(exc).__name__}: {str(exc)[:100]}")
            n, t = res["naiad"], res["triton"]

            def fmt(v):
                return "-" if v is None else f"{v:.4f}"

            def sp(a, b):
                return "-" if a is None or b is None else f"{b / a:.2f}x"
            print(f"| {tut} {fn_name} | {name} | {fmt(n[0])} | {fmt(t[0])} | {sp(n[0], t[0])} | "
                  f"{fmt(n[1])} | {fmt(t[1])} | {sp(n[1], t[1])} | naiad {n[2]}, Triton {t[2]} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
