"""Tensor-core matmul on the GPU across block shapes, warps, BK and stages, and across the
source variants of issue #9: naiad (wgmma on sm_90, or mma.sync with ``wgmma=False``) against
Triton on the same source and config, with each config's registers and spills.

    python bench/matmul_sweep.py [--size 4096] [--out sweep.md] [--quick] [--mma-sync]
                                 [--tf32] [--jobs 8] [--rep-ms 25] [--variants plain,tutorial]
                                 [--only 128x256:w4,128x256x64:w8:s3]

fp16 grid: num_warps 4/8 x BK 32/64/128 x num_stages 2-5 at BM x BN 128x128 and 128x256,
without the configs whose ``num_stages`` tiles exceed the H100/H200's 227 KiB of shared memory
(neither compiler runs them), for the variants "plain" (``matmul_tc_kernel``) and "tutorial"
(``matmul_features_kernel`` with every feature on, as tutorial 03 has them: grouped program ids,
``% M`` wrap, K masks, strides passed as arguments, ``acc += tl.dot``, masked fp32 store,
``tl.assume``); each feature alone, and all without ``tl.assume``, on a few configs. ``--tf32`` adds fp32 inputs at ``--fp32-size`` (2048): the default precision
(tf32 tensor cores) and ``input_precision="ieee"`` (``matmul_kernel``, FMA) for both.

Every result is checked against torch (fp64) with the output poisoned with NaN first; times
are medians of ``triton.testing.do_bench`` over ``--rep-ms`` milliseconds. ``--jobs N``
compiles every kernel first in N worker processes that share the naiad and Triton disk
caches, so the timed pass finds them compiled (the full grid fits a short device call).
"""
from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import same_source  # noqa: E402

#: shared memory one CTA may use on the H100/H200
SHARED_LIMIT = 227 * 1024
SHAPES = [(128, 128), (128, 256)]


def fits(bm: int, bn: int, bk: int, stages: int, elem: int = 2) -> bool:
    """``stages`` A and B tiles fit in shared memory (Triton's footprint; naiad's ring uses
    the same or declines to its late-copy form, which does)."""
    return stages * (bm + bn) * bk * elem <= SHARED_LIMIT


#: (BM, BN, BK, num_warps, num_stages): the issue's grid
GRID = [(bm, bn, bk, w, s) for bm, bn in SHAPES for bk in (32, 64, 128) for w in (4, 8)
        for s in (2, 3, 4, 5) if fits(bm, bn, bk, s)]
QUICK = [(128, 128, 32, 8, 3), (128, 256, 64, 8, 3)]
#: the configs each feature alone is measured at
FEATURE_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)]
#: fp32 inputs at the default precision (tf32 tensor cores on both compilers)
TF32_CONFIGS = [(128, 128, 32, 8, 3), (128, 128, 32, 4, 3), (128, 64, 32, 4, 4),
                (128, 256, 32, 8, 3)]
#: fp32 inputs, input_precision="ieee" (FMA): bench/gpu.py's config
IEEE_CONFIGS = [(64, 64, 32, 4, 3), (128, 64, 32, 8, 3)]

ALL_ON = dict(GROUP_M=8, WRAP=True, K_MASK=True, PLUS_EQ=True, F32_OUT=True, ASSUME=True)
ALL_OFF = dict(GROUP_M=1, WRAP=False, K_MASK=False, PLUS_EQ=False, F32_OUT=False, ASSUME=False)
#: source variant -> constexpr switches of matmul_features_kernel (None: matmul_tc_kernel)
VARIANTS = {
    "plain": None,
    "tutorial": ALL_ON,
    "strides": ALL_OFF,
    "grouped": dict(ALL_OFF, GROUP_M=8),
    "wrap": dict(ALL_OFF, WRAP=True),
    "kmask": dict(ALL_OFF, K_MASK=True),
    "pluseq": dict(ALL_OFF, PLUS_EQ=True),
    "f32out": dict(ALL_OFF, F32_OUT=True),
    # every feature without the tutorial's tl.assume: the program ids come through `min` and
    # `//`; access vectorization takes a run-time divisor to be positive (docs/language.md
    # "Memory access vectorization"), so `% N` keeps its runs and this is the tutorial's path
    # (bench/nv_assume_static.py; before assume9, B was loaded 2 bytes at a time: 0.07x)
    "noassume": dict(ALL_ON, ASSUME=False),
}
GRID_VARIANTS = ("plain", "tutorial")


