"""Control flow: for (range, tl.range, static_range), while, if/elif/else, calls, early exits."""
import numpy as np
import pytest

import naiad
import naiad.language as tl


@naiad.jit
def loop_sum_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr, KIND: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    if KIND == "range":
        for i in range(n_iter):
            acc += tl.load(x_ptr + i * BLOCK + offs)
    elif KIND == "tl.range":
        for i in tl.range(0, n_iter, 1, num_stages=2):
            acc += tl.load(x_ptr + i * BLOCK + offs)
    else:
        i = 0
        while i < n_iter:
            acc += tl.load(x_ptr + i * BLOCK + offs)
            i += 1
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("kind", ["range", "tl.range", "while"])
@pytest.mark.parametrize("n_iter", [0, 1, 7])
def test_loops(conf, kind, n_iter):
    block = 128
    x = conf.rand(max(n_iter, 1) * block, "float32")
    want = x[: n_iter * block].reshape(n_iter, block).astype(np.float64).sum(axis=0) \
        .astype(np.float32) if n_iter else np.zeros(block, np.float32)
    out = conf.poison(block, "float32")
    conf.check(loop_sum_kernel, (1,), [x, out, n_iter], {1: want}, dict(BLOCK=block, KIND=kind),
               rtol=1e-5, atol=1e-5)


@naiad.jit
def static_range_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = x
    for k in tl.static_range(1, STEPS):
        acc = acc * x + k
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_static_range(conf, steps):
    x = conf.rand(64, "float32", low=-1, high=1)
    acc = x.astype(np.float64)
    for k in range(1, steps):
        acc = acc * x + k
    out = conf.poison(64, "float32")
    conf.check(static_range_kernel, (1,), [x, out], {1: acc.astype(np.float32)},
               dict(BLOCK=64, STEPS=steps), rtol=1e-5)


@naiad.jit
def branch_kernel(x_ptr, out_ptr, threshold, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x, axis=0)
    if s > threshold:
        y = x * 2.0
    elif s < -threshold:
        y = x - 1.0
    else:
        y = -x
    tl.store(out_ptr + offs, y)


def test_dynamic_if_elif_else(conf):
    progs, block = 32, 64
    x = conf.rand((progs, block), "float32")
    x[::3] += 1.0   # make every branch happen
    x[1::3] -= 1.0
    threshold = 10.0
    s = x.astype(np.float64).sum(axis=1, keepdims=True)
    want = np.where(s > threshold, x * 2, np.where(s < -threshold, x - 1, -x)).astype(np.float32)
    out = conf.poison((progs, block), "float32")
    conf.check(branch_kernel, (progs,), [x, out, threshold], {1: want}, dict(BLOCK=block))


@naiad.jit
def _leaky(x, ALPHA: tl.constexpr):
    return tl.where(x >= 0, x, x * ALPHA)


@naiad.jit
def _twice(x):
    y = _leaky(x, 0.25)
    return y + y


@naiad.jit
def call_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _twice(tl.load(x_ptr + offs)))


def test_nested_jit_calls(conf):
    x = conf.rand(256, "float32")
    want = (2 * np.where(x >= 0, x, x * np.float32(0.25))).astype(np.float32)
    out = conf.poison(256, "float32")
    conf.check(call_kernel, (1,), [x, out], {1: want}, dict(BLOCK=256))


@naiad.jit
def collatz_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    tl.store(out_ptr + pid, steps)


def test_data_dependent_while(conf):
    n = 40
    x = conf.rand(n, "int32", low=1, high=500)

    def collatz(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    want = np.array([collatz(int(v)) for v in x], dtype=np.int32)
    out = conf.poison(n, "int32")
    conf.check(collatz_kernel, (n,), [x, out], {1: want})


@naiad.jit
def ternary_kernel(x_ptr, out_ptr, n, NEG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    scale = -1 if NEG else 1
    y = x * scale if n > 10 else x + scale
    tl.store(out_ptr + offs, y, mask=offs < n)


@pytest.mark.parametrize("neg", [False, True])
@pytest.mark.parametrize("n", [5, 50])
def test_ternary(conf, neg, n):
    x = conf.rand(64, "int32", low=-100, high=100)
    scale = -1 if neg else 1
    want = x.copy()
    want[:n] = x[:n] * scale if n > 10 else x[:n] + scale
    out = conf.poison(64, "int32")
    out[n:] = x[n:]
    conf.check(ternary_kernel, (1,), [x, out, n], {1: want}, dict(NEG=neg, BLOCK=64))
