"""Constexprs, globals and argument specialisation (divisibility by 16, equal to 1)."""
import numpy as np
import pytest

import naiad
import naiad.language as tl

SCALE = 3
DTYPE_GLOBAL = tl.float32
ENABLED = tl.constexpr(True)


@naiad.jit
def constexpr_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr,
                     FACTOR: tl.constexpr, USE_GLOBAL: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(DTYPE_GLOBAL)
    if MODE == "scale":
        y = x * FACTOR
    else:
        y = x + FACTOR
    if USE_GLOBAL and ENABLED:
        y = y * SCALE
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("block", [64, 256, 1024])
@pytest.mark.parametrize("mode", ["scale", "shift"])
@pytest.mark.parametrize("factor", [2, 0.5])
@pytest.mark.parametrize("use_global", [False, True])
def test_constexpr_variants(conf, block, mode, factor, use_global):
    n = 1500
    x = conf.rand(n, "float32")
    y = x * np.float32(factor) if mode == "scale" else x + np.float32(factor)
    if use_global:
        y = y * 3
    out = conf.poison(n, "float32")
    conf.check(constexpr_kernel, (naiad.cdiv(n, block),), [x, out, n], {1: y.astype(np.float32)},
               dict(BLOCK=block, MODE=mode, FACTOR=factor, USE_GLOBAL=use_global))


@naiad.jit
def stride_kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=mask), mask=mask)


@pytest.mark.parametrize("stride", [1, 2, 16, 17, 32])
@pytest.mark.parametrize("n", [16, 1000, 1024])
def test_specialised_integers(conf, stride, n):
    """stride == 1 and multiples of 16 select specialised compilations; all must agree."""
    x = conf.rand(n * stride, "float32")
    out = conf.poison(n, "float32")
    conf.check(stride_kernel, (naiad.cdiv(n, 128),), [x, out, stride, n], {1: x[::stride][:n]},
               dict(BLOCK=128))


@naiad.jit
def offset_pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


@pytest.mark.parametrize("start", [0, 1, 4, 5])
def test_misaligned_pointer_views(conf, start):
    """Slices that start off a 16-byte boundary must not be specialised as aligned."""
    base = conf.rand(300, "float32")
    x = base[start:start + 256]
    out_base = conf.poison(300, "float32")
    out = out_base[start:start + 256]
    conf.check(offset_pointer_kernel, (1,), [x, out], {1: x + 1}, dict(BLOCK=256))


@naiad.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs)


def test_static_assert_passes(conf):
    out = conf.poison(64, "int32")
    conf.check(static_assert_kernel, (1,), [out], {0: np.arange(64, dtype=np.int32)},
               dict(BLOCK=64))


def test_static_assert_fails_with_message(conf):
    out = conf.poison(16, "int32")
    with pytest.raises(naiad.CompilationError, match="BLOCK must be a multiple of 32"):
        conf.check(static_assert_kernel, (1,), [out], {0: np.arange(16, dtype=np.int32)},
                   dict(BLOCK=16))
