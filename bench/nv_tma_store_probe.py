"""Which TMA store writes a padded row's padding? naiad and Triton, in-kernel and host maps.

    python3 bench/nv_tma_store_probe.py        # on a machine with an NVIDIA sm_90 GPU

Why: on the H200 a TMA store through a tensor map naiad builds in the kernel wrote the 3 padding
columns of every row of a 37 x 45 float tensor whose rows are 48 floats apart (conformance's
``test_tensor_descriptor_load_store``), so naiad keeps such stores masked
(``passes/tma_ring.DEVICE_MAP_STORE``). Statically naiad's map fields equal Triton's for the same
kernel (address, rank, box, global dims 45 x 37, stride 192 B, element strides, element type,
64-byte swizzle); the difference is where the map is built: naiad writes it in global memory
(zero stores, then ``tensormap.replace .global``, then the tensormap proxy fences), Triton in
shared memory and copies it out with ``tensormap.cp_fenceproxy``. This probe stores the same
block four ways and counts, per way, padding elements overwritten and in-range elements wrong:

* naiad, in-kernel map, TMA store forced on (the remark's check bypassed for this probe only);
* naiad, host ``TensorDescriptor`` (map encoded by the driver);
* Triton, in-kernel descriptor (``triton.set_allocator``); Triton, host ``TensorDescriptor``.

If Triton's in-kernel store is exact and naiad's is not, the construction is at fault; if both
host-map stores write the padding too, TMA does, and host descriptors of padded tensors need
the same masked stores.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SOURCE = '''
import naiad as triton
import naiad.language as tl


@triton.jit
def store_in_kernel_map(X, Out, M, N, row_stride, BM: tl.constexpr, BN: tl.constexpr):
    dst = tl.make_tensor_descriptor(Out, [M, N], [row_stride, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    x = tl.load(X + rows[:, None] * BN * tl.num_programs(1) + cols[None, :])
    dst.store([pm * BM, pn * BN], x)


@triton.jit
def store_host_map(X, dst, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    x = tl.load(X + rows[:, None] * BN * tl.num_programs(1) + cols[None, :])
    dst.store([pm * BM, pn * BN], x)
'''

M, N, STRIDE, BM, BN = 37, 45, 48, 16, 16
POISON = -7.0


def _force_naiad_device_map_stores():
    """Let naiad's TMA store take maps built in the kernel (the probe's question)."""
    import inspect

    import naiad_nvidia.passes.device_tensor_maps as maps

    made_by = maps.made_by

    def only_outside_store_check(op):
        return None if inspect.stack()[1].function == "_store_by_tma" else made_by(op)

    maps.made_by = only_outside_store_check


def _count(torch, out, x):
    padding = out[:, N:]
    want = x[:M, :N]
    return (int((padding != POISON).sum()), int((out[:, :N] != want).sum()))


def run(flavour: str, torch):
    from same_source import load_kernels

    grid = (-(-M // BM), -(-N // BN))
    x = torch.randn(grid[0] * BM, grid[1] * BN, device="cuda")
    results = {}
    module = load_kernels(SOURCE, flavour, "tma_store_probe")
    in_kernel, host = module.store_in_kernel_map, module.store_host_map
    if flavour == "naiad":
        import naiad
        from naiad.tools.tensor_descriptor import TensorDescriptor
        _force_naiad_device_map_stores()
        naiad.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                    device="cuda"))
    else:
        import triton
        from triton.tools.tensor_descriptor import TensorDescriptor
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                     device="cuda"))
    out = torch.full((M, STRIDE), POISON, device="cuda")
    in_kernel[grid](x, out, M, N, STRIDE, BM=BM, BN=BN)
    torch.cuda.synchronize()
    results["in-kernel map"] = _count(torch, out, x)
    out = torch.full((M, STRIDE), POISON, device="cuda")
    desc = TensorDescriptor(out, [M, N], [STRIDE, 1], [BM, BN])
    host[grid](x, desc, BM=BM, BN=BN)
    torch.cuda.synchronize()
    results["host TensorDescriptor"] = _count(torch, out, x)
    return results


def main():
    import torch

    print(f"TMA store of {BM}x{BN} float blocks into a {M}x{N} view, rows {STRIDE} floats apart;"
          f" {M * (STRIDE - N)} padding elements poisoned")
    print("| compiler | map | padding elements written | in-range elements wrong |")
    print("|---|---|---|---|")
    for flavour in ("naiad", "triton"):
        try:
            for way, (pad, wrong) in run(flavour, torch).items():
                print(f"| {flavour} | {way} | {pad} | {wrong} |")
        except Exception as exc:   # noqa: BLE001 -- report and go on to the other compiler
            print(f"| {flavour} | - | failed: {type(exc).__name__}: {exc} | |")


if __name__ == "__main__":
    main()
