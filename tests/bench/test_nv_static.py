"""bench/nv_static.py: the tutorials' own kernels and CUDA configs, PTX counted the same way for
both compilers, a failing compile reported in the table instead of stopping the run."""
from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import nv_static  # noqa: E402

TUTORIALS = ROOT.parent.parent / "shared" / "triton-tutorials"
if not TUTORIALS.is_dir():
    TUTORIALS = pathlib.Path("/work/shared/triton-tutorials")
needs_tutorials = pytest.mark.skipif(not (TUTORIALS / "03-matrix-multiplication.py").exists(),
                                     reason="Triton's tutorials are not in ../shared here")

PTX = """
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b32 \t%r<9>;
$L__BB0_1:
\t// a comment; with a semicolon
\t@%p1 cp.async.cg.shared.global [%rd1], [%rd2], 16, %r1;
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
\t\t{%f1, %f2, %f3, %f4},
\t\t{%r1, %r2, %r3, %r4},
\t\t{%r5, %r6},
\t\t{%f1, %f2, %f3, %f4};
\twgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 {%f1}, %rd3, %rd4, p, 1, 1;
\tret;
}
"""


def test_ptx_counts_statements_not_lines():
    got = nv_static.ptx_counts(PTX)
    assert got == {"instrs": 4, "mma": 2, "copies": 1}


@needs_tutorials
def test_the_tutorials_cuda_configs_are_listed_without_a_gpu():
    mod = nv_static.load_kernels(TUTORIALS / "03-matrix-multiplication.py", "naiad")
    configs = nv_static.configs(mod, "matmul_kernel")
    assert len(configs) == 16   # the CUDA list, not the HIP one a GPU-less host would pick
    first, warps, stages = configs[0]
    assert (first["BLOCK_SIZE_M"], first["BLOCK_SIZE_N"], first["BLOCK_SIZE_K"], warps,
            stages) == (128, 256, 64, 8, 3)


@needs_tutorials
def test_a_failing_compile_is_a_table_row():
    mod = nv_static.load_kernels(TUTORIALS / "03-matrix-multiplication.py", "naiad")
    case = nv_static.CASES[0]
    bad = {"BLOCK_SIZE_M": 100, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    got = nv_static.compile_naiad(mod, case, bad, 4, 3)
    assert got.error and got.regs is None
    row = nv_static.row(case, bad, 4, 3, got, None)
    assert "naiad failed" in row and row.count("|") == nv_static.HEADER.splitlines()[0].count("|")
