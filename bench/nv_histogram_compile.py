"""Why Triton's ``test_histogram_mask[1024-128]`` outran its time limit on the H200: compile
the test's kernel for sm_90 (no GPU needed) and report the stage times, registers, spills and
IR sizes. ``tl.histogram`` is built in the tile IR as a one-hot compare of every element with
every bin summed over the elements (``core/naiad/language/indexing.py``), so the code grows
with elements x bins; Triton counts with shared-memory atomics instead.

Usage: ``python bench/nv_histogram_compile.py [M N ...]`` (pairs; default 256 128 1024 128).
"""
from __future__ import annotations

import sys
import time

import naiad
import naiad.language as tl


@naiad.jit
def histogram_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offset1 = tl.arange(0, 2 * M)
    offset2 = tl.arange(0, N)
    mask = offset1 < M
    x = tl.load(x_ptr + offset1)
    z = tl.histogram(x, N, mask)
    tl.store(z_ptr + offset2, z)


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [256, 128, 1024, 128]
    print("| M | N | compile s | LLVM->PTX s | PTX->cubin s | registers | spill bytes | LLVM IR lines |")
    print("|---|---|---|---|---|---|---|---|")
    for m, n in zip(sizes[::2], sizes[1::2]):
        t0 = time.perf_counter()
        k = naiad.compile(histogram_kernel, signature="*i32,*i32", constexprs={"M": m, "N": n},
                          target="nvidia:sm_90")
        md = k.metadata
        print(f"| {m} | {n} | {time.perf_counter() - t0:.1f} | {md['llvm_to_ptx_s']:.1f} | "
              f"{md['ptx_to_cubin_s']:.1f} | {md['registers']} | {md['spill_bytes']} | "
              f"{k.asm['llir'].count(chr(10))} |")


if __name__ == "__main__":
    main(sys.argv[1:])
