"""The code two naiad trees make of the tutorials' matmul configs, side by side (no GPU).

    git archive cacdb68 | tar -x -C /tmp/base
    python bench/nv_tree_diff.py ../shared/triton-tutorials --base /tmp/base \\
        [--only 03] [--variant fp8] [--first N] [--no-triton] [--out FILE]

Why: a speed change measured on the GPU between two commits (tutorial 03's fp8 part went
1.13x -> 0.64x Triton between cacdb68 and f185c17) is either a change in the code the GPU runs
or noise of the run. This compiles every autotune config of the chosen cases of
bench/nv_static.py for sm_90 on both trees -- ``--base`` (an exported older tree) and this
checkout -- with Triton 3.9 beside them, and reports per config: registers, spill bytes, shared
memory, the CTAs per SM those allow on an H100/H200, the K loop's SASS (all instructions;
tensor-core ops; waits; global->shared copies; shared loads/stores; barriers; mbarrier ops),
whether the K loop is the same instruction sequence up to register numbers and branch targets,
and the instructions outside it.

Each tree compiles in its own subprocess, with its own ``core``/``backends`` first on
``sys.path`` and its own empty cache, through this checkout's bench/nv_static.py (cases,
configs and specialisation facts are the same for both). The SASS comes from Triton's bundled
cuobjdump (bench/sass_listing.py); the product never runs it.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import sass_listing  # noqa: E402

#: H100/H200 per-SM limits (CUDA occupancy rules for compute capability 9.0)
SM_REGISTERS = 65536
SM_SHARED = 233472          # 228 KiB, of which each CTA also takes RESERVED_SHARED
BLOCK_SHARED_MAX = 232448   # 227 KiB a CTA may opt in to
RESERVED_SHARED = 1024
SM_WARPS = 64
SM_CTAS = 32

#: K-loop columns: name -> SASS opcode families
LOOP_COLUMNS = {
    "MMA": sass_listing.MMA,
    "WARPGROUP": ("WARPGROUP",),      # wgmma fence (ARRIVE) and wait (DEPBAR)
    "DEPBAR": ("DEPBAR",),            # cp.async group waits
    "copies": ("LDGSTS", "UTMALDG", "UBLKCP"),
    "LDS": ("LDS", "LDSM"),
    "STS": ("STS", "STSM"),
    "BAR": ("BAR",),
    "SYNCS": ("SYNCS",),
}


def ctas_per_sm(regs: int, shared: int, warps: int) -> int:
    """CTAs of one kernel an SM holds at once: registers are allocated per warp in units of
    256 (8 a thread), shared memory per CTA plus 1 KiB reserved; 0 when a CTA does not fit."""
    if shared > BLOCK_SHARED_MAX:
        return 0
    per_warp = -(-max(regs, 1) // 8) * 8 * 32
    by_regs = (SM_REGISTERS // per_warp) // warps
    by_shared = SM_SHARED // (shared + RESERVED_SHARED)
    return min(by_regs, by_shared, SM_WARPS // warps, SM_CTAS)


# -- compiling one tree (the subprocess) ----------------------------------------------------------
def _selected(nv_static, only: list[str], variant: str):
    for i, case in enumerate(nv_static.CASES):
        if only and case.tutorial not in only:
            continue
        if variant and variant not in case.variant:
            continue
        yield i, case


def dump(tree: pathlib.Path, tutorials: pathlib.Path, out: pathlib.Path, only: list[str],
         variant: str, first: int, with_triton: bool) -> None:
    """Compile the selected configs with ``tree``'s naiad (and Triton) into ``out``:
    ``<n>.naiad.cubin``/``<n>.triton.cubin`` and ``index.json`` (what each file is)."""
    import nv_static   # inserts this checkout's paths; ``tree``'s go in front of them

    for p in ("backends/amd", "backends/nvidia", "backends/reference", "core"):
        sys.path.insert(0, str(tree / p))
    import naiad

    index = {"naiad": str(pathlib.Path(naiad.__file__).parent), "configs": []}
    loaded: dict = {}
    for ci, case in _selected(nv_static, only, variant):
        path = tutorials / nv_static.FILES[case.tutorial]
        if case.tutorial not in loaded:
            loaded[case.tutorial] = (nv_static.load_kernels(path, "naiad"),
                                     nv_static.load_kernels(path, "triton") if with_triton
                                     else None)
        ours, theirs = loaded[case.tutorial]
        cfgs = nv_static.configs(ours, case.kernel)
        for constexprs, warps, stages in cfgs[: first or None]:
            n = len(index["configs"])
            rec = {"case": f"{case.tutorial} {case.kernel} {case.variant}",
                   "config": _label(constexprs, warps, stages), "warps": warps}
            try:
                k = nv_static.naiad_kernel(ours, case, constexprs, warps, stages)
                (out / f"{n}.naiad.cubin").write_bytes(k.asm["cubin"])
                md = k.metadata
                rec["naiad"] = {"regs": md.get("registers"), "spills": md.get("spill_bytes"),
                                "shared": md.get("shared"), "path": nv_static._path(k)}
            except Exception as exc:  # noqa: BLE001 -- the table reports a failing compile
                rec["naiad"] = {"error": nv_static.one_line_error(exc)}
            if theirs is not None:
                rec["triton"] = _triton(nv_static, theirs, case, constexprs, warps, stages,
                                        out / f"{n}.triton.cubin")
            index["configs"].append(rec)
    (out / "index.json").write_text(json.dumps(index, indent=1))


def _triton(nv_static, module, case, constexprs, warps, stages, cubin_path) -> dict:
    try:
        k = nv_static.triton_kernel(module, case, constexprs, warps, stages)
        rep = nv_static.link_report(k.asm["ptx"], k.metadata.name)
        cubin_path.write_bytes(k.asm["cubin"])
    except Exception as exc:  # noqa: BLE001
        return {"error": nv_static.one_line_error(exc)}
    return {"regs": rep.get("registers"), "spills": rep.get("spill_bytes"),
            "shared": max(int(k.metadata.shared), rep.get("shared", 0))}


def _label(constexprs: dict, warps: int, stages: int) -> str:
    dims = "x".join(str(constexprs.get(k, "?"))
                    for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"))
    return f"{dims} w{warps} s{stages}"


def compile_tree(tree: pathlib.Path, tutorials: pathlib.Path, out: pathlib.Path, args,
                 with_triton: bool) -> dict:
    """Run :func:`dump` for ``tree`` in a fresh interpreter with an empty naiad cache."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), str(tutorials),
           "--dump", str(tree), str(out), "--only", args.only, "--variant", args.variant,
           "--first", str(args.first)]
    if not with_triton:
        cmd.append("--no-triton")
    env = dict(os.environ, NAIAD_CACHE_DIR=str(out / "cache"))
    subprocess.run(cmd, check=True, env=env)
    return json.loads((out / "index.json").read_text())


