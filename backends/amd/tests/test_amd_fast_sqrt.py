"""``tl.sqrt`` is Triton's "fast square root" on AMD (one ``v_sqrt_f32``, 1 ulp, subnormal
inputs read as 0); ``tl.sqrt_rn`` stays correctly rounded (LLVM's scaled expansion with its
fma corrections), and float64 ``tl.sqrt`` is exact on every backend."""
import re

import numpy as np

import naiad
import naiad.language as tl


@naiad.jit
def _fast(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.sqrt(tl.load(x_ptr + o)))


@naiad.jit
def _exact(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.sqrt_rn(tl.load(x_ptr + o)))


def _vector_ops(kernel, dtype="fp32", target="amd:gfx942"):
    asm = naiad.compile(kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}"}, {"N": 64},
                        target=target).asm["amdgcn"]
    return [m.group(1) for m in re.finditer(r"^\s+(v_\w+)", asm, re.M)]


def test_fast_sqrt_is_one_v_sqrt_without_corrections():
    ops = _vector_ops(_fast)
    assert ops.count("v_sqrt_f32_e32") == 1
    assert not any(op.startswith("v_fma") for op in ops), ops


def test_sqrt_rn_keeps_the_correctly_rounded_expansion():
    ops = _vector_ops(_exact)
    assert any(op.startswith("v_fma_f32") for op in ops), ops   # the rounding corrections
    assert len(ops) > len(_vector_ops(_fast)) + 5


def test_float64_sqrt_stays_exact():
    ops = _vector_ops(_fast, "fp64")
    assert not any(op.startswith("v_sqrt_f32") for op in ops)
    assert any(op.startswith("v_fma_f64") for op in ops), ops   # llvm.sqrt.f64's refinement


def test_sqrt_rn_is_its_own_op_and_exact_on_the_reference():
    rng = np.random.default_rng()
    x = np.concatenate([rng.random(60, dtype=np.float32) * 1e4,
                        np.array([1e-40, 3e-45, 0.0, 2.0], np.float32)])  # subnormals too
    y = np.full_like(x, np.nan)
    naiad.set_target("reference")
    try:
        _exact[(1,)](x, y, N=64)
    finally:
        naiad.set_target(None)   # back to NAIAD_TARGET / autodetection
    np.testing.assert_array_equal(y, np.sqrt(x))
    tile = naiad.compile(_exact, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"N": 64},
                         target="nvidia:sm_90")
    assert " sqrt_rn " in tile.asm["tile"] and "sqrt.rn.f32" in tile.asm["ptx"]
