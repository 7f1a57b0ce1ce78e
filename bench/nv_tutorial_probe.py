"""Device probe for the tutorial kernels that run slower than Triton's (02, 04, 05, 08): kernel-only
times at fixed grids and configurations, naiad and Triton from the same unmodified file.

    python bench/nv_tutorial_probe.py /path/to/triton-tutorials [--reps 50]

``bench/triton_tutorials.py`` times each tutorial's host function as a user calls it (host
work, autotuning choice and all). This probe takes those apart, on a GPU only:

* 02 softmax: the persistent kernel on the grid the tutorial computes (4 programs per SM on an
  H200) and on 3 per SM; naiad with the driver's default L1/shared carveout and with the maximum
  shared carveout (what the launcher now asks for above 48 KiB), with the occupancy the driver
  reports for each; and a same-loop variant with ``exp2`` and one reciprocal per row, to bound
  what naiad's accurate ``exp`` and correctly rounded ``/`` cost against Triton's approximate
  ones (Triton: ``ex2.approx`` and ``div.full.f32``).
* 04 dropout: kernel-only time of each (their PTX differ only in ``div.rn`` vs ``div.full``).
* 05 layer norm: each of the three kernels alone (forward, backward dx, backward dw/db).
* 08 grouped GEMM: every autotune configuration launched directly (no autotuner), so a slower
  kernel is told apart from a different choice; and the configuration each autotuner picked.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import triton_tutorials  # noqa: E402  (the tutorial loader)

import naiad  # noqa: E402
import naiad.language as ntl  # noqa: E402


def event_time(torch, fn, reps: int) -> float:
    """Median milliseconds of ``fn()`` between CUDA events, L2 flushed before each call."""
    flush = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def occupancy(function, threads: int, shared: int) -> int:
    from cuda.bindings import driver as cu

    err, n = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, shared)
    return int(n) if not int(err) else -1


def set_carveout(function, percent: int) -> None:
    from cuda.bindings import driver as cu

    attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    (err,) = cu.cuFuncSetAttribute(function, attr, percent)
    assert not int(err), err


@naiad.jit
def softmax_variant(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                    BLOCK_SIZE: ntl.constexpr, num_stages: ntl.constexpr,
                    FAST_EXP: ntl.constexpr, RECIPROCAL: ntl.constexpr):
    """Tutorial 02's loop with Triton's approximate exp and/or one reciprocal per row."""
    for row_idx in ntl.range(ntl.program_id(0), n_rows, ntl.num_programs(0),
                             num_stages=num_stages):
        col_offsets = ntl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = ntl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=mask,
                       other=-float("inf"))
        row = row - ntl.max(row, axis=0)
        if FAST_EXP:
            num = ntl.exp2(row * 1.4426950408889634)
        else:
            num = ntl.exp(row)
        if RECIPROCAL:
            out = num * (1.0 / ntl.sum(num, axis=0))
        else:
            out = num / ntl.sum(num, axis=0)
        ntl.store(output_ptr + row_idx * output_row_stride + col_offsets, out, mask=mask)


def probe_softmax(torch, tut: Path, reps: int) -> None:
    import naiad_nvidia.runtime.launcher as nv_launcher
    from naiad.runtime.compiled_launch import entry_of

    # first naiad launch with the driver's default carveout (-1): the "before" of the fix
    nv_launcher._CARVEOUT_MAX_SHARED = -1
    both = triton_tutorials.load_both(tut / "02-fused-softmax.py", with_triton=True)
    x = torch.randn(4096, 4096, device="cuda")
    want = torch.softmax(x, dim=1)
    n_sm = torch.cuda.get_device_properties(0).multi_processor_count
    rows, cols = x.shape

    def run(_, grid, k):
        y = torch.empty_like(x)
        k[(grid, 1, 1)](y, x, x.stride(0), y.stride(0), rows, cols, 4096, 4)
        return y

    nk = both["naiad"].softmax_kernel.warmup(
        torch.empty_like(x), x, x.stride(0), x.stride(0), rows, cols, BLOCK_SIZE=4096,
        num_stages=4, num_warps=8, grid=(1,))
    nk._init_handles()
    nv_launcher._CARVEOUT_MAX_SHARED = 100    # the fix, for every later kernel
    print(f"02 naiad: {nk.n_regs} regs, shared {nk.metadata.shared} B")
    fn = entry_of(nk).handle.function
    for label, carve in (("driver default carveout", None), ("max shared carveout", 100)):
        if carve is not None:
            set_carveout(fn, carve)
        occ = occupancy(fn, 256, nk.metadata.shared)
        for per_sm in (4, 3):
            y = run(None, n_sm * per_sm, nk)
            torch.cuda.synchronize()
            ok = torch.allclose(y, want, atol=1e-6, rtol=1e-5)
            ms = event_time(torch, lambda: run(None, n_sm * per_sm, nk), reps)
            print(f"02 naiad {label}: occupancy {occ}/SM, grid {n_sm * per_sm} "
                  f"({per_sm}/SM): {ms:.4f} ms ok={ok}")
    tmod = both["triton"]
    if not isinstance(tmod, BaseException) and tmod is not None:
        tk = tmod.softmax_kernel.warmup(
            torch.empty_like(x), x, x.stride(0), x.stride(0), rows, cols, BLOCK_SIZE=4096,
            num_stages=4, num_warps=8, grid=(1,))
        tk._init_handles()
        print(f"02 triton: {tk.n_regs} regs, shared {tk.metadata.shared} B")
        for per_sm in (4, 3):
            ms = event_time(torch, lambda: run(None, n_sm * per_sm, tk), reps)
            print(f"02 triton grid {n_sm * per_sm} ({per_sm}/SM): {ms:.4f} ms")

    def variant(fast_exp: bool, reciprocal: bool):
        def go(grid):
            y = torch.empty_like(x)
            # constexprs by position: `num_stages` is also the name of a launch option
            softmax_variant[(grid,)](y, x, x.stride(0), y.stride(0), rows, cols, 4096, 4,
                                     fast_exp, reciprocal, num_warps=8)
            return y
        return go

    for fast_exp, reciprocal in ((False, False), (True, False), (False, True), (True, True)):
        go = variant(fast_exp, reciprocal)
        y = go(n_sm * 4)
        torch.cuda.synchronize()
        ok = torch.allclose(y, want, atol=1e-5, rtol=1e-4)
        ms = event_time(torch, lambda: go(n_sm * 4), reps)
        print(f"02 naiad variant exp={'exp2(x*log2e)' if fast_exp else 'tl.exp'} "
              f"div={'x*(1/s)' if reciprocal else 'x/s'}, grid {n_sm * 4}: {ms:.4f} ms "
              f"ok={ok}")


def probe_layer_norm(torch, tut: Path, reps: int) -> None:
    both = triton_tutorials.load_both(tut / "05-layer-norm.py", with_triton=True)
    m, n = 4096, 8192
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w, b = (torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(2))
    dy = torch.randn(m, n, device="cuda", dtype=torch.float16) * 0.1
    for who in ("naiad", "triton"):
        mod = both[who]
        if mod is None or isinstance(mod, BaseException):
            print(f"05 {who}: not loaded ({mod!r})")
            continue
        y = torch.empty_like(x)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        group = 96
        locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
        dw_part = torch.zeros(group, n, dtype=x.dtype, device="cuda")
        db_part = torch.zeros(group, n, dtype=x.dtype, device="cuda")
        dw, db, dx = torch.empty_like(w), torch.empty_like(b), torch.empty_like(x)

        def fwd():
            mod._layer_norm_fwd_fused[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5,
                                           BLOCK_SIZE=8192, num_warps=8, num_ctas=1)

        def bwd_dx():
            locks.zero_()
            mod._layer_norm_bwd_dx_fused[(m,)](dx, dy, dw_part, db_part, x, w, mean, rstd,
                                              locks, x.stride(0), n, BLOCK_SIZE_N=8192,
                                              GROUP_SIZE_M=group, num_warps=8)

        def dwdb():
            mod._layer_norm_bwd_dwdb[((n + 127) // 128,)](dw_part, db_part, dw, db, group, n,
                                                          BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
                                                          num_ctas=1)
        for name, fn in (("fwd", fwd), ("bwd_dx (+ locks.zero_)", bwd_dx), ("bwd_dwdb", dwdb)):
            print(f"05 {who} {name}: {event_time(torch, fn, reps):.4f} ms")
        torch.cuda.synchronize()
        print(f"05 {who} y[0,:4] {y[0, :4].tolist()} dw[:4] {dw[:4].tolist()}")


def probe_dropout(torch, tut: Path, reps: int) -> None:
    both = triton_tutorials.load_both(tut / "04-low-memory-dropout.py", with_triton=True)
    x = torch.randn(1 << 24, device="cuda")
    n = x.numel()
    for who in ("naiad", "triton"):
        mod = both[who]
        if mod is None or isinstance(mod, BaseException):
            print(f"04 {who}: not loaded ({mod!r})")
            continue
        out = torch.empty_like(x)
        kern = mod._seeded_dropout
        go = lambda: kern[((n + 1023) // 1024,)](x, out, n, 0.5, 123,  # noqa: E731
                                                  BLOCK_SIZE=1024)
        print(f"04 {who} kernel only: {event_time(torch, go, reps):.4f} ms")


def probe_grouped(torch, tut: Path, reps: int) -> None:
    both = triton_tutorials.load_both(tut / "08-grouped-gemm.py", with_triton=True)
    g = 4
    a = [torch.randn(1024, 1024, device="cuda", dtype=torch.float16) for _ in range(g)]
    b = [torch.randn(1024, 1024, device="cuda", dtype=torch.float16) for _ in range(g)]
    c = [torch.empty(1024, 1024, device="cuda", dtype=torch.float16) for _ in range(g)]
    want = [torch.matmul(p.float(), q.float()) for p, q in zip(a, b)]
    ptrs = [torch.tensor([t.data_ptr() for t in ts], device="cuda") for ts in (a, b, c)]
    sizes = torch.tensor([1024] * 3 * g, dtype=torch.int32, device="cuda")
    lds = torch.tensor([1024] * 3 * g, dtype=torch.int32, device="cuda")
    for who in ("naiad", "triton"):
        mod = both[who]
        if mod is None or isinstance(mod, BaseException):
            print(f"08 {who}: not loaded ({mod!r})")
            continue
        tuner = mod.grouped_matmul_kernel
        mod.group_gemm_fn(a, b)                     # the autotuner's own choice
        print(f"08 {who} autotuner picked: {tuner.best_config}")
        for cfg in tuner.configs:
            kw = dict(cfg.kwargs)
            try:
                def go(kw=kw, cfg=cfg):
                    tuner.fn[(kw["NUM_SM"],)](*ptrs, sizes, lds, g, **kw,
                                              num_warps=cfg.num_warps,
                                              num_stages=cfg.num_stages)
                for t in c:
                    t.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                err = max(float((t.float() - w).abs().max()) for t, w in zip(c, want))
                ms = event_time(torch, go, reps)
                print(f"08 {who} {kw} w{cfg.num_warps} s{cfg.num_stages}: {ms:.4f} ms "
                      f"max err {err:.3g}")
            except Exception as exc:  # noqa: BLE001 -- the other configs still run
                print(f"08 {who} {kw}: failed {type(exc).__name__}: {exc}"[:300])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--only", default="02,04,05,08")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import torch

    if not torch.cuda.is_available():
        print("no GPU: this probe times kernels on the device only")
        return 0
    probes = {"02": probe_softmax, "04": probe_dropout, "05": probe_layer_norm,
              "08": probe_grouped}
    for key in args.only.split(","):
        try:
            probes[key](torch, args.tutorials, args.reps)
        except Exception:  # noqa: BLE001 -- the next probe still runs
            print(f"{key} probe failed:\n{traceback.format_exc()[-1500:]}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