# -- comparing ------------------------------------------------------------------------------------
def sass_summary(cubin: pathlib.Path) -> dict | None:
    """The K loop (longest loop) of a cubin: its normalised instructions and their count, and
    the instructions outside it."""
    if not cubin.exists():
        return None
    instrs = sass_listing.disassemble(cubin)
    loop = sass_listing.main_loop(instrs)
    return {"loop": [sass_listing.normalized(t) for _, t in loop],
            "families": sass_listing.families(loop), "outside": len(instrs) - len(loop)}


def loop_columns(families: collections.Counter) -> str:
    return " ".join(f"{name} {sum(families[f] for f in fams)}"
                    for name, fams in LOOP_COLUMNS.items() if sum(families[f] for f in fams))


def loop_change(base: list[str], new: list[str]) -> str:
    """How the K loop moved: the same sequence, the same instructions reordered, or what was
    added and removed (counted up to register numbers)."""
    if base == new:
        return "same"
    a, b = collections.Counter(base), collections.Counter(new)
    if a == b:
        return "same instructions, reordered"
    return f"+{sum((b - a).values())} / -{sum((a - b).values())} instructions"


def _arrow(a, b) -> str:
    a = "-" if a is None else a
    b = "-" if b is None else b
    return str(a) if a == b else f"{a} -> {b}"


