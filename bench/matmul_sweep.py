"""fp16 (and, with --tf32, fp32-input) tensor-core matmul on the GPU across block shapes,
warps and stages: naiad (wgmma on sm_90, and mma.sync with ``wgmma=False``) against Triton on
the same source and config, with each config's registers and spills (issue #9, items 1, 6).

    python bench/matmul_sweep.py [--size 4096] [--out sweep.md] [--quick] [--mma-sync] [--tf32]

Every result is checked against torch before it is timed (output poisoned with NaN first);
times are medians of triton.testing.do_bench.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu import check, load_kernels, median_ms  # noqa: E402

#: (BM, BN, BK, num_warps, num_stages)
CONFIGS = [(128, 128, 32, 8, 3), (128, 128, 64, 4, 3), (128, 128, 64, 4, 4),
           (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 256, 64, 8, 4),
           (128, 128, 128, 8, 2), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4),
           (128, 256, 32, 8, 4)]
QUICK = CONFIGS[:2]
#: fp32 inputs at the default precision (tf32 tensor cores on both compilers)
TF32_CONFIGS = [(128, 128, 32, 8, 3), (128, 128, 32, 4, 3), (128, 64, 32, 4, 4)]


def resources(kernel, flavour: str) -> str:
    if flavour == "naiad":
        md = kernel.metadata
        return f"{md.get('registers')}/{md.get('spill_bytes')}"
    return f"{getattr(kernel, 'n_regs', '?')}/{getattr(kernel, 'n_spills', '?')}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mma-sync", action="store_true", help="also time naiad with wgmma off")
    ap.add_argument("--tf32", action="store_true", help="also fp32 inputs (tf32) configs")
    args = ap.parse_args()
    import torch

    nk, tk = load_kernels("naiad"), load_kernels("triton")
    s = args.size
    lines = [f"matmul {s}^3, `bench/matmul_sweep.py`; GPU {torch.cuda.get_device_name()}, "
             f"triton {__import__('triton').__version__}", "",
             "| dtype, BM×BN×BK, warps, stages | naiad TFLOP/s | regs/spills | Triton TFLOP/s "
             "| regs/spills | naiad / Triton | naiad mma.sync TFLOP/s |",
             "|---|---|---|---|---|---|---|"]
    best = {"naiad": 0.0, "triton": 0.0}
    worst = None
    runs = [(torch.float16, cfg) for cfg in (QUICK if args.quick else CONFIGS)]
    if args.tf32:
        runs += [(torch.float32, cfg) for cfg in TF32_CONFIGS]
    inputs = {}
    for dtype, (bm, bn, bk, warps, stages) in runs:
        if dtype not in inputs:
            a = torch.randn(s, s, device="cuda", dtype=dtype)
            b = torch.randn(s, s, device="cuda", dtype=dtype)
            want = (a.double() @ b.double()).half()
            inputs[dtype] = (a, b, want)
        a, b, want = inputs[dtype]
        c = torch.empty(s, s, device="cuda", dtype=torch.float16)
        grid = ((s // bm) * (s // bn),)
        cargs = (a, b, c, s, s, s, s, s, s)
        row = {}
        variants = [("naiad", nk, {}), ("triton", tk, {})]
        if args.mma_sync:
            variants.append(("mma.sync", nk, {"wgmma": False}))
        for name, mod, extra in variants:
            def fn(mod=mod, extra=extra):
                return mod.matmul_tc_kernel[grid](*cargs, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                                  num_stages=stages, **extra)
            try:
                c.fill_(float("nan"))
                kernel = fn()
                torch.cuda.synchronize()
                check(f"{name} {bm}x{bn}x{bk}/{warps}/{stages}", c, want, 2e-2, 0.25)
                ms = median_ms(fn)
                row[name] = (2 * s ** 3 / ms / 1e9, resources(kernel, "naiad" if name !=
                                                              "triton" else "triton"))
            except BaseException as exc:  # noqa: BLE001 - report the config and go on
                row[name] = (float("nan"), f"{type(exc).__name__}: {str(exc)[:120]}")
        n, t = row["naiad"], row["triton"]
        ratio = n[0] / t[0] if t[0] == t[0] and t[0] else float("nan")
        if dtype == torch.float16:
            if ratio == ratio:
                worst = ratio if worst is None else min(worst, ratio)
            best = {"naiad": max(best["naiad"], n[0] if n[0] == n[0] else 0),
                    "triton": max(best["triton"], t[0] if t[0] == t[0] else 0)}
        sync = f"{row['mma.sync'][0]:.1f}" if "mma.sync" in row else ""
        label = "fp16" if dtype == torch.float16 else "fp32 (tf32)"
        lines.append(f"| {label}, {bm}×{bn}×{bk}, {warps}, {stages} | {n[0]:.1f} | {n[1]} | "
                     f"{t[0]:.1f} | {t[1]} | {ratio:.2f} | {sync} |")
        print(lines[-1], flush=True)
    lines += ["", f"fp16: best naiad {best['naiad']:.1f} vs best Triton {best['triton']:.1f} "
                  f"TFLOP/s ({best['naiad'] / max(best['triton'], 1e-9):.2f}); worst ratio "
                  f"{worst if worst is None else round(worst, 2)}"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
