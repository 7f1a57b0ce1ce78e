"""fp8 dots on the fp8 MFMAs (AMD pass ``fold_fp8_upcasts`` + the table's fp8 rows), executed on
the SIMT simulator's ISA model and compared with numpy: gfx942 computes the fnuz formats
(float8e4b8 / float8e5b16), gfx950 the OCP ones (float8e4nv / float8e5)."""
import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl

import simt_backend


@pytest.fixture(scope="module", autouse=True)
def simt_plugin():
    simt_backend.ensure_registered()


@naiad.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


CASES = [
    ("gfx942", ml_dtypes.float8_e4m3fnuz, "fp8e4b8", {}, "v_mfma_f32_32x32x16_fp8_fp8"),
    ("gfx942", ml_dtypes.float8_e5m2fnuz, "fp8e5b16", {}, "v_mfma_f32_32x32x16_bf8_bf8"),
    ("gfx942", ml_dtypes.float8_e4m3fnuz, "fp8e4b8", {"matrix_instr_nonkdim": 16},
     "v_mfma_f32_16x16x32_fp8_fp8"),
    ("gfx950", ml_dtypes.float8_e4m3fn, "fp8e4nv", {}, "v_mfma_f32_32x32x16_fp8_fp8_ocp"),
    ("gfx950", ml_dtypes.float8_e5m2, "fp8e5", {"matrix_instr_nonkdim": 16},
     "v_mfma_f32_16x16x32_bf8_bf8_ocp"),
]


@pytest.mark.parametrize("arch, dtype, sig, options, instr", CASES)
def test_fp8_dot_runs_on_the_fp8_mfma(arch, dtype, sig, options, instr):
    rng = np.random.default_rng(len(instr) + len(arch))
    m, n, k = 64, 32, 64
    a = rng.uniform(-4, 4, (m, k)).astype(dtype)
    b = rng.uniform(-4, 4, (k, n)).astype(dtype)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        fp8_dot[(1,)](a, b, c, M=m, N=n, K=k, **options)
    want = a.astype(np.float64) @ b.astype(np.float64)  # fp8 products are exact in f32
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    gpu = naiad.compile(fp8_dot, signature={"a_ptr": f"*{sig}", "b_ptr": f"*{sig}",
                                            "c_ptr": "*fp32"},
                        constexprs=dict(M=m, N=n, K=k), target=f"simt:{arch}",
                        options=options).asm["gpu"]
    assert f'instruction = "{instr}", k_width = 8' in gpu
    assert " = cast " not in gpu  # the operands reach the MFMA as fp8


def test_ocp_fp8_on_gfx942_stays_on_f16():
    """gfx942's fp8 instructions compute the fnuz formats: an OCP fp8 dot keeps the exact
    widening to f16 (and still matches numpy)."""
    rng = np.random.default_rng(2)
    a = rng.uniform(-4, 4, (32, 32)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.uniform(-4, 4, (32, 32)).astype(ml_dtypes.float8_e4m3fn)
    c = np.full((32, 32), np.nan, np.float32)
    with naiad.target("simt:gfx942"):
        fp8_dot[(1,)](a, b, c, M=32, N=32, K=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                               atol=1e-4)
    gpu = naiad.compile(fp8_dot, signature={"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv",
                                            "c_ptr": "*fp32"},
                        constexprs=dict(M=32, N=32, K=32), target="simt:gfx942").asm["gpu"]
    assert 'instruction = "v_mfma_f32_32x32x8_f16"' in gpu
