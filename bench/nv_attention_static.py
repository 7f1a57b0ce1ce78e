"""Tutorial 06 (fused attention) compiled for sm_90 by naiad and by Triton, without a GPU.

    python bench/nv_attention_static.py /path/to/triton-tutorials [--quick] [--out FILE]

Loads ``06-fused-attention.py`` twice (``triton`` resolved to naiad, as
``bench/triton_tutorials.py`` does, and the real Triton), then compiles, for ``nvidia:sm_90``
and ``GPUTarget("cuda", 90, 32)``:

* ``_attn_fwd`` -- fp16, causal and not, HEAD_DIM 64 and 128, every autotune config the file
  keeps on sm_90 (``keep`` and ``prune_invalid_configs``), with host tensor descriptors as the
  tutorial passes them on Hopper without warp specialisation;
* ``_attn_bwd`` -- the config ``_attention.backward`` launches (4 warps, 5 stages), causal and not.

Per kernel it prints registers / spill-store bytes / shared bytes, the number of ``wgmma.mma_async``
and ``mma.sync`` instructions in the PTX, the GPU-IR op each ``tl.dot`` became, and naiad's
performance remarks (why a dot or load is off its fast path). Registers and spills come from
nvJitLink's info log, for Triton's PTX too (Triton's ``n_regs``/``n_spills`` are known only
once a kernel is loaded on a device; its ``n_spills`` counts 4-byte words of local memory,
not spill-store bytes); no device is used.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import importlib.util
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from triton_tutorials import load_tutorial  # noqa: E402

DESCRIPTORS = ("desc_q", "desc_k", "desc_v", "desc_o")
#: the operand-carrying GPU-IR ops a dot may become on NVIDIA
DOT_OPS = ("nvidia.wgmma_ring", "nvidia.wgmma_staged", "nvidia.mma_ring", "nvidia.mma_staged",
           "nvidia.mma", "dot")


def _jit_function(obj):
    """The ``@jit`` function under an autotuner / heuristics wrapper."""
    while type(obj).__name__ in ("Autotuner", "Heuristics"):
        obj = obj.fn
    return obj


def fwd_configs(hd: int, causal: bool, quick: bool):
    """(BLOCK_M, BLOCK_N, num_stages, num_warps) the tutorial autotunes over on sm_90."""
    out = []
    for bm in (64, 128):
        for bn in (32, 64, 128):
            for s in (2, 3, 4):
                for w in (4, 8):
                    if bm * bn < 128 * 128 and w == 8:      # the file's keep() on sm_90
                        continue
                    if causal and bm < bn:                  # prune_invalid_configs
                        continue
                    if bn > hd:                             # tl.static_assert(BLOCK_N <= HEAD_DIM)
                        continue
                    out.append((bm, bn, s, w))
    if quick:   # the config the tutorial's own tests use, and the largest tile
        out = [c for c in out if c in ((128, 64, 2, 4), (128, 128, 3, 8))]
    return out


# -- naiad ----------------------------------------------------------------------------------
def naiad_fwd(mod, hd, causal, bm, bn, s, w, host_maps=False):
    """``host_maps``: the descriptors come with host-built tensor maps (``__tensor_map``
    arguments), as the launch path passes them on an sm_90 device; without, the companion
    builds them in the kernel (the same TMA ring, maps made on the device)."""
    import naiad
    from naiad.runtime.descriptor_args import _companion_class

    fn = _jit_function(mod._attn_fwd)
    kernel = _companion_class()(fn, {d: 2 for d in DESCRIPTORS},
                                {d: True for d in DESCRIPTORS} if host_maps else None)
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "N_CTX": "i32"}
    spec = {"M": {"divisibility": 16}, "N_CTX": {"divisibility": 16}}
    consts = dict(HEAD_DIM=hd, BLOCK_M=bm, BLOCK_N=bn, FP8_OUTPUT=False, STAGE=3 if causal else 1,
                  warp_specialize=False, IS_HOPPER=True)
    for d in DESCRIPTORS:
        sig[f"{d}__base"] = "*fp16"
        spec[f"{d}__base"] = {"divisibility": 16}
        for i in range(2):
            sig[f"{d}__shape_{i}"] = "i32"
            sig[f"{d}__stride_{i}"] = "i32"
        # what the runtime derives from the tutorial's shapes: all but the unit stride % 16
        spec[f"{d}__shape_0"] = spec[f"{d}__shape_1"] = {"divisibility": 16}
        spec[f"{d}__stride_0"] = {"divisibility": 16}
        spec[f"{d}__stride_1"] = {"equal_to": 1}
        consts[f"{d}__block"] = (bm, hd) if d in ("desc_q", "desc_o") else (bn, hd)
        consts[f"{d}__padding"] = "zero"
        if host_maps:
            sig[f"{d}__tensor_map"] = "*u8"
            consts[f"{d}__block_gcd"] = consts[f"{d}__block"]   # the tutorial's rows tile
    return naiad.compile(kernel, sig, consts, target="nvidia:sm_90",
                         options=dict(num_warps=w, num_stages=s), specialization=spec)


BWD_CONSTS = dict(BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2)
BWD_POINTERS = ("Q", "K", "V", "DO", "DQ", "DK", "DV")


def naiad_bwd(mod, hd, causal):
    import naiad

    fn = _jit_function(mod._attn_bwd)
    sig = {n: "*fp16" for n in BWD_POINTERS}
    sig.update(M="*fp32", D="*fp32", sm_scale="fp32", stride_z="i32", stride_h="i32",
               stride_tok="i32", stride_d="i32", H="i32", N_CTX="i32")
    spec = {n: {"divisibility": 16} for n in (*BWD_POINTERS, "M", "D", "stride_z", "stride_h",
                                              "stride_tok", "N_CTX")}
    spec["stride_d"] = {"equal_to": 1}
    return naiad.compile(fn, sig, dict(BWD_CONSTS, HEAD_DIM=hd, CAUSAL=causal),
                         target="nvidia:sm_90", options=dict(num_warps=4, num_stages=5),
                         specialization=spec)


def naiad_row(kernel) -> dict:
    md = kernel.metadata
    gpu = kernel.asm.get("gpu", "")
    resident = set(re.findall(r"(%\w+) = nvidia\.wgmma_resident", gpu))
    ops = collections.Counter()
    for line in gpu.splitlines():
        m = re.search(r"= (" + "|".join(map(re.escape, DOT_OPS)) + r") (%\w+)", line)
        if m:
            name = m.group(1).removeprefix("nvidia.")
            if "a_regs = true" in line:
                name += " (A in registers)"
            elif m.group(2) in resident:
                name += " (A resident)"
            ops[name] += 1
    ptx = kernel.asm.get("ptx", "")
    return dict(regs=md.get("registers"), spills=md.get("spill_bytes", 0),
                shared=md.get("shared", 0), wgmma=ptx.count("wgmma.mma_async"),
                mma=ptx.count("mma.sync.aligned"),
                paths=", ".join(f"{n} x{c}" for n, c in ops.items()),
                remarks=list(md.get("remarks", [])))


# -- Triton ---------------------------------------------------------------------------------
class _HopperWithoutDevice:
    """What the tutorial's module level asks Triton's active driver, answered for an H100/H200
    that is not here (only the kernels are compiled, nothing runs)."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")


