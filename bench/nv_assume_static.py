"""Tutorial 03's kernel with and without its ``tl.assume``s, compiled by naiad for sm_90a: the
same path? (issue 9, helper assume9: access vectorization takes run-time divisors to be
positive, so the grouped program ids need no assume; docs/language.md "Memory access
vectorization").

    python bench/nv_assume_static.py [--only 128x256x64:w8:s3,128x128x64:w4:s4]
                                     [--variants noassume,tutorial] [--proven-only]

No GPU: per variant and config, the dot's path (wgmma ring or not), the vector width of each
load and store the ring did not replace (GPU IR ``vec``), cp.async copies and their bytes, registers and spill bytes
(nvJitLink's info log), the SASS instructions inside the K loop (Triton's bundled cuobjdump,
analysis only) and the performance remarks.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import matmul_sweep  # noqa: E402
import nv_spill_static as spill  # noqa: E402
import same_source  # noqa: E402


def compile_naiad(mod, variant, cfg):
    import naiad

    name, fn, cx = spill.kernel_and_constexprs(mod, variant, cfg)
    sig = spill.signature(variant)
    spec = {p: {"divisibility": 16} for p in spill.DIVISIBLE if p in sig}
    spec.update({p: {"equal_to": 1} for p in spill.ONES if p in sig})
    return naiad.compile(fn, signature=sig, target="nvidia:sm_90", constexprs=cx,
                         options={"num_warps": cfg[3], "num_stages": cfg[4]},
                         specialization=spec), name


def row(kernel, name, workdir) -> dict:
    gpu, ptx = kernel.asm["gpu"], kernel.asm["ptx"]
    vecs = collections.Counter(re.findall(r"\b(load|store) [^\n]*?\{[^}\n]*\bvec = (\d+)", gpu))
    copies = collections.Counter(re.findall(r"cp\.async\.\w+\.shared\.global \[[^]]+\], "
                                            r"\[[^]]+\], (\d+)", ptx))
    sass = spill.measure(ptx, name, workdir)
    return {"path": "wgmma ring" if "nvidia.wgmma_ring" in gpu else
            ("wgmma" if "wgmma.mma_async" in ptx else "other"),
            "vec": ", ".join(f"{op} vec {v}" + (f" ×{n}" if n > 1 else "")
                             for (op, v), n in sorted(vecs.items())) or "-",
            "cp.async": ", ".join(f"{n}×{b} B" for b, n in sorted(copies.items())) or "none",
            "regs": sass["regs"], "spill": sass["spill"], "loop": sass["loop_len"],
            "remarks": len(kernel.metadata["remarks"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="128x256x64:w8:s3,128x128x64:w4:s4")
    ap.add_argument("--variants", default="noassume,tutorial")
    ap.add_argument("--proven-only", action="store_true",
                    help="vectorize from proven facts only (naiad before assume9), to compare")
    args = ap.parse_args(argv)
    if args.proven_only:
        from naiad.gpu.axis import AxisFacts

        AxisFacts.address_facts = AxisFacts.facts
    keep = matmul_sweep.config_filter(args.only)
    configs = [c for c in matmul_sweep.GRID if keep(c)]
    src = (HERE / "gpu_kernels.py").read_text()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nv_assume_static_"))
    mod = same_source.load_kernels(src, "naiad", "gpu_kernels", folder)
    print("| variant, BM×BN×BK, warps, stages | path | GPU IR vec of loads/stores left "
          "| cp.async | regs | spill B | K-loop SASS instrs | remarks |")
    print("|---|---|---|---|---|---|---|---|")
    for cfg in configs:
        for variant in args.variants.split(","):
            r = row(*compile_naiad(mod, variant, cfg), folder)
            print(f"| {variant}, {cfg[0]}×{cfg[1]}×{cfg[2]}, {cfg[3]}, {cfg[4]} | {r['path']} | "
                  f"{r['vec']} | {r['cp.async']} | {r['regs']} | {r['spill']} | {r['loop']} | "
                  f"{r['remarks']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
