"""The generic pipeline preserves meaning: every tutorial kernel, run by the reference executor
before and after the passes on the same random inputs, writes bit-identical outputs.

Outputs start poisoned (NaN / sentinels) so a lost store shows; with specialisation
(``equal_to: 1`` strides, ``divisibility: 16``) the folded kernels must still agree.
"""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np
import pytest

from naiad.frontend import generate
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad.passes import run_generic_pipeline

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
naiad_reference = pytest.importorskip("naiad_reference")
from tutorials import TUTORIALS  # noqa: E402


def _rand(rng, n, dtype, lo=-4.0, hi=4.0):
    return rng.uniform(lo, hi, n).astype(dtype)


def setup(name, rng):
    """(grid, args dict by parameter name, names of output arrays)."""
    if name == "vector_add":
        n = 3000
        return (3,), {"x_ptr": _rand(rng, n, np.float32), "y_ptr": _rand(rng, n, np.float32),
                      "output_ptr": np.full(n, np.nan, np.float32), "n_elements": n}, ["output_ptr"]
    if name == "softmax":
        rows, cols = 7, 1000
        return (4,), {"output_ptr": np.full(rows * cols, np.nan, np.float32),
                      "input_ptr": _rand(rng, rows * cols, np.float32), "input_row_stride": cols,
                      "output_row_stride": cols, "n_rows": rows, "n_cols": cols}, ["output_ptr"]
    if name == "matmul":
        M, N, K = 100, 70, 50
        return (4,), {"a_ptr": _rand(rng, M * K, np.float16, -1, 1),
                      "b_ptr": _rand(rng, K * N, np.float16, -1, 1),
                      "c_ptr": np.full(M * N, np.nan, np.float16), "M": M, "N": N, "K": K,
                      "stride_am": K, "stride_ak": 1, "stride_bk": N, "stride_bn": 1,
                      "stride_cm": N, "stride_cn": 1}, ["c_ptr"]
    if name == "layer_norm":
        rows, N = 3, 1500
        return (rows,), {"X": _rand(rng, rows * N, np.float16), "Y": np.full(rows * N, np.nan,
                                                                            np.float16),
                         "W": _rand(rng, N, np.float16), "B": _rand(rng, N, np.float16),
                         "Mean": np.full(rows, np.nan, np.float32),
                         "Rstd": np.full(rows, np.nan, np.float32), "stride": N, "N": N,
                         "eps": np.float32(1e-5)}, ["Y", "Mean", "Rstd"]
    if name == "int_ops":
        n = 300
        b = rng.integers(-120, 120, n).astype(np.int8)
        b[b == 0] = 5
        outs = {k: np.full(n, -777, np.int32) for k in ("q_ptr", "r_ptr", "mix_ptr", "shift_ptr")}
        return (2,), {"a_ptr": rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32), "b_ptr": b,
                      "u_ptr": rng.integers(0, 65535, n).astype(np.uint16), **outs, "n": n}, \
            list(outs)
    if name == "tiles_2d":
        M, N = 20, 100
        return (2, 2), {"src_ptr": _rand(rng, M * N, np.float32),
                        "dst_ptr": np.full(M * N, np.nan, np.float32), "M": M, "N": N,
                        "stride_m": N}, ["dst_ptr"]
    if name == "histogram":
        n = 1000
        return (2,), {"x_ptr": rng.integers(0, 1000, n).astype(np.int32),
                      "hist_ptr": np.zeros(16, np.int32), "n": n}, ["hist_ptr"]
    if name == "argmax_rows":
        rows, cols = 5, 100
        return (rows,), {"x_ptr": _rand(rng, rows * cols, np.float32),
                         "out_ptr": np.full(rows, -7, np.int32), "n_cols": cols,
                         "stride": cols}, ["out_ptr"]
    raise AssertionError(name)


def run(module, kernel, grid, sig, args):
    fresh = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    naiad_reference.execute(module, kernel, grid, [fresh[p] for p in sig])
    return fresh


def _specialization(sig, args):
    """What the runtime would derive: ints equal to 1, ints divisible by 16 (pointers from
    numpy are 16-byte aligned in practice, but we do not claim it for them here)."""
    spec = {}
    for p, t in sig.items():
        v = args[p]
        if t.startswith("*") or not isinstance(v, int):
            continue
        if v == 1:
            spec[p] = {"equal_to": 1}
        elif v % 16 == 0:
            spec[p] = {"divisibility": 16}
    return spec


@pytest.mark.parametrize("specialize", [False, True], ids=["plain", "specialized"])
@pytest.mark.parametrize("name", list(TUTORIALS))
def test_pipeline_preserves_tutorial_outputs(name, specialize):
    fn, sig, cx = TUTORIALS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    grid, args, outputs = setup(name, rng)
    spec = _specialization(sig, args) if specialize else {}
    before = generate(fn, sig, cx, spec)
    after = generate(fn, sig, cx, spec)
    run_generic_pipeline(after, {"debug": True})
    verify(after)
    kernel = fn.__name__
    want = run(before, kernel, grid, sig, args)
    got = run(after, kernel, grid, sig, args)
    for out in outputs:
        assert not np.array_equal(want[out], args[out], equal_nan=True), f"{out} never written"
        assert np.array_equal(got[out], want[out], equal_nan=True), \
            f"{name}: {out} differs after the passes\n{print_module(after)}"
    kfn = after.functions[kernel]
    for arg, p in zip(kfn.args, sig):
        if spec.get(p) == {"equal_to": 1}:
            assert not arg.uses, f"{p} is fixed to 1 but still used"