@contextlib.contextmanager
def pretend_hopper():
    """Load the tutorial as on sm_90: Triton's driver and ``torch.cuda.get_device_capability``
    answer (9, 0) while its module level runs, then are restored."""
    import torch
    from triton.runtime import driver

    saved_active, saved_cap = driver._active, torch.cuda.get_device_capability
    driver.set_active(_HopperWithoutDevice())
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    try:
        yield
    finally:
        driver._active = saved_active
        torch.cuda.get_device_capability = saved_cap


def _triton_compile(fn, signature, constexprs, divisible, w, s):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    sig = {n: signature.get(n, "constexpr") for n in fn.arg_names}
    src = ASTSource(fn, sig, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=w, num_stages=s))


def triton_fwd(mod, hd, causal, bm, bn, s, w):
    fn = _jit_function(mod._attn_fwd)
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "N_CTX": "i32"}
    for d in DESCRIPTORS:
        rows = bm if d in ("desc_q", "desc_o") else bn
        sig[d] = f"tensordesc<fp16[{rows},{hd}]>"
    consts = dict(HEAD_DIM=hd, BLOCK_M=bm, BLOCK_N=bn, FP8_OUTPUT=False,
                  STAGE=3 if causal else 1, warp_specialize=False, IS_HOPPER=True)
    return _triton_compile(fn, sig, consts, ("M", "N_CTX"), w, s)


def triton_bwd(mod, hd, causal):
    fn = _jit_function(mod._attn_bwd)
    sig = {n: "*fp16" for n in BWD_POINTERS}
    sig.update(M="*fp32", D="*fp32", sm_scale="fp32", stride_z="i32", stride_h="i32",
               stride_tok="i32", stride_d="i32", H="i32", N_CTX="i32")
    consts = dict(BWD_CONSTS, HEAD_DIM=hd, CAUSAL=causal, stride_d=1)
    divisible = (*BWD_POINTERS, "M", "D", "stride_z", "stride_h", "stride_tok", "N_CTX")
    return _triton_compile(fn, sig, consts, divisible, 4, 5)


