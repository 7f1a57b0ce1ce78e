"""AMD matrix instructions executed on the SIMT simulator: GPU IR after accelerate_matmul, every
MFMA/WMMA issue run on the ISA model (amd_matrix_isa.py, independent of naiad's lane maps),
compared with numpy. Wave64 (gfx942 MFMA) and wave32 (gfx1100 WMMA)."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import naiad
import naiad.language as tl

import simt_backend

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def simt_plugin():
    simt_backend.ensure_registered()


@naiad.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale,
                  BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """One program: BM query rows against all n_ctx keys, online softmax (flash-attention)."""
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.zeros((BM,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, n_ctx, BN):
        rn = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, kt) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


def _attention_reference(q, k, v, scale):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("arch, instr", [("gfx942", "v_mfma_f32_32x32x8_f16"),
                                         ("gfx1100", "v_wmma_f32_16x16x16_f16")])
def test_attention_runs_on_simulated_matrix_cores(arch, instr):
    rng = np.random.default_rng(7)
    n_ctx, d, bm, bn = 64, 32, 32, 32
    q, k, v = (rng.uniform(-1, 1, (n_ctx, d)).astype(np.float16) for _ in range(3))
    o = np.full((n_ctx, d), np.nan, np.float32)
    scale = np.float32(1.0 / np.sqrt(d))
    with naiad.target(f"simt:{arch}"):
        attention_fwd[(n_ctx // bm,)](q, k, v, o, n_ctx, scale, BM=bm, BN=bn, D=d, num_warps=2)
    np.testing.assert_allclose(o, _attention_reference(q, k, v, scale), rtol=2e-2, atol=2e-2)
    gpu = naiad.compile(attention_fwd, signature={"q_ptr": "*fp16", "k_ptr": "*fp16",
                                                  "v_ptr": "*fp16", "o_ptr": "*fp32",
                                                  "n_ctx": "i32", "scale": "fp32"},
                        constexprs=dict(BM=bm, BN=bn, D=d), target=f"simt:{arch}",
                        options={"num_warps": 2}).asm["gpu"]
    assert gpu.count(f'instruction = "{instr}"') == 2  # both dots on the matrix unit


@naiad.jit
def small_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("arch, options, instr, k_width", [
    ("gfx942", {}, "v_mfma_f32_32x32x8_f16", 4),
    ("gfx942", {"matrix_instr_nonkdim": 16}, "v_mfma_f32_16x16x16_f16", 4),
    ("gfx942", {"kpack": 2}, "v_mfma_f32_32x32x8_f16", 8),
    ("gfx90a", {"matrix_instr_nonkdim": 32, "kpack": 2}, "v_mfma_f32_32x32x8_f16", 8),
])
def test_mfma_options_execute(arch, options, instr, k_width):
    rng = np.random.default_rng(3)
    m, n, k = 64, 32, 32
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        small_dot[(1,)](a, b, c, M=m, N=n, K=k, **options)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    gpu = naiad.compile(small_dot, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                              "c_ptr": "*fp32"},
                        constexprs=dict(M=m, N=n, K=k), target=f"simt:{arch}",
                        options=options).asm["gpu"]
    assert f'instruction = "{instr}", k_width = {k_width}' in gpu


def test_dot_category_executes_on_simulated_gfx942():
    """The conformance dot category on simt:gfx942 (MFMA); gfx1100 is the same command."""
    if not (ROOT / "conformance").is_dir():
        pytest.skip("the conformance suite is not in this checkout")
    env = dict(os.environ)
    paths = [ROOT / "core", ROOT / "backends/reference", ROOT / "backends/nvidia",
             ROOT / "backends/amd", ROOT / "tests/gpu"]
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in paths] +
                                        [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "simt_backend",
         "--backend=simt:gfx942", "-k", "execute and not float64 and (shape0 or shape1 or int8 or 64)",
         "conformance/test_dot.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    last = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"\b[1-9]\d* passed", last) and "failed" not in last, tail