def config_filter(text: str):
    """``--only``'s predicate on (BM, BN, BK, warps, stages): a comma list of
    ``BMxBN[xBK][:wW][:sS]`` (e.g. ``128x256:w4,128x256x64:w8:s3``); a config matches when
    one item's given fields all equal its own. Empty: every config."""
    items = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        shape, *rest = item.split(":")
        dims = shape.lower().split("x")
        try:
            want = {i: int(d) for i, d in enumerate(dims)}
            for r in rest:
                want[{"w": 3, "s": 4}[r[0].lower()]] = int(r[1:])
        except (KeyError, IndexError, ValueError):
            raise SystemExit(f"--only item {item!r}: expected BMxBN[xBK][:wW][:sS]") from None
        if len(dims) not in (2, 3):
            raise SystemExit(f"--only item {item!r}: expected BMxBN[xBK][:wW][:sS]")
        items.append(want)
    return lambda cfg: not items or any(all(cfg[i] == v for i, v in w.items()) for w in items)


def plan(args) -> list[tuple]:
    """Every (kind, variant, config) the run measures; kind "fp16", "tf32" or "ieee"."""
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    unknown = set(names) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    runs = []
    for name in names:
        if name in GRID_VARIANTS:
            configs = QUICK if args.quick else GRID
        else:
            configs = [] if args.quick else FEATURE_CONFIGS
        runs += [("fp16", name, cfg) for cfg in configs]
    if args.tf32:
        runs += [("tf32", "plain", cfg) for cfg in TF32_CONFIGS[:1 if args.quick else None]]
        runs += [("ieee", "ieee", cfg) for cfg in IEEE_CONFIGS[:1 if args.quick else None]]
    keep = config_filter(getattr(args, "only", ""))
    return [r for r in runs if keep(r[2])]


def kernel_dir() -> str:
    return str(pathlib.Path(tempfile.gettempdir()) / "naiad_matmul_sweep_src")


def load_kernels(flavour: str):
    src = (HERE / "gpu_kernels.py").read_text()
    return same_source.load_kernels(src, flavour, "gpu_kernels", kernel_dir())


class Inputs:
    """Random inputs and output buffers made once per kind and size; torch's fp64 product on
    demand (the compile workers never need it)."""

    def __init__(self, torch):
        self.torch, self.cache, self.wants = torch, {}, {}

    def get(self, kind: str, s: int):
        key = (kind, s)
        if key not in self.cache:
            torch = self.torch
            dtype = torch.float16 if kind == "fp16" else torch.float32
            gen = torch.Generator(device="cuda").manual_seed(s)
            a = torch.randn(s, s, device="cuda", dtype=dtype, generator=gen)
            b = torch.randn(s, s, device="cuda", dtype=dtype, generator=gen)
            self.cache[key] = (a, b, {})
        return self.cache[key]

    def want(self, kind: str, s: int):
        if (kind, s) not in self.wants:
            a, b, _ = self.get(kind, s)
            self.wants[(kind, s)] = a.double() @ b.double()
        return self.wants[(kind, s)]

    def out(self, kind: str, s: int, dtype):
        outs = self.get(kind, s)[2]
        if dtype not in outs:
            outs[dtype] = self.torch.empty(s, s, device="cuda", dtype=dtype)
        return outs[dtype]


