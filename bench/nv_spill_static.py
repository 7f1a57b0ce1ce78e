"""Where the spills of over-subscribed wgmma accumulators are: naiad beside Triton, no GPU.

    python bench/nv_spill_static.py [--only 128x256:w4] [--variants plain,tutorial] [--out FILE]

The kernels of bench/matmul_sweep.py (``matmul_tc_kernel``, and ``matmul_features_kernel``
with the tutorial's features on), same source for both compilers, compiled for sm_90a at
the sweep's configs (default: the 4-warp 128x256 group, whose fp32 accumulator is 256
registers a thread). Both PTX texts are linked by the same nvJitLink call (registers and
spill bytes from its info log) and the SASS is read with Triton's bundled cuobjdump: spill
stores and loads (STL/LDL) in all, and inside the K loop (between a backward branch and its
target); and each side's shared memory (what its launcher requests) with the programs an SM
then holds beside the registers (bench/nv_tree_diff.ctas_per_sm): at 4 warps and 255
registers two fit by registers, so a kernel over 113 KiB of shared memory runs one program
per SM where the other compiler's runs two (helper spill10: this, not the spills, was the
tutorial variant's gap). Analysis only: the product never runs these tools.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import matmul_sweep  # noqa: E402
import nv_tree_diff  # noqa: E402
import same_source  # noqa: E402
import sass_listing  # noqa: E402

DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
ONES = ("stride_ak", "stride_bn", "stride_cn")


def signature(variant: str) -> dict:
    switches = matmul_sweep.VARIANTS[variant]
    out = "*fp32" if switches and switches["F32_OUT"] else "*fp16"
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": out}
    ints = (("M", "N", "K", "stride_am", "stride_bk", "stride_cm") if switches is None else
            ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
             "stride_cn"))
    sig.update({n: "i32" for n in ints})
    return sig


def kernel_and_constexprs(mod, variant: str, cfg):
    bm, bn, bk = cfg[:3]
    switches = matmul_sweep.VARIANTS[variant]
    name = "matmul_tc_kernel" if switches is None else "matmul_features_kernel"
    return name, getattr(mod, name), dict(BM=bm, BN=bn, BK=bk, **(switches or {}))


def compile_naiad(mod, variant, cfg):
    import naiad

    name, fn, cx = kernel_and_constexprs(mod, variant, cfg)
    sig = signature(variant)
    spec = {p: {"divisibility": 16} for p in DIVISIBLE if p in sig}
    spec.update({p: {"equal_to": 1} for p in ONES if p in sig})
    k = naiad.compile(fn, signature=sig, target="nvidia:sm_90", constexprs=cx,
                      options={"num_warps": cfg[3], "num_stages": cfg[4]}, specialization=spec)
    return k.asm["ptx"], name, int(k.metadata.get("shared") or 0)


def compile_triton(mod, variant, cfg):
    import triton
    from triton.backends.compiler import GPUTarget

    _, fn, cx = kernel_and_constexprs(mod, variant, cfg)
    sig = signature(variant)
    cx = {**cx, **{p: 1 for p in ONES if p in sig}}
    cx = {k: v for k, v in cx.items() if k in fn.arg_names}
    full = {p: ("constexpr" if p in cx else sig[p]) for p in fn.arg_names}
    attrs = {(fn.arg_names.index(p),): [["tt.divisibility", 16]] for p in DIVISIBLE if p in sig}
    k = triton.compile(triton.compiler.ASTSource(fn=fn, signature=full, constexprs=cx,
                                                 attrs=attrs),
                       target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg[3], "num_stages": cfg[4]})
    return k.asm["ptx"], k.metadata.name, int(k.metadata.shared)


def measure(ptx: str, name: str, workdir: pathlib.Path, shared: int | None = None,
            warps: int = 4) -> dict:
    """Registers and spill bytes (nvJitLink), STL/LDL in the SASS and inside its loops, and
    (given the launcher's ``shared`` bytes) the programs an SM holds."""
    from naiad_nvidia.toolchain import parse_resource_report, ptx_to_cubin

    cubin, log = ptx_to_cubin(ptx, "sm_90a")
    rep = parse_resource_report(log, name)
    path = workdir / f"{name}.cubin"
    path.write_bytes(cubin)
    instrs = sass_listing.disassemble(path)
    loop = sass_listing.inside_loops(instrs)

    def count(op, where=None):
        return sum(1 for a, t in instrs if re.search(rf"\b{op}\b", t)
                   and (where is None or a in where))

    got = {"regs": rep.get("registers"), "spill": rep.get("spill_bytes"),
           "stl": count("STL"), "ldl": count("LDL"), "loop_stl": count("STL", loop),
           "loop_ldl": count("LDL", loop), "loop_len": len(loop)}
    if shared is not None:
        got["shared"] = shared
        got["ctas"] = nv_tree_diff.ctas_per_sm(got["regs"] or 0, shared, warps)
    return got


def kib(got: dict) -> str:
    return f"{got['shared'] / 1024:g}" if "shared" in got else str(got.get("error"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="128x256:w4", help="BMxBN[xBK][:wW][:sS], comma list")
    ap.add_argument("--variants", default="plain,tutorial")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    keep = matmul_sweep.config_filter(args.only)
    configs = [c for c in matmul_sweep.GRID if keep(c)]
    configs += [c for c in ((256, 128, 64, 4, 3), (256, 128, 32, 4, 4))
                if keep(c) and c not in configs]
    src = (HERE / "gpu_kernels.py").read_text()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nv_spill_static_"))
    mods = {f: same_source.load_kernels(src, f, "gpu_kernels", folder) for f in ("naiad", "triton")}
    lines = ["| variant, BM×BN×BK, warps, stages | regs naiad / Triton | spill B naiad / Triton "
             "| STL+LDL in K loop naiad / Triton | loop SASS instrs naiad / Triton "
             "| shared KiB naiad / Triton | programs per SM naiad / Triton |",
             "|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for variant in args.variants.split(","):
        for cfg in configs:
            got = {}
            for flavour, comp in (("naiad", compile_naiad), ("triton", compile_triton)):
                work = folder / flavour
                work.mkdir(exist_ok=True)
                try:
                    ptx, name, shared = comp(mods[flavour], variant, cfg)
                    got[flavour] = measure(ptx, name, work, shared, cfg[3])
                except Exception as exc:  # noqa: BLE001 -- a row says which side failed
                    got[flavour] = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
            n, t = got["naiad"], got["triton"]

            def pair(key, a=n, b=t):
                return f"{a.get(key, a.get('error'))} / {b.get(key, b.get('error'))}"

            loop = (f"{n.get('loop_stl', '?')}+{n.get('loop_ldl', '?')} / "
                    f"{t.get('loop_stl', '?')}+{t.get('loop_ldl', '?')}")
            lines.append(f"| {variant}, {cfg[0]}×{cfg[1]}×{cfg[2]}, {cfg[3]}, {cfg[4]} | "
                         f"{pair('regs')} | {pair('spill')} | {loop} | {pair('loop_len')} | "
                         f"{kib(n)} / {kib(t)} | {pair('ctas')} |")
            print(lines[-1], flush=True)
    if args.out:
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