def nvjitlink_resources(ptx: str, arch: str, name: str) -> tuple[int, int]:
    """(registers, spill-store bytes) of ``ptx`` linked by nvJitLink, the assembler naiad's
    own kernels go through (Triton's CompiledKernel learns n_regs/n_spills only on a device)."""
    from naiad_nvidia.toolchain import parse_resource_report, ptx_to_cubin

    _, log = ptx_to_cubin(ptx, arch)
    report = parse_resource_report(log, name)
    return report.get("registers", -1), report.get("spill_bytes", 0)


def triton_row(kernel) -> dict:
    ptx = kernel.asm.get("ptx", "")
    arch = re.search(r"^\.target (\w+)", ptx, re.M).group(1)
    regs, spills = nvjitlink_resources(ptx, arch, kernel.metadata.name)
    return dict(regs=regs, spills=spills, shared=getattr(kernel.metadata, "shared", 0),
                wgmma=ptx.count("wgmma.mma_async"), mma=ptx.count("mma.sync.aligned"))


# -- the table ------------------------------------------------------------------------------
def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 -- recorded in the row, the table still prints
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]}"
                if str(exc).strip() else type(exc).__name__}


def _cell(row, key):
    if row is None:
        return "-"
    if "error" in row:
        return row["error"].replace("|", "/") if key == "regs" else ""
    return str(row.get(key, ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", help="folder holding Triton's tutorial files")
    ap.add_argument("--quick", action="store_true", help="two forward configs per case")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--only", choices=("fwd", "bwd"), default=None)
    ap.add_argument("--remarks", action="store_true", help="print naiad's remarks per kernel")
    ap.add_argument("--out", default=None, help="append the markdown table to this file")
    args = ap.parse_args(argv)

    from naiad.compat import triton_alias

    path = Path(args.tutorials) / "06-fused-attention.py"
    with triton_alias.aliased():
        naiad_mod = load_tutorial(path, "naiad")
    triton_mod = None
    if not args.no_triton and importlib.util.find_spec("triton") is not None:
        with pretend_hopper():
            triton_mod = load_tutorial(path, "triton")

    jobs = []
    if args.only != "bwd":
        for hd in (64, 128):
            for causal in (True, False):
                for cfg in fwd_configs(hd, causal, args.quick):
                    jobs.append((f"_attn_fwd hd{hd} {'causal' if causal else 'full'} "
                                 f"{cfg[0]}x{cfg[1]} s{cfg[2]} w{cfg[3]}",
                                 naiad_fwd, triton_fwd, (hd, causal, *cfg)))
    if args.only != "fwd":
        for hd in (64, 128):
            for causal in (True, False):
                jobs.append((f"_attn_bwd hd{hd} {'causal' if causal else 'full'} 32/128/128/32 "
                             f"s5 w4", naiad_bwd, triton_bwd, (hd, causal)))
    lines = ["| kernel, config | naiad regs | spills B | shared B | wgmma | mma.sync | "
             "naiad dot ops | Triton regs | spills B | shared B | wgmma | mma.sync |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    all_remarks = {}
    t0 = time.time()
    for label, nfn, tfn, params in jobs:
        n = _safe(lambda: naiad_row(nfn(naiad_mod, *params)))
        t = _safe(lambda: triton_row(tfn(triton_mod, *params))) if triton_mod else None
        lines.append(f"| {label} | " + " | ".join(_cell(n, k) for k in (
            "regs", "spills", "shared", "wgmma", "mma", "paths")) + " | "
            + " | ".join(_cell(t, k) for k in ("regs", "spills", "shared", "wgmma", "mma")) + " |")
        print(lines[-1], flush=True)
        for r in (n or {}).get("remarks", []):
            all_remarks.setdefault(re.sub(r"^(\w+ at \S+).*", r"\1", r), r)
        if args.remarks:
            for r in (n or {}).get("remarks", []):
                print(f"    remark: {r}")
    text = "\n".join(lines)
    if all_remarks:
        text += "\n\nnaiad's performance remarks (one per source line):\n\n" + "\n".join(
            f"- {r}" for r in all_remarks.values())
    print(f"\n{text}\n\n({len(jobs)} kernels, {time.time() - t0:.0f} s)")
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
