"""Loop-body SASS of tutorial 06's forward, naiad beside Triton 3.9, without a GPU.

    python bench/nv_attention_sass.py /path/to/triton-tutorials [--configs 128x64s2,128x64s3]

Compiles ``_attn_fwd`` (hd 64, fp16, host tensor descriptors as the tutorial passes them on
Hopper; causal and full) with naiad (``bench/nv_attention_static.py``'s setup) and with Triton,
assembles naiad's PTX with the ``ptxas`` bundled in Triton's wheel, the one that made Triton's
cubin (12.9: unlike nvJitLink 13.5 it does not serialize the wgmmas of a kernel holding a call
-- naiad's f32 ``log2`` has a ``div.rn`` -- so the SASS is what the H200's toolchain makes),
disassembles both with its ``cuobjdump`` and prints, per wgmma loop (a backward branch over 100
instructions holding one iteration's HGMMAs), the instruction count and the opcodes that tell
the pipelines apart: HGMMA and WARPGROUP (wgmma issue and waits), BAR (CTA barriers),
LDGSTS/DEPBAR (cp.async and its waits), UTMALDG/SYNCS (TMA copies and mbarrier waits), and the
integer address arithmetic (IMAD, ISETP, LEA, SEL). The tools are used here for analysis
only, never by naiad itself.
"""
from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nv_attention_static as static  # noqa: E402
from triton_tutorials import load_tutorial  # noqa: E402

KEYS = ("HGMMA", "WARPGROUP", "BAR", "LDGSTS", "DEPBAR", "UTMALDG", "SYNCS", "MUFU", "IMAD",
        "ISETP", "LEA", "SEL")
LOOP_MIN = 100


def _tools() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def sass_of(kernel, work: Path, name: str) -> str:
    """naiad's PTX assembled by the bundled ptxas; Triton's own cubin (made by that ptxas)."""
    tools = _tools()
    src, cubin = work / f"{name}.ptx", work / f"{name}.cubin"
    if isinstance(kernel.asm["cubin"], bytes) and type(kernel).__module__.startswith("triton"):
        cubin.write_bytes(kernel.asm["cubin"])
    else:
        src.write_text(kernel.asm["ptx"])
        subprocess.run([str(tools / "ptxas"), "-arch=sm_90a", "-o", str(cubin), str(src)],
                       check=True, capture_output=True)
    return subprocess.run([str(tools / "cuobjdump"), "-sass", str(cubin)], check=True,
                          capture_output=True, text=True).stdout


def loops(sass: str, function: str = "_attn_fwd") -> list[tuple[int, collections.Counter]]:
    """(instructions, opcode counts) of each wgmma loop of ``function``, in address order: the
    spans of backward branches holding one iteration's HGMMAs (as many as the smallest span
    holding any), smallest first, skipping those that overlap one already taken (an mbarrier
    wait's retry branch can span a loop's end and beyond)."""
    part = next(p for p in re.split(r"\n\s*Function : ", sass) if p.startswith(function))
    instrs = [line for line in part.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line)]
    index = {int(re.match(r"\s+/\*([0-9a-f]{4})\*/", s).group(1), 16): i
             for i, s in enumerate(instrs)}
    spans = []
    for i, line in enumerate(instrs):
        m = re.search(r"BRA\s+(?:!?U?P\d,\s*)?0x([0-9a-f]+)", line)
        start = index.get(int(m.group(1), 16)) if m else None
        if start is not None and i - start > LOOP_MIN and \
                any("HGMMA" in s for s in instrs[start:i + 1]):
            spans.append((start, i + 1))
    def hgmmas(span):
        return sum("HGMMA" in s for s in instrs[span[0]:span[1]])

    spans.sort(key=lambda s: s[1] - s[0])
    per_iteration = hgmmas(spans[0]) if spans else 0   # the smallest loop holds one iteration
    taken: list[tuple[int, int]] = []
    for a, b in spans:
        if hgmmas((a, b)) == per_iteration and all(b <= c or d <= a for c, d in taken):
            taken.append((a, b))
    out = []
    for a, b in sorted(taken):
        ops = collections.Counter(
            re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)", s).group(1)
            for s in instrs[a:b])
        out.append((b - a, ops))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials")
    ap.add_argument("--configs", default="128x64s2", help="BMxBNsSTAGES,... (4 warps)")
    args = ap.parse_args(argv)
    from naiad.compat import triton_alias

    path = Path(args.tutorials) / "06-fused-attention.py"
    with triton_alias.aliased():
        naiad_mod = load_tutorial(path, "naiad")
    with static.pretend_hopper():
        triton_mod = load_tutorial(path, "triton")
    print("| kernel, config | loop | " + " | ".join(["instructions"] + list(KEYS)) + " |")
    print("|---|---|" + "---|" * (len(KEYS) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for cfg in args.configs.split(","):
            bm, rest = cfg.split("x")
            bn, stages = rest.split("s")
            for causal in (True, False):
                shape = (64, causal, int(bm), int(bn), int(stages), 4)
                for who, kernel in (("naiad", static.naiad_fwd(naiad_mod, *shape)),
                                    ("Triton", static.triton_fwd(triton_mod, *shape))):
                    name = f"{who}_{cfg}_{int(causal)}"
                    # the off-band loop, and the diagonal one when causal
                    for n, (count, ops) in enumerate(loops(sass_of(kernel, work, name))):
                        what = "causal" if causal else "full"
                        print(f"| {who} hd64 {what} {cfg} w4 | {n + 1} | {count} | "
                              + " | ".join(str(ops[k]) for k in KEYS) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
