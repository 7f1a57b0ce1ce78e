"""``tl.histogram`` on NVIDIA: the counters live in shared memory and each element is one
``atom.shared.add`` (the ``ATOMS.POPC.INC`` Triton's own ``test_histogram`` looks for in the
SASS); on the device, the counts equal numpy's ``bincount`` for inputs partly outside the bins,
with masks, over several programs."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def histogram_kernel(x_ptr, out_ptr, n, M: tl.constexpr, BINS: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, M)
    inside = offs < n
    x = tl.load(x_ptr + pid * M + offs, mask=inside, other=0)
    tl.store(out_ptr + pid * BINS + tl.arange(0, BINS), tl.histogram(x, BINS, mask=inside))


def _compile(m: int, bins: int, dtype: str = "i32"):
    return naiad.compile(histogram_kernel, signature=f"*{dtype},*i32,i32",
                         constexprs={"M": m, "BINS": bins}, target="nvidia:sm_90")


def _disassembler() -> str | None:
    """cuobjdump from PATH or Triton's wheel (located, never imported), to read SASS."""
    dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        dirs.append(Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin")
    for d in dirs:
        if os.access(d / "cuobjdump", os.X_OK):
            return str(d / "cuobjdump")
    return None


CUOBJDUMP = _disassembler()


@pytest.mark.parametrize("m, bins", [(1024, 128), (4096, 1024), (32, 8)])
def test_each_element_is_one_shared_atomic(m, bins):
    k = _compile(m, bins)
    per_thread = max(m // 128, 1)
    assert len(re.findall(r"\b(atom|red)\.shared\.add\.u32\b", k.asm["ptx"])) == per_thread
    assert "atom.global" not in k.asm["ptx"]
    assert k.metadata["spill_bytes"] == 0
    assert k.metadata["shared"] >= 4 * bins


@pytest.mark.skipif(CUOBJDUMP is None, reason="no cuobjdump (CUDA toolkit or Triton's wheel) "
                                              "on this machine to read SASS")
def test_sass_counts_with_atoms_popc_inc(tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(bytes(_compile(1024, 128).asm["cubin"]))
    sass = subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True,
                          check=True).stdout
    assert len(re.findall(r"ATOMS\.POPC\.INC", sass)) == 1024 // 128


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, bins, dtype", [(1024, 1000, 128, "int32"), (4096, 4096, 1024, "int32"),
                                               (32, 17, 8, "int64"), (2048, 2047, 256, "int8")])
def test_histogram_on_gpu(m, n, bins, dtype):
    programs = 5
    rng = np.random.default_rng(m * 7 + bins)
    info = np.iinfo(dtype)
    x = rng.integers(max(-bins, info.min), min(2 * bins, info.max), size=programs * m,
                     endpoint=True).astype(dtype)
    if dtype == "int64":     # a value one bin past 2**32 must not land in that bin
        x[::3] += 1 << 32
    out = naiad.to_device(np.full(programs * bins, -7, np.int32))
    histogram_kernel[(programs,)](naiad.to_device(x), out, n, M=m, BINS=bins)
    want = []
    for p in range(programs):
        block = x[p * m:p * m + n]
        keep = block[(block >= 0) & (block < bins)].astype(np.int64)
        want.append(np.bincount(keep, minlength=bins))
    np.testing.assert_array_equal(out.numpy(), np.concatenate(want).astype(np.int32))