HEADER = ("| case | config | regs | spill B | shared B | CTAs/SM | K-loop SASS | "
          "K loop (this tree) | K loop vs base | outside the K loop | naiad path |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def row(rec_base: dict, rec_new: dict, base_dir: pathlib.Path, new_dir: pathlib.Path,
        n_base: int, n_new: int) -> str:
    """One config: ``base -> this tree (Triton)`` where they differ, else one value."""
    b, n = rec_base.get("naiad", {}), rec_new.get("naiad", {})
    t = rec_new.get("triton") or {}
    head = f"| {rec_new['case']} | {rec_new['config']} |"
    if "error" in b or "error" in n:
        return head + f" base: {b.get('error', 'ok')}; this tree: {n.get('error', 'ok')} |" \
            + " |" * 8
    warps = rec_new["warps"]
    sb = sass_summary(base_dir / f"{n_base}.naiad.cubin")
    sn = sass_summary(new_dir / f"{n_new}.naiad.cubin")
    st = sass_summary(new_dir / f"{n_new}.triton.cubin") if t and "error" not in t else None

    def with_triton(text, value):
        return f"{text} ({value})" if value is not None else text

    occ = [ctas_per_sm(r["regs"], r["shared"], warps) for r in (b, n)]
    cells = [
        with_triton(_arrow(b["regs"], n["regs"]), t.get("regs")),
        with_triton(_arrow(b["spills"], n["spills"]), t.get("spills")),
        with_triton(_arrow(b["shared"], n["shared"]), t.get("shared")),
        with_triton(_arrow(*occ), ctas_per_sm(t["regs"], t["shared"], warps)
                    if "regs" in t else None),
        with_triton(_arrow(len(sb["loop"]), len(sn["loop"])), len(st["loop"]) if st else None),
        loop_columns(sn["families"]),
        loop_change(sb["loop"], sn["loop"]),
        with_triton(_arrow(sb["outside"], sn["outside"]), st["outside"] if st else None),
        _arrow(b["path"], n["path"]),
    ]
    return head + " " + " | ".join(str(c) for c in cells) + " |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tutorials", type=pathlib.Path)
    ap.add_argument("--base", type=pathlib.Path, help="the older tree (an exported checkout)")
    ap.add_argument("--only", default="03", help="comma-separated tutorial numbers")
    ap.add_argument("--variant", default="fp8", help="cases whose dtype column contains this")
    ap.add_argument("--first", type=int, default=0, help="at most N configs per case")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--out", type=pathlib.Path, help="also write the table to this file")
    ap.add_argument("--dump", nargs=2, metavar=("TREE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    if args.dump:
        dump(pathlib.Path(args.dump[0]).resolve(), args.tutorials.resolve(),
             pathlib.Path(args.dump[1]), only, args.variant, args.first, not args.no_triton)
        return 0
    if args.base is None:
        ap.error("--base is required")
    work = pathlib.Path(tempfile.mkdtemp(prefix="nv_tree_diff_"))
    base = compile_tree(args.base.resolve(), args.tutorials.resolve(), work / "base", args,
                        with_triton=False)
    new = compile_tree(ROOT, args.tutorials.resolve(), work / "new", args,
                       with_triton=not args.no_triton)
    lines = [f"base: naiad at {base['naiad']}; this tree: naiad at {new['naiad']}; "
             f"values read base -> this tree (Triton 3.9); SASS in {work}", "", HEADER]
    by_key = {(r["case"], r["config"]): i for i, r in enumerate(base["configs"])}
    for n_new, rec in enumerate(new["configs"]):
        n_base = by_key.get((rec["case"], rec["config"]))
        if n_base is None:
            lines.append(f"| {rec['case']} | {rec['config']} | not in the base tree |"
                         + " |" * 8)
            continue
        lines.append(row(base["configs"][n_base], rec, work / "base", work / "new",
                         n_base, n_new))
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text + "\n")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
