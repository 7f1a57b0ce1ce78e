"""Kernels of Triton's tutorials, from the unmodified files at ``../shared/triton-tutorials``
(never copied here), run by naiad on the reference and checked against torch: tutorial 09's
``matmul_kernel_descriptor_persistent`` (tensor descriptors made in the kernel, a persistent
``tl.range`` loop, the epilogue split in two stores). Its host wrapper asks torch.cuda for the
SM count, so on a CPU the kernel is launched directly."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch", reason="the tutorials drive torch tensors")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tutorials_dir() -> pathlib.Path | None:
    candidates = [os.environ.get("NAIAD_TRITON_TUTORIALS"), ROOT.parent / "shared" /
                  "triton-tutorials", ROOT.parent.parent / "shared" / "triton-tutorials"]
    for c in candidates:
        if c and (pathlib.Path(c) / "09-persistent-matmul.py").is_file():
            return pathlib.Path(c)
    return None


TUTORIALS = _tutorials_dir()
pytestmark = pytest.mark.skipif(TUTORIALS is None, reason="Triton's tutorial files are not at "
                                "../shared/triton-tutorials (set NAIAD_TRITON_TUTORIALS)")


def _load(stem: str):
    """The tutorial's definitions with ``triton`` resolved to naiad (bench/triton_tutorials.py's
    loader: demos and benchmarks do not run)."""
    spec = importlib.util.spec_from_file_location("naiad_bench_tutorials_compat",
                                                  ROOT / "bench" / "triton_tutorials.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    from naiad.compat import triton_alias

    with triton_alias.aliased():
        return bench.load_tutorial(TUTORIALS / f"{stem}.py", "compat")


@pytest.fixture
def reference():
    import naiad

    naiad.set_target("reference")


@pytest.mark.parametrize("subtile", [False, True])
def test_tutorial_09_descriptor_persistent_matmul(reference, subtile):
    mod = _load("09-persistent-matmul")
    kernel = mod.matmul_kernel_descriptor_persistent.fn     # below its autotuner
    gen = torch.Generator().manual_seed(9)
    M, N, K = 70, 52, 48                                    # ragged: the descriptors mask
    a = torch.randn((M, K), generator=gen).half()
    b = torch.randn((N, K), generator=gen).half()
    c = torch.full((M, N), float("nan")).half()
    kernel[(3,)](a, b, c, M, N, K, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
                 GROUP_SIZE_M=2, EPILOGUE_SUBTILE=subtile, NUM_SMS=3, WARP_SPECIALIZE=False,
                 FLATTEN=True)
    want = (a.float() @ b.float().T).half()
    torch.testing.assert_close(c, want, atol=2e-2, rtol=1e-2)
