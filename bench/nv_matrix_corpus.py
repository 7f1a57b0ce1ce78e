"""A fingerprint of every NVIDIA matrix-path compile: the acceptance test of refactors that must not
change the code (issue 10: the NVIDIA plugin moving onto the core matrix pipeline).

    python bench/nv_matrix_corpus.py /path/to/triton-tutorials --out bench/nv_matrix_corpus.json
    python bench/nv_matrix_corpus.py /path/to/triton-tutorials --check bench/nv_matrix_corpus.json

No GPU is needed. The corpus: the tutorial configurations of ``bench/nv_static.py`` (03 fp16 and
fp8e5, 08, 09), tutorial 06's attention forward (the ``--quick`` configs of
``bench/nv_attention_static.py``) and backward, the conformance ``dot_kernel`` and
``matmul_kernel`` (``conformance/test_dot.py``) with f16/bf16/tf32/ieee/int8/float8 operands, f16
accumulators, small, odd and large shapes, 1/2/4/8 warps, for ``sm_90`` (wgmma on and off) and
``sm_80``, plus a loop-invariant-operand (attention-shaped) kernel. Per compile it records a
hash of the PTX, the registers and spill bytes from nvJitLink's log, a hash of the performance
remarks, and the GPU-IR op names of the dots -- or the error. ``--check`` compiles again and
lists every case whose fingerprint moved (exit status 1 when any did).
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

ARCHS = ("sm_90", "sm_80")


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(compile_fn) -> dict:
    try:
        k = compile_fn()
    except Exception as exc:  # noqa: BLE001 -- a failing compile is part of the fingerprint
        text = f"{type(exc).__name__}: {exc}".replace(str(ROOT) + "/", "")
        return {"error": " ".join(text.split())[:300]}
    md, ptx, gpu = k.metadata, k.asm.get("ptx", ""), k.asm.get("gpu", "")
    ops = collections.Counter(re.findall(r"= (nvidia\.\w+|matrix_mma|dot) ", gpu))
    return {"ptx": _h(ptx), "registers": md.get("registers"), "spills": md.get("spill_bytes"),
            "shared": md.get("shared"), "mma": ptx.count("mma.sync") + ptx.count("wgmma.mma_async"),
            "remarks": _h("\n".join(map(str, md.get("remarks") or []))),
            "ops": dict(sorted(ops.items()))}


# -- the conformance dots -----------------------------------------------------------------------
def conformance_cases():
    import naiad
    import naiad.language as tl
    from conformance.test_dot import dot_kernel, matmul_kernel

    out_t = {"f32": tl.float32, "f16": tl.float16, "i32": tl.int32}
    ptr = {"f32": "*fp32", "f16": "*fp16", "bf16": "*bf16", "i8": "*i8", "i32": "*i32",
           "e4m3": "*fp8e4nv", "e5m2": "*fp8e5"}
    # (operand, accumulator, input_precision)
    kinds = [("f16", "f32", "ieee"), ("bf16", "f32", "ieee"), ("f32", "f32", "tf32"),
             ("f32", "f32", "ieee"), ("f16", "f16", "ieee"), ("i8", "i32", "ieee"),
             ("e4m3", "f32", "ieee"), ("e5m2", "f32", "ieee")]
    shapes = [(16, 16, 16), (32, 64, 16), (64, 32, 32), (16, 128, 64), (128, 64, 32),
              (16, 16, 32), (8, 8, 8), (256, 128, 32)]
    many_warps = ((64, 32, 32), (128, 64, 32), (256, 128, 32))
    for arch in ARCHS:
        for wgmma in ((True, False) if arch == "sm_90" else (True,)):
            for ab, acc, prec in kinds:
                for m, n, k in shapes:
                    for w in ((1, 4, 8) if (m, n, k) in many_warps else (4,)):
                        name = f"dot {arch} wgmma={wgmma} {ab}->{acc} {prec} {m}x{n}x{k} w{w}"
                        sig = {"a_ptr": ptr[ab], "b_ptr": ptr[ab], "c_ptr": ptr[acc]}
                        cx = dict(M=m, N=n, K=k, OUT=out_t[acc], PRECISION=prec)
                        opts = {"num_warps": w, "wgmma": wgmma}
                        yield name, (lambda sig=sig, cx=cx, arch=arch, opts=opts: naiad.compile(
                            dot_kernel, sig, cx, target=f"nvidia:{arch}", options=opts))
            for ab, prec in (("f16", "ieee"), ("bf16", "ieee"), ("f32", "tf32"), ("i8", "ieee")):
                for bm, bn, bk, w, s in ((32, 32, 32, 4, 2), (64, 64, 32, 4, 3),
                                         (128, 128, 64, 8, 3), (128, 64, 32, 4, 4),
                                         (64, 128, 64, 4, 1)):
                    name = f"matmul {arch} wgmma={wgmma} {ab} {prec} {bm}x{bn}x{bk} w{w} s{s}"
                    acc = "i32" if ab == "i8" else "f32"
                    sig = {"a_ptr": ptr[ab], "b_ptr": ptr[ab], "c_ptr": ptr[acc]}
                    sig.update({p: "i32" for p in ("M", "N", "K", "stride_am", "stride_bk",
                                                   "stride_cm")})
                    spec = {p: {"divisibility": 16} for p in ("a_ptr", "b_ptr", "c_ptr", "K",
                                                              "stride_am", "stride_bk",
                                                              "stride_cm")}
                    opts = {"num_warps": w, "num_stages": s, "wgmma": wgmma}
                    yield name, (lambda sig=sig, bm=bm, bn=bn, bk=bk, arch=arch, opts=opts,
                                 spec=spec: naiad.compile(
                                     matmul_kernel, sig, dict(BM=bm, BN=bn, BK=bk),
                                     target=f"nvidia:{arch}", options=opts,
                                     specialization=spec))
            for m, n, d, w in ((64, 64, 64, 4), (128, 64, 64, 8), (64, 32, 128, 4)):
                name = f"attention-shaped {arch} wgmma={wgmma} {m}x{n}x{d} w{w}"
                yield name, (lambda m=m, n=n, d=d, w=w, arch=arch, wgmma=wgmma: naiad.compile(
                    invariant_q_kernel, {"q_ptr": "*fp16", "k_ptr": "*fp16", "o_ptr": "*fp32",
                                         "L": "i32"},
                    dict(M=m, N=n, D=d), target=f"nvidia:{arch}",
                    options={"num_warps": w, "num_stages": 2, "wgmma": wgmma},
                    specialization={"L": {"divisibility": 16}}))


def _invariant_q_kernel():
    import naiad
    import naiad.language as tl

    @naiad.jit
    def invariant_q_kernel(q_ptr, k_ptr, o_ptr, L, M: tl.constexpr, N: tl.constexpr,
                           D: tl.constexpr):
        rm = tl.arange(0, M)
        rn = tl.arange(0, N)
        rd = tl.arange(0, D)
        q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])          # loop-invariant operand
        acc = tl.zeros((M, N), dtype=tl.float32)
        for j in range(0, L, N):
            kt = tl.load(k_ptr + rd[:, None] + (j + rn)[None, :] * D)
            acc += tl.dot(q, kt)
        tl.store(o_ptr + rm[:, None] * N + rn[None, :], acc)

    return invariant_q_kernel


invariant_q_kernel = None


# -- the tutorials ------------------------------------------------------------------------------
def tutorial_cases(tutorials: Path, quick: bool):
    import naiad
    import nv_attention_static as att
    import nv_static
    from naiad.compat import triton_alias
    from triton_tutorials import load_tutorial

    for case in nv_static.CASES:
        mod = nv_static.load_kernels(tutorials / nv_static.FILES[case.tutorial], "naiad")
        cfgs = nv_static.configs(mod, case.kernel)
        for constexprs, warps, stages in cfgs[:2] if quick else cfgs:
            for arch in ARCHS:
                name = (f"tutorial {case.tutorial} {case.kernel} {case.variant} {arch} "
                        f"{sorted(constexprs.items())} w{warps} s{stages}")

                def run(case=case, mod=mod, constexprs=constexprs, warps=warps, stages=stages,
                        arch=arch):
                    spec = {p: {"divisibility": 16} for p in case.divisible}
                    spec.update({p: {"equal_to": 1} for p in case.ones})
                    fn = getattr(mod, case.kernel)
                    return naiad.compile(getattr(fn, "fn", fn), signature=dict(case.signature),
                                         target=f"nvidia:{arch}",
                                         constexprs={**constexprs, **case.extra_constexprs},
                                         options={"num_warps": warps, "num_stages": stages},
                                         specialization=spec)
                yield name, run
    with triton_alias.aliased():
        mod06 = load_tutorial(tutorials / "06-fused-attention.py", "naiad")
    for hd in (64, 128):
        for causal in (False, True):
            for bm, bn, s, w in att.fwd_configs(hd, causal, quick=True):
                yield (f"tutorial 06 _attn_fwd hd{hd} causal={causal} {bm}x{bn} w{w} s{s}",
                       lambda hd=hd, causal=causal, bm=bm, bn=bn, s=s, w=w:
                       att.naiad_fwd(mod06, hd, causal, bm, bn, s, w))
    for causal in (False, True):
        yield (f"tutorial 06 _attn_bwd hd64 causal={causal}",
               lambda causal=causal: att.naiad_bwd(mod06, 64, causal))


def main(argv=None) -> int:
    global invariant_q_kernel
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("--out", type=Path, help="write the fingerprints here (JSON)")
    ap.add_argument("--check", type=Path, help="compare with these fingerprints")
    ap.add_argument("--quick", action="store_true", help="two configs per tutorial case")
    ap.add_argument("--match", default="", help="only cases whose name matches this regex")
    args = ap.parse_args(argv)
    invariant_q_kernel = _invariant_q_kernel()
    want = json.loads(args.check.read_text()) if args.check else None
    result, moved, t0 = {}, [], time.time()
    for source in (conformance_cases(), tutorial_cases(args.tutorials, args.quick)):
        for name, fn in source:
            if not re.search(args.match, name):
                continue
            result[name] = fp = fingerprint(fn)
            print(json.dumps({name: fp}, sort_keys=True), flush=True)
            if want is not None and name in want and want[name] != fp:
                moved.append(name)
                print(f"MOVED {name}\n  was {want[name]}\n  now {fp}", flush=True)
    errors = sum("error" in v for v in result.values())
    print(f"{len(result)} compiles ({errors} refused with an error), {time.time() - t0:.0f} s; "
          + (f"{len(moved)} moved" if want is not None else "no comparison"))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
