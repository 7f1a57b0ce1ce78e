"""Compile Triton's ``test_histogram_mask`` kernel for sm_90 (no GPU needed) and report the
stage times, registers, spills, IR size, the shared-memory atomics in the PTX and whether the
SASS has ``ATOMS.POPC.INC`` (what Triton's ``test_histogram`` asserts; needs cuobjdump on PATH or
in Triton's wheel, else "-"). ``tl.histogram`` is the tile-IR op ``histogram``, counted with one
shared-memory atomic per element (``core/naiad/gpu/lower/histogram.py``); it was a one-hot
compare of every element with every bin, whose code grew with elements x bins (1024 x 128:
198 s, 31,708 bytes spilled).

Usage: ``python bench/nv_histogram_compile.py [M N ...]`` (pairs; default: the sizes of
Triton's ``test_histogram_mask``). Set ``NAIAD_CACHE_DIR`` to an empty folder to time cold
compiles.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
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


#: Triton's test_histogram_mask sizes
TRITON_SIZES = [2048, 2, 1024, 8, 1024, 128, 256, 512, 32, 512, 8, 512, 8, 2]


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    spec = importlib.util.find_spec("triton")      # located, never imported
    if found is None and spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "backends", "nvidia",
                            "bin", "cuobjdump")
        found = path if os.access(path, os.X_OK) else None
    return found


def _popc_inc(tool: str | None, cubin: bytes) -> str:
    if tool is None:
        return "-"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(bytes(cubin))
        sass = subprocess.run([tool, "-sass", path], capture_output=True, text=True).stdout
    return str(sass.count("ATOMS.POPC.INC"))


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or TRITON_SIZES
    tool = _cuobjdump()
    print("| M | N | compile s | LLVM->PTX s | PTX->cubin s | registers | spill bytes | "
          "LLVM IR lines | PTX shared atomics | SASS ATOMS.POPC.INC |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, n in zip(sizes[::2], sizes[1::2]):
        t0 = time.perf_counter()
        k = naiad.compile(histogram_kernel, signature="*i32,*i32", constexprs={"M": m, "N": n},
                          target="nvidia:sm_90")
        md = k.metadata
        atomics = len(re.findall(r"\b(?:atom|red)\.shared\.add", k.asm["ptx"]))
        print(f"| {m} | {n} | {time.perf_counter() - t0:.1f} | {md['llvm_to_ptx_s']:.1f} | "
              f"{md['ptx_to_cubin_s']:.1f} | {md['registers']} | {md['spill_bytes']} | "
              f"{k.asm['llir'].count(chr(10))} | {atomics} | {_popc_inc(tool, k.asm['cubin'])} |")


if __name__ == "__main__":
    main(sys.argv[1:])
