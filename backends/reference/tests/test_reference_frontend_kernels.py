"""Real ``@naiad.jit`` kernels (frontend + generic passes) on the reference executor, each run in
lockstep and one program at a time, compared with numpy."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import OutOfBoundsError
from naiad_reference import execute
from refkit import poison, random_array, rng

frontend = pytest.importorskip("naiad.frontend")
passes = pytest.importorskip("naiad.passes")


def build(fn, signature, constexprs):
    module = frontend.generate(fn, signature, constexprs, {})
    return passes.run_generic_pipeline(module) or module


def run_both(fn, signature, constexprs, grid, args):
    m = build(fn, signature, constexprs)
    a1 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    a2 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    info = execute(m, fn.__name__, grid, a1)
    execute(m, fn.__name__, grid, a2, mode="sequential")
    for x, y in zip(a1, a2):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    return a1, info


@naiad.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@naiad.jit
def add_unmasked(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


SIG3 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}


def test_vector_add():
    r = rng()
    x, y = random_array(r, 1000, np.float32), random_array(r, 1000, np.float32)
    (_, _, out, _), info = run_both(add_kernel, {**SIG3, "n": "i32"}, {"BLOCK": 128}, (8,),
                                    [x, y, poison(1000, np.float32), 1000])
    np.testing.assert_array_equal(out, x + y)
    assert info.mode == "grid"


def test_unmasked_kernel_out_of_bounds_names_program_argument_and_offset():
    r = rng()
    x, y = random_array(r, 1000, np.float32), random_array(r, 1024, np.float32)
    m = build(add_unmasked, SIG3, {"BLOCK": 128})
    with pytest.raises(OutOfBoundsError) as exc:
        execute(m, "add_unmasked", (8,), [x, y, poison(1024, np.float32)])
    e = exc.value
    assert (e.kernel, e.program_id, e.argument, e.offset, e.size) == \
        ("add_unmasked", (7, 0, 0), "x_ptr", 1000, 1000)


@naiad.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def test_softmax():
    s = random_array(rng(), (50, 100), np.float32)
    (out, _, _, _), _ = run_both(
        softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "stride": "i32", "n_cols": "i32"},
        {"BLOCK": 128}, (50,), [poison((50, 100), np.float32), s, 100, 100])
    e = np.exp(s.astype(np.float64) - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


@naiad.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_matmul_with_ragged_edges():
    r = rng()
    M, N, K = 50, 40, 70
    a, b = random_array(r, (M, K), np.float32), random_array(r, (K, N), np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32"}
    (_, _, c, *_), _ = run_both(matmul_kernel, sig, {"BM": 32, "BN": 16, "BK": 32}, (2, 3),
                                [a, b, poison((M, N), np.float32), M, N, K])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@naiad.jit
def argmax_kernel(x_ptr, idx_ptr, cs_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(idx_ptr + row, tl.argmax(x, axis=0))
    xs = tl.where(cols < n_cols, x, 0.0)
    tl.store(cs_ptr + row * n_cols + cols, tl.cumsum(xs, axis=0), mask=cols < n_cols)


def test_argmax_and_cumsum():
    r = rng()
    x = r.integers(-5, 5, size=(20, 50)).astype(np.float32)  # ties: the first index wins
    (_, idx, cs, _), _ = run_both(
        argmax_kernel, {"x_ptr": "*fp32", "idx_ptr": "*i32", "cs_ptr": "*fp32", "n_cols": "i32"},
        {"BLOCK": 64}, (20,), [x, poison(20, np.int32), poison((20, 50), np.float32), 50])
    np.testing.assert_array_equal(idx, x.argmax(axis=1))
    np.testing.assert_array_equal(cs, np.cumsum(x, axis=1))


@naiad.jit
def histogram_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(bins_ptr + v, 1, mask=mask)


def test_atomic_histogram():
    x = rng().integers(0, 16, size=3000).astype(np.int32)
    (_, bins, _), info = run_both(histogram_kernel,
                                  {"x_ptr": "*i32", "bins_ptr": "*i32", "n": "i32"},
                                  {"BLOCK": 256}, (12,), [x, np.zeros(16, np.int32), 3000])
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=16))
    assert info.mode == "grid"


@naiad.jit
def steps_kernel(start_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(start_ptr + pid)
    n = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        n += 1
    tl.store(out_ptr + pid, n)


def test_data_dependent_while_and_if():
    start = rng().integers(1, 1000, size=40).astype(np.int32)

    def ref(x):
        n = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            n += 1
        return n

    (_, out), _ = run_both(steps_kernel, {"start_ptr": "*i32", "out_ptr": "*i32"}, {}, (40,),
                           [start, poison(40, np.int32)])
    assert [int(v) for v in out] == [ref(int(x)) for x in start]


def test_kernel_launch_through_the_runtime():
    """kernel[grid](...) on the reference target goes through this backend's launcher."""
    r = rng()
    x, y = random_array(r, 777, np.float32), random_array(r, 777, np.float32)
    out = poison(777, np.float32)
    with naiad.target("reference"):
        add_kernel[(naiad.cdiv(777, 128),)](x, y, out, 777, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)
