"""Triton's semantics as its code and compiled output define them (issue #13), end to end:
frontend -> generic passes (constant folding included) -> reference executor, against numpy."""
import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad_reference import execute
from refkit import poison, random_array, rng

frontend = pytest.importorskip("naiad.frontend")
passes = pytest.importorskip("naiad.passes")

N = 64


def build(fn, signature, constexprs=None):
    module = frontend.generate(fn, signature, constexprs or {}, {})
    return passes.run_generic_pipeline(module) or module


def run(fn, signature, args, constexprs=None, grid=(1,)):
    execute(build(fn, signature, constexprs), fn.__name__, grid, args)
    return args


# -- >> shifts by the left operand's own signedness -----------------------------------------------
@naiad.jit
def shr_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))


@naiad.jit
def shr_const_kernel(out_ptr, N: tl.constexpr):
    x = tl.full([N], -1000, tl.int32)
    y = tl.full([N], 3, tl.uint32)
    tl.store(out_ptr + tl.arange(0, N), x >> y)


@pytest.mark.parametrize("left,right", [("i32", "u32"), ("i64", "u64"), ("i8", "u16"),
                                        ("i16", "u16")])
def test_signed_left_operand_shifts_arithmetically_in_the_unsigned_type(left, right):
    r = rng()
    npl, npr = np.dtype(left.replace("i", "int")), np.dtype(right.replace("u", "uint"))
    x = random_array(r, N, npl)
    x[:4] = np.array([-1, -1000, np.iinfo(npl).min, 5]).astype(npl)
    bits = max(npl.itemsize, npr.itemsize) * 8
    y = r.integers(0, bits, N).astype(npr)
    out = poison(N, np.dtype(f"uint{bits}"))
    sig = {"x_ptr": "*" + left, "y_ptr": "*" + right, "out_ptr": f"*u{bits}"}
    run(shr_kernel, sig, [x, y, out], {"N": N})
    # Triton: promote both to the unsigned type, then ashr because the left operand is signed
    want = (x.astype(np.dtype(f"int{bits}")) >> y.astype(np.dtype(f"int{bits}"))) \
        .view(np.dtype(f"uint{bits}"))
    np.testing.assert_array_equal(out, want)


def test_unsigned_left_operand_shifts_logically():
    r = rng()
    x = random_array(r, N, np.uint32)
    y = r.integers(0, 32, N).astype(np.int32)
    out = poison(N, np.uint32)
    run(shr_kernel, {"x_ptr": "*u32", "y_ptr": "*i32", "out_ptr": "*u32"}, [x, y, out], {"N": N})
    np.testing.assert_array_equal(out, x >> y.astype(np.uint32))


def test_constant_folded_shift_is_arithmetic_too():
    out = poison(N, np.uint32)
    module = build(shr_const_kernel, {"out_ptr": "*u32"}, {"N": N})
    assert "= shr " not in str(module), str(module)  # folded by the canonicalizer
    execute(module, "shr_const_kernel", (1,), [out])
    assert (out == np.uint32((-1000 >> 3) & 0xFFFFFFFF)).all()  # -125, not 2**32-1000 >> 3


# -- (integer) x (bfloat16) computes in float32, as Triton's code does -------------------------
@naiad.jit
def int_times_bf16_loop(x_ptr, y_ptr, out_ptr, bits_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    acc = tl.zeros([N], tl.float32)
    for _ in range(2):
        acc = x * y  # float32 in Triton: the loop-carried type does not change
    tl.store(out_ptr + offs, acc)
    tl.store(bits_ptr + offs, (x * y).to(tl.int32, bitcast=True))  # 32 bits, so this is valid


@pytest.mark.parametrize("int_type", ["i8", "i32", "i64", "u16"])
def test_integer_times_bf16_is_float32(int_type):
    r = rng()
    np_int = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "u16": np.uint16}[int_type]
    x = r.integers(0 if int_type == "u16" else -100, 100, N).astype(np_int)
    x[0] = 99  # 99 * 1.0078125 is not a bf16: a bf16 result would round it
    y = random_array(r, N, ml_dtypes.bfloat16)
    y[0] = 1.0078125
    out, bits = poison(N, np.float32), poison(N, np.int32)
    sig = {"x_ptr": "*" + int_type, "y_ptr": "*bf16", "out_ptr": "*fp32", "bits_ptr": "*i32"}
    run(int_times_bf16_loop, sig, [x, y, out, bits], {"N": N})
    want = x.astype(np.float32) * y.astype(np.float32)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(bits, want.view(np.int32))


# -- fp_downcast_rounding="rtz" survives canonicalization and constant folding -------------------
@naiad.jit
def i16_to_bf16_rtz(x_ptr, out_ptr, const_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(tl.float32).to(tl.bfloat16, fp_downcast_rounding="rtz"))
    c = tl.full([N], -8620, tl.int16)
    tl.store(const_ptr + offs, c.to(tl.float32).to(tl.bfloat16, fp_downcast_rounding="rtz"))


def test_int16_through_f32_to_bf16_rtz():
    r = rng()
    x = random_array(r, N, np.int16)
    x[0] = -8620
    out = np.zeros(N, ml_dtypes.bfloat16)
    const = np.zeros(N, ml_dtypes.bfloat16)
    run(i16_to_bf16_rtz, {"x_ptr": "*i16", "out_ptr": "*bf16", "const_ptr": "*bf16"},
        [x, out, const], {"N": N})
    # i16 -> f32 is exact; rounding toward zero to bf16 keeps the f32's top 16 bits
    want = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    assert float(out[0]) == -8576.0 and (const.astype(np.float32) == -8576.0).all()


# -- integer arguments equal to 1 are specialised as constexprs (weakly typed), as in Triton -----
@naiad.jit
def add_arg_kernel(x_ptr, out_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, (tl.load(x_ptr + offs) + n).to(tl.int32))


@pytest.mark.parametrize("spec,want_i8", [({"n": {"equal_to": 1}}, True), ({}, False)])
def test_integer_argument_equal_to_one_is_weakly_typed(spec, want_i8):
    x = np.array([127, -128, 5, 100] * (N // 4), np.int8)
    out = poison(N, np.int32)
    sig = {"x_ptr": "*i8", "out_ptr": "*i32", "n": "i32"}
    module = frontend.generate(add_arg_kernel, sig, {"N": N}, spec)
    passes.run_generic_pipeline(module)
    adds = [op for op in module.functions["add_arg_kernel"].walk() if op.name == "add"]
    assert [str(a.results[0].type.scalar) for a in adds] == (["i8"] if want_i8 else ["i32"])
    execute(module, "add_arg_kernel", (1,), [x, out, 1])
    # i8 + weak 1 wraps in i8 (127 + 1 == -128); an i32 argument promotes to i32 (128)
    want = (x.astype(np.int8) + np.int8(1)) if want_i8 else x.astype(np.int32) + 1
    np.testing.assert_array_equal(out, want.astype(np.int32))


@naiad.jit
def bf16_times_arg(x_ptr, out_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * n)


def test_launch_specialises_one_like_triton():
    """Through kernel[grid]: n == 1 is weak (bf16 * 1 stays bf16), n == 3 is an i32 tensor
    ((bf16, i32) -> f32, so x * 3 is exact, not rounded to bf16)."""
    x = random_array(rng(), N, ml_dtypes.bfloat16)
    with naiad.target("reference"):
        for n in (1, 3):
            out = poison(N, np.float32)
            bf16_times_arg[(1,)](x, out, n, N=N)
            np.testing.assert_array_equal(out, x.astype(np.float32) * np.float32(n))
