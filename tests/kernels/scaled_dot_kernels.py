"""tl.dot_scaled kernels and a numpy oracle for OCP MX operands (shared by the reference and
SIMT tests)."""
import ml_dtypes
import numpy as np

import naiad
import naiad.language as tl

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], np.float64)


@naiad.jit
def scaled_dot(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
               K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr, KA: tl.constexpr,
               KB: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr):
    """a: [M, KA] (KA = K, or K // 2 for e2m1), b: [KB, N]; scales [M, K // 32], [N, K // 32]."""
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * KA + tl.arange(0, KA)[None, :])
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * N + tl.arange(0, N)[None, :])
    sa = None
    sb = None
    if SCALE_A:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if SCALE_B:
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, FA, b, sb, FB)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def random_operand(rng, fmt, rows, cols, pack_axis):
    """(array to pass, f64 values [rows, cols]) for format ``fmt``."""
    if fmt == "e2m1":
        codes = rng.integers(0, 16, (rows, cols)).astype(np.uint8)
        vals = np.where(codes & 8, -1, 1) * E2M1[codes & 7]
        if pack_axis == 1:
            packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        else:
            packed = codes[0::2, :] | (codes[1::2, :] << 4)
        return packed.astype(np.uint8), vals
    ml = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
          "bf16": ml_dtypes.bfloat16, "fp16": np.float16}[fmt]
    x = (rng.standard_normal((rows, cols)) * 4).astype(ml)
    return x, x.astype(np.float64)


def oracle(a_vals, sa, b_vals, sb):
    if sa is not None:
        a_vals = a_vals * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)
    if sb is not None:
        b_vals = b_vals * np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, axis=1).T
    return a_vals @ b_vals
