"""Tutorial 06's forward: every sm_90 autotune config compiled by naiad, its TMA ring's mbarrier
protocol checked by the executable model for the benchmark's launch, without a GPU.

    python bench/nv_attention_ring_check.py /path/to/triton-tutorials [--quick] [--programs N]

Why: the multi-dot TMA ring hung tutorial 06's causal forward on the H200 (issue 9) while its
small GPU tests passed. For each config the tutorial keeps on sm_90 (``keep`` and
``prune_invalid_configs``, BLOCK_N <= HEAD_DIM), head dims 64 and 128, causal and not, this
compiles ``_attn_fwd`` three ways -- host ``TensorDescriptor`` s with host-built maps (the
launch path on Hopper, maps from the block shape the tutorial's pre_hook sets), the same with
the maps built in the kernel, and ``warp_specialize=True`` (descriptors made in the kernel
from raw tensors) -- and runs ``backends/nvidia/tests/mbarrier_model.py`` on the GPU IR for
Z=4, H=32, N_CTX=4096: every query block's program (the ring's trip counts depend on it),
one head. It prints one line per kernel: the model's verdict and the phases it completed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "backends" / "nvidia" / "tests"))

import mbarrier_model as model  # noqa: E402
from nv_attention_static import (DESCRIPTORS, _jit_function, fwd_configs,  # noqa: E402
                                 naiad_fwd)
from triton_tutorials import load_tutorial  # noqa: E402

Z, H, N_CTX = 4, 32, 4096


def naiad_fwd_warp_specialized(mod, hd, causal, bm, bn, s, w):
    """``_attn_fwd`` as launched with ``warp_specialize=True`` on Hopper: raw tensors, the
    descriptors made in the kernel (``_maybe_make_tensor_desc``)."""
    import naiad

    fn = _jit_function(mod._attn_fwd)
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "N_CTX": "i32"}
    sig.update({d: "*fp16" for d in DESCRIPTORS})
    spec = {n: {"divisibility": 16} for n in ("M", "N_CTX", *DESCRIPTORS)}
    consts = dict(HEAD_DIM=hd, BLOCK_M=bm, BLOCK_N=bn, FP8_OUTPUT=False, STAGE=3 if causal else 1,
                  warp_specialize=True, IS_HOPPER=True)
    return naiad.compile(fn, sig, consts, target="nvidia:sm_90",
                         options=dict(num_warps=w, num_stages=s), specialization=spec)


def launch_args(hd, bm, bn, host_maps) -> dict:
    """The scalar arguments of the benchmark's launch (and, for host maps, the maps the
    launcher builds from the block shapes the pre_hook sets)."""
    from naiad_nvidia.runtime.tensor_map import tensor_map_args

    rows = Z * H * N_CTX
    args = {"Z": Z, "H": H, "N_CTX": N_CTX, "sm_scale": 0.5}
    for d in DESCRIPTORS:
        block = (bm, hd) if d in ("desc_q", "desc_o") else (bn, hd)
        args.update({f"{d}__shape_0": rows, f"{d}__shape_1": hd, f"{d}__stride_0": hd,
                     f"{d}__stride_1": 1})
        if host_maps:
            m = tensor_map_args("fp16", 0, [rows, hd], [hd, 1], list(block))
            args[f"{d}__tensor_map"] = model.MapInfo(m.box_dims, 2)
    return args


def check(kernel, hd, bm, bn, host_maps, programs) -> str:
    fn = model.kernel_function(kernel)
    gpu = kernel.asm["gpu"]
    if "nvidia.tma_copy" not in gpu:
        return "no TMA ring"
    grid = (N_CTX // bm, Z * H)
    which = [(x, 0, 0) for x in range(grid[0])][:programs]
    try:
        t = model.run_programs(fn, launch_args(hd, bm, bn, host_maps), grid, which,
                               kernel.metadata["shared"])
    except model.ProtocolError as e:
        return f"HANG/RACE: {e}"
    loops = gpu.count("nvidia.tma_init")
    return f"ok ({loops} ring loop(s), {t.phases} phases over {len(which)} programs)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", help="folder holding Triton's tutorial files")
    ap.add_argument("--quick", action="store_true", help="two configs per case")
    ap.add_argument("--programs", type=int, default=None, help="first N query blocks only")
    args = ap.parse_args(argv)
    from naiad.compat import triton_alias

    with triton_alias.aliased():
        mod = load_tutorial(Path(args.tutorials) / "06-fused-attention.py", "naiad")
    bad = 0
    for hd in (64, 128):
        for causal in (True, False):
            for bm, bn, s, w in fwd_configs(hd, causal, args.quick):
                for form in ("host maps", "in-kernel maps", "warp_specialize"):
                    t0 = time.time()
                    try:
                        if form == "warp_specialize":
                            k = naiad_fwd_warp_specialized(mod, hd, causal, bm, bn, s, w)
                        else:
                            k = naiad_fwd(mod, hd, causal, bm, bn, s, w,
                                          host_maps=form == "host maps")
                        verdict = check(k, hd, bm, bn, form == "host maps",
                                        args.programs or N_CTX // bm)
                    except Exception as exc:  # noqa: BLE001 -- reported, the sweep goes on
                        verdict = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
                    bad += verdict.startswith(("HANG", "error"))
                    print(f"hd{hd} {'causal' if causal else 'full  '} BM{bm} BN{bn} s{s} w{w} "
                          f"{form:15s} {verdict}  [{time.time() - t0:.1f}s]", flush=True)
    print(f"{bad} kernel(s) would hang, race or failed to compile")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