def launcher(mod, kind: str, variant: str, cfg, s: int, inputs: Inputs, extra: dict):
    """(launch function, output tensor) for one run."""
    torch = inputs.torch
    bm, bn, bk, warps, stages = cfg
    a, b, _ = inputs.get(kind, s)
    grid = (triton_cdiv(s, bm) * triton_cdiv(s, bn),)
    opts = dict(num_warps=warps, num_stages=stages, **extra)
    if kind == "ieee":
        c = inputs.out(kind, s, torch.float32)
        return (lambda: mod.matmul_kernel[grid](a, b, c, s, s, s, s, 1, s, 1, s, 1, BM=bm, BN=bn,
                                                BK=bk, GROUP_M=8, **opts)), c
    switches = VARIANTS[variant]
    if switches is None:
        c = inputs.out(kind, s, torch.float16)
        return (lambda: mod.matmul_tc_kernel[grid](a, b, c, s, s, s, s, s, s, BM=bm, BN=bn,
                                                   BK=bk, **opts)), c
    c = inputs.out(kind, s, torch.float32 if switches["F32_OUT"] else torch.float16)
    return (lambda: mod.matmul_features_kernel[grid](
        a, b, c, s, s, s, s, 1, s, 1, s, 1, BM=bm, BN=bn, BK=bk, **switches, **opts)), c


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def size_of(kind: str, args) -> int:
    return args.size if kind == "fp16" else args.fp32_size


def flavours(args):
    out = [("naiad", "naiad", {}), ("triton", "triton", {})]
    if args.mma_sync:
        out.append(("mma.sync", "naiad", {"wgmma": False}))
    return out


def _warm(job) -> int:
    """Worker: compile (by launching once) each run of ``job`` so the disk caches hold them;
    returns how many launches failed (the timed pass reports why)."""
    runs, args = job
    failed = 0
    try:
        import torch

        mods = {f: load_kernels(f) for f in ("naiad", "triton")}
        inputs = Inputs(torch)
        for kind, variant, cfg in runs:
            for _, flavour, extra in flavours(args):
                try:
                    fn, _ = launcher(mods[flavour], kind, variant, cfg, size_of(kind, args),
                                     inputs, extra)
                    fn()
                except Exception:  # noqa: BLE001 - the timed pass reports it
                    failed += 1
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - no GPU, or it failed: the timed pass says
        failed += 1
    return failed


def warm_caches(runs, args) -> None:
    jobs = [(runs[i::args.jobs], args) for i in range(args.jobs)]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        failed = sum(pool.map(_warm, jobs))
    print(f"compiled {len(runs)} runs in {args.jobs} processes ({failed} launches failed)",
          flush=True)


def resources(kernel, flavour: str) -> str:
    if flavour == "naiad":
        md = kernel.metadata
        return f"{md.get('registers')}/{md.get('spill_bytes')}"
    return f"{getattr(kernel, 'n_regs', '?')}/{getattr(kernel, 'n_spills', '?')}"


def measure(name, fn, c, want, label, rep_ms):
    """(TFLOP/s, regs/spills) of one launch function, checked first; NaN and the error."""
    from triton.testing import do_bench

    s = c.shape[0]
    # fp16 or tf32 rounding of the inputs (or the fp16 output) against fp32 FMA's
    rtol, atol = (1e-4, 1e-2) if label.startswith("ieee") else (2e-2, 0.25)
    try:
        c.fill_(float("nan"))
        kernel = fn()
        import torch

        torch.cuda.synchronize()
        if not torch.allclose(c.double(), want, rtol=rtol, atol=atol):
            err = (c.double() - want).abs().max().item()
            raise RuntimeError(f"result differs from torch (max abs err {err:.3g})")
        ms = do_bench(fn, warmup=5, rep=rep_ms, return_mode="median")
        return 2 * s ** 3 / ms / 1e9, resources(kernel, "triton" if name == "triton" else "naiad")
    except BaseException as exc:  # noqa: BLE001 - report the config and go on
        return float("nan"), f"{type(exc).__name__}: {str(exc)[:120]}"


def summary(rows) -> list[str]:
    """Worst ratio and best-vs-best per kind (fp16 over every variant and config)."""
    out = []
    for kind in ("fp16", "tf32", "ieee"):
        got = [r for r in rows if r["kind"] == kind]
        if not got:
            continue
        ratios = [(r["ratio"], r["label"]) for r in got if r["ratio"] == r["ratio"]]
        best_n = max((r["naiad"] for r in got if r["naiad"] == r["naiad"]), default=0.0)
        best_t = max((r["triton"] for r in got if r["triton"] == r["triton"]), default=0.0)
        failed = [r["label"] for r in got if r["ratio"] != r["ratio"]]
        line = (f"{kind}: best naiad {best_n:.1f} vs best Triton {best_t:.1f} TFLOP/s "
                f"({best_n / max(best_t, 1e-9):.2f})")
        if ratios:
            lo, hi = min(ratios), max(ratios)
            line += f"; worst ratio {lo[0]:.2f} ({lo[1]}), best ratio {hi[0]:.2f} ({hi[1]})"
        if failed:
            line += f"; no ratio for {len(failed)}: {', '.join(failed)}"
        out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--fp32-size", type=int, default=2048)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mma-sync", action="store_true", help="also time naiad with wgmma off")
    ap.add_argument("--tf32", action="store_true", help="also fp32 inputs (tf32 and ieee)")
    ap.add_argument("--jobs", type=int, default=0, help="compile first in N processes")
    ap.add_argument("--rep-ms", type=int, default=25, help="do_bench's rep (milliseconds)")
    ap.add_argument("--variants", default="", help=f"comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--only", default="", help="configs to keep: comma list of "
                    "BMxBN[xBK][:wW][:sS], e.g. 128x256:w4,128x256x64:w8:s3")
    args = ap.parse_args()
    runs = plan(args)
    if args.jobs > 0:
        warm_caches(runs, args)
    import torch

    mods = {f: load_kernels(f) for f in ("naiad", "triton")}
    inputs = Inputs(torch)
    lines = [f"matmul, `bench/matmul_sweep.py`; GPU {torch.cuda.get_device_name()}, "
             f"triton {__import__('triton').__version__}; fp16 {args.size}^3, fp32 "
             f"{args.fp32_size}^3", "",
             "| kind, variant, BM×BN×BK, warps, stages | naiad TFLOP/s | regs/spills "
             "| Triton TFLOP/s | regs/spills | naiad / Triton |"
             + (" naiad mma.sync TFLOP/s |" if args.mma_sync else ""),
             "|---|---|---|---|---|---|" + ("---|" if args.mma_sync else "")]
    rows = []
    for kind, variant, cfg in runs:
        s = size_of(kind, args)
        want = inputs.want(kind, s)
        label = f"{kind}, {variant}, {cfg[0]}×{cfg[1]}×{cfg[2]}, {cfg[3]}, {cfg[4]}"
        got = {}
        for name, flavour, extra in flavours(args):
            fn, c = launcher(mods[flavour], kind, variant, cfg, s, inputs, extra)
            got[name] = measure(name, fn, c, want, label, args.rep_ms)
        n, t = got["naiad"], got["triton"]
        ratio = n[0] / t[0] if t[0] == t[0] and t[0] else float("nan")
        rows.append({"kind": kind, "label": label, "naiad": n[0], "triton": t[0],
                     "ratio": ratio})
        sync = f" {got['mma.sync'][0]:.1f} |" if "mma.sync" in got else ""
        lines.append(f"| {label} | {n[0]:.1f} | {n[1]} | {t[0]:.1f} | {t[1]} | {ratio:.2f} |"
                     + sync)
        print(lines[-1], flush=True)
    lines += [""] + summary(rows)
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
