"""The tl builtins: the IR they produce (ops, attributes, types) and, where the reference
executor is available, what they compute against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError
from naiad.ir import types as irt

from frontend_testutil import compile_ir, ops, run

RNG = np.random.default_rng(1234)


# -- dtypes and signature strings -------------------------------------------------------------

@pytest.mark.parametrize("sig,ir", [("i1", "i1"), ("i8", "i8"), ("i16", "i16"), ("i32", "i32"),
                                    ("i64", "i64"), ("u8", "u8"), ("u16", "u16"),
                                    ("u32", "u32"), ("u64", "u64"), ("fp16", "f16"),
                                    ("bf16", "bf16"), ("fp32", "f32"), ("fp64", "f64")])
def test_signature_strings_round_trip(sig, ir):
    from naiad.language.dtypes import from_ir_type, to_ir_type
    assert str(to_ir_type(sig)) == ir
    assert str(to_ir_type("*" + sig)) == f"ptr<{ir}>"
    assert from_ir_type(to_ir_type("*" + sig)) == "*" + sig
    assert from_ir_type(to_ir_type(sig)) == sig


def test_dtype_objects():
    assert tl.float32.to_ir() == irt.f32 and tl.uint8.to_ir() == irt.u8
    assert tl.bfloat16.is_bf16() and tl.float16.is_floating() and not tl.int8.is_floating()
    assert tl.int16.is_int_signed() and tl.uint64.is_int_unsigned() and tl.int1.is_bool()
    assert tl.float64.primitive_bitwidth == 64 and tl.int1.primitive_bitwidth == 1
    p = tl.pointer_type(tl.float16)
    assert p.is_ptr() and p.element_ty == tl.float16 and str(p.to_ir()) == "ptr<f16>"
    assert p == tl.pointer_type(tl.float16) and p != tl.pointer_type(tl.float32)
    assert repr(tl.float32) == "tl.float32"
    with pytest.raises(CompilationError, match="unknown signature type"):
        from naiad.language.dtypes import to_ir_type
        to_ir_type("*float")


def test_builtins_refuse_to_run_outside_kernels():
    with pytest.raises(CompilationError, match="only be used inside a @naiad.jit"):
        tl.program_id(0)


# -- creation ----------------------------------------------------------------------------------

@naiad.jit
def creation_kernel(out_ptr, v, DT: tl.constexpr):
    offs = tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :]
    a = tl.zeros([8, 4], dtype=DT)
    b = tl.full((8, 4), 3, DT)
    c = tl.full([8, 4], v, DT)
    d = tl.zeros_like(c) + tl.full_like(a, 2) + tl.num_programs(0)
    tl.store(out_ptr + offs, a + b + c + d)


def test_creation_ops():
    module, text = compile_ir(creation_kernel, {"out_ptr": "*fp32", "v": "i32"},
                              {"DT": tl.float16})
    consts = [str(op.results[0].type) for op in ops(module, "constant")
              if op.results[0].type.is_tensor]
    assert consts.count("tensor<8x4xf16>") >= 3
    v_arg = module.functions["creation_kernel"].args[1]
    (splat,) = [op for op in ops(module, "splat") if op.operands[0].defining_op and
                op.operands[0].defining_op.name == "cast" and
                op.operands[0].defining_op.operands[0] is v_arg]
    assert str(splat.results[0].type) == "tensor<8x4xf16>"  # tl.full with a run-time value


def test_run_creation():
    out = np.full((8, 4), np.nan, np.float32)
    run(creation_kernel, {"out_ptr": "*fp32", "v": "i32"}, {"DT": tl.float16}, (3,), [out, 5])
    np.testing.assert_array_equal(out, np.full((8, 4), 0 + 3 + 5 + 0 + 2 + 3, np.float32))


# -- memory ---------------------------------------------------------------------------------------

@naiad.jit
def load_options_kernel(x_ptr, y_ptr, n):
    offs = tl.arange(0, 64)
    v = tl.load(x_ptr + offs, mask=offs < n, other=7, cache_modifier=".cg",
                eviction_policy="evict_last", volatile=True)
    s = tl.load(x_ptr)            # scalar load
    tl.store(y_ptr + offs, v + s, mask=offs < n, cache_modifier=".cs")
    tl.store(y_ptr + 64, s * 2)   # scalar store, value cast to the pointee type


def test_load_store_options_and_scalar_access():
    module, _ = compile_ir(load_options_kernel, {"x_ptr": "*i16", "y_ptr": "*fp32", "n": "i32"})
    block_load, scalar_load = ops(module, "load")
    assert block_load.attrs == {"cache_modifier": ".cg", "eviction_policy": "evict_last",
                                "volatile": True}
    other = block_load.operands[2].defining_op
    assert other.name == "constant" and str(other.results[0].type) == "tensor<64xi16>"
    assert str(scalar_load.results[0].type) == "i16" and len(scalar_load.operands) == 1
    stores = ops(module, "store")
    assert stores[0].attrs == {"cache_modifier": ".cs"}
    assert str(stores[1].operands[1].type) == "f32"


def test_run_load_other_and_mask():
    x = RNG.integers(-100, 100, 64, dtype=np.int16)
    y = np.full(65, np.nan, np.float32)
    run(load_options_kernel, {"x_ptr": "*i16", "y_ptr": "*fp32", "n": "i32"}, {}, (1,),
        [x, y, 40])
    np.testing.assert_array_equal(y[:40], (x[:40] + x[0]).astype(np.float32))
    assert np.isnan(y[40:64]).all() and y[64] == 2 * x[0]


@naiad.jit
def bad_load_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    if CASE == "cache":
        v = tl.load(x_ptr + offs, cache_modifier=".zz")
    elif CASE == "other":
        v = tl.load(x_ptr + offs, other=1.0)
    elif CASE == "mask":
        v = tl.load(x_ptr + offs, mask=offs)
    elif CASE == "scalar-ptr":
        v = tl.load(x_ptr, mask=offs < 3)
    tl.store(x_ptr + offs, v)


@pytest.mark.parametrize("case,msg", [("cache", "cache_modifier must be one of"),
                                      ("other", "`other` needs a `mask`"),
                                      ("mask", r"mask must be a boolean \(i1\)"),
                                      ("scalar-ptr", "cannot be a tensor .* when the pointer")])
def test_load_mistakes(case, msg):
    with pytest.raises(CompilationError, match=msg):
        compile_ir(bad_load_kernel, {"x_ptr": "*fp32"}, {"CASE": case})


@naiad.jit
def atomics_kernel(p_ptr, q_ptr, f_ptr):
    offs = tl.arange(0, 32)
    m = offs < 20
    tl.atomic_add(p_ptr + offs, 1, mask=m)
    tl.atomic_max(p_ptr + offs, offs, sem="relaxed", scope="cta")
    tl.atomic_min(p_ptr + offs, 5)
    tl.atomic_and(q_ptr + offs, 0xFF)
    tl.atomic_or(q_ptr + offs, 1)
    tl.atomic_xor(q_ptr + offs, 3)
    old = tl.atomic_xchg(q_ptr + offs, 9)
    tl.atomic_cas(p_ptr, 0, 1)
    tl.atomic_add(f_ptr + offs, 1.5)
    tl.store(p_ptr + 32 + offs, old)


def test_atomics():
    module, _ = compile_ir(atomics_kernel, {"p_ptr": "*i32", "q_ptr": "*u64", "f_ptr": "*fp16"})
    rmw = ops(module, "atomic_rmw")
    assert [op.attrs["kind"] for op in rmw] == ["add", "max", "min", "and", "or", "xor", "xchg",
                                               "add"]
    assert rmw[1].attrs["sem"] == "relaxed" and rmw[1].attrs["scope"] == "cta"
    assert rmw[0].attrs["sem"] == "acq_rel" and rmw[0].attrs["scope"] == "gpu"
    assert len(rmw[0].operands) == 3 and len(rmw[1].operands) == 2
    assert str(rmw[3].operands[1].type) == "tensor<32xu64>"
    assert str(rmw[7].operands[1].type) == "tensor<32xf16>"
    (cas,) = ops(module, "atomic_cas")
    assert [str(v.type) for v in cas.operands] == ["ptr<i32>", "i32", "i32"]


@naiad.jit
def bad_atomic_kernel(p_ptr, KIND: tl.constexpr):
    if KIND == "max":
        tl.atomic_max(p_ptr, 1.0)
    elif KIND == "and":
        tl.atomic_and(p_ptr, 1)
    elif KIND == "sem":
        tl.atomic_add(p_ptr, 1, sem="sometimes")


@pytest.mark.parametrize("sig,kind,msg", [("*fp16", "max", "only atomic_add does"),
                                          ("*fp32", "and", "needs integer elements"),
                                          ("*i8", "max", "does not support i8"),
                                          ("*i32", "sem", "sem must be one of")])
def test_atomic_mistakes(sig, kind, msg):
    with pytest.raises(CompilationError, match=msg):
        compile_ir(bad_atomic_kernel, {"p_ptr": sig}, {"KIND": kind})


def test_run_atomic_cas_and_xchg():
    p = np.zeros(64, np.int32)
    q = np.arange(32, dtype=np.uint64) * 1000
    f = np.zeros(32, np.float16)
    q0 = q.copy()
    run(atomics_kernel, {"p_ptr": "*i32", "q_ptr": "*u64", "f_ptr": "*fp16"}, {}, (1,), [p, q, f])
    want = np.zeros(32, np.int64)
    want[:20] += 1
    want = np.maximum(want, np.arange(32))
    want = np.minimum(want, 5)
    want[0] = 1 if want[0] == 0 else want[0]  # cas(0 -> 1) at p[0]
    np.testing.assert_array_equal(p[:32], want)
    np.testing.assert_array_equal(p[32:], (((q0 & 0xFF) | 1) ^ 3).astype(np.int32))
    assert (q == 9).all() and (f == 1.5).all()


# -- elementwise math

@naiad.jit
def math_kernel(x_ptr, y_ptr, i_ptr, out_ptr, FN: tl.constexpr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    i = tl.load(i_ptr + offs)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "log":
        r = tl.log(tl.abs(x) + 1)
    elif FN == "log2":
        r = tl.log2(tl.abs(x) + 1)
    elif FN == "sqrt":
        r = tl.sqrt(tl.abs(x))
    elif FN == "rsqrt":
        r = tl.rsqrt(tl.abs(x) + 1)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = x.cos()
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    elif FN == "fma":
        r = tl.fma(x, y, 1.0)
    elif FN == "clamp":
        r = tl.clamp(x, -0.5, 0.5)
    elif FN == "where":
        r = tl.where(x > y, x, y * 2)
    elif FN == "maximum":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif FN == "minimum":
        r = tl.minimum(x, y)
    elif FN == "abs_int":
        r = tl.abs(i)
    elif FN == "umulhi":
        r = tl.umulhi(i.to(tl.uint32, bitcast=True), 0x9E3779B9).to(tl.int32, bitcast=True)
    elif FN == "cdiv":
        r = tl.cdiv(i, 7) + naiad.cdiv(100, 7)
    elif FN == "fdiv":
        r = tl.fdiv(x, y)
    tl.store(out_ptr + offs, r)


def _erf(v):
    import math
    return np.vectorize(math.erf)(v.astype(np.float64))


MATH = {
    "exp": lambda x, y, i: np.exp(x), "exp2": lambda x, y, i: np.exp2(x),
    "log": lambda x, y, i: np.log(np.abs(x) + 1), "log2": lambda x, y, i: np.log2(np.abs(x) + 1),
    "sqrt": lambda x, y, i: np.sqrt(np.abs(x)), "rsqrt": lambda x, y, i: 1 / np.sqrt(np.abs(x) + 1),
    "sin": lambda x, y, i: np.sin(x), "cos": lambda x, y, i: np.cos(x),
    "erf": lambda x, y, i: _erf(x), "floor": lambda x, y, i: np.floor(x),
    "ceil": lambda x, y, i: np.ceil(x), "sigmoid": lambda x, y, i: 1 / (1 + np.exp(-x)),
    "fma": lambda x, y, i: x * y + 1, "clamp": lambda x, y, i: np.clip(x, -0.5, 0.5),
    "where": lambda x, y, i: np.where(x > y, x, y * 2), "maximum": lambda x, y, i: np.maximum(x, y),
    "minimum": lambda x, y, i: np.minimum(x, y), "abs_int": lambda x, y, i: np.abs(i),
    "umulhi": lambda x, y, i: ((i.astype(np.uint32).astype(np.uint64) * 0x9E3779B9) >> 32)
    .astype(np.uint32).view(np.int32),
    "cdiv": lambda x, y, i: -(-i // 7) + 15, "fdiv": lambda x, y, i: x / y,
}
IR_NAME = {"sigmoid": "div", "clamp": "min", "where": "select", "maximum": "max",
           "minimum": "min", "abs_int": "abs", "cdiv": "div", "fdiv": "div", "log": "log",
           "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt", "umulhi": "umulhi"}


@pytest.mark.parametrize("fn", sorted(MATH))
def test_math(fn):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "i_ptr": "*i32", "out_ptr": "*fp64"}
    module, _ = compile_ir(math_kernel, sig, {"FN": fn})
    assert ops(module, IR_NAME.get(fn, fn)), f"no {IR_NAME.get(fn, fn)} op for {fn}"
    if fn == "maximum":
        assert ops(module, "max")[0].attrs == {"propagate_nan": True}
    x = RNG.standard_normal(128).astype(np.float32)
    y = RNG.standard_normal(128).astype(np.float32) + 3
    i = RNG.integers(-1000, 1000, 128, dtype=np.int32)
    if fn == "cdiv":
        i = np.abs(i)
    out = np.full(128, np.nan, np.float64)
    run(math_kernel, sig, {"FN": fn}, (1,), [x, y, i, out])
    np.testing.assert_allclose(out, MATH[fn](x, y, i), rtol=2e-6, atol=1e-6)


def test_math_on_integers_is_an_error():
    @naiad.jit
    def k(x_ptr):
        tl.store(x_ptr, tl.exp(tl.load(x_ptr)))

    with pytest.raises(CompilationError,
                       match=r"tl.exp: Expected dtype \['fp32', 'fp64'\] but got int32"):
        compile_ir(k, {"x_ptr": "*i32"})


@naiad.jit
def half_math_kernel(x_ptr, y_ptr, FN: tl.constexpr):
    x = tl.load(x_ptr)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "log":
        r = tl.log(x)
    elif FN == "floor":
        r = x.floor()
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    else:
        r = tl.sigmoid(x)
    tl.store(y_ptr, r)


@pytest.mark.parametrize("fn", ["exp", "log", "floor", "sigmoid", "sqrt_rn"])
@pytest.mark.parametrize("dtype,name", [("fp16", "fp16"), ("bf16", "bf16")])
def test_math_on_half_floats_is_refused_like_triton(fn, dtype, name):
    """Triton's math functions take fp32/fp64 only (libdevice's rule): f16/bf16 are an error
    with Triton's message, at the kernel line, rather than silently computed in f32."""
    with pytest.raises(CompilationError, match=rf"Expected dtype .* but got {name}") as exc:
        compile_ir(half_math_kernel, {"x_ptr": "*" + dtype, "y_ptr": "*fp32"}, {"FN": fn})
    assert exc.value.lineno is not None and "r = " in exc.value.source_line


def test_sqrt_rn_is_fp32_only_and_umulhi_32_or_64_bit_only():
    @naiad.jit
    def k(x_ptr, i_ptr):
        tl.store(x_ptr, tl.sqrt_rn(tl.load(x_ptr)))
        tl.store(i_ptr, tl.umulhi(tl.load(i_ptr), tl.load(i_ptr)))

    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32'\] but got fp64"):
        compile_ir(k, {"x_ptr": "*fp64", "i_ptr": "*i32"})
    with pytest.raises(CompilationError, match=r"umulhi: Expected dtype .* but got int16"):
        compile_ir(k, {"x_ptr": "*fp32", "i_ptr": "*i16"})
    compile_ir(k, {"x_ptr": "*fp32", "i_ptr": "*u64"})  # accepted


# -- casts ----------------------------------------------------------------------------------------

@naiad.jit
def cast_kernel(x_ptr, b_ptr, i_ptr, h_ptr, p_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(b_ptr + offs, x.to(tl.int1))
    tl.store(i_ptr + offs, tl.cast(x, tl.int32, bitcast=True))
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    q = p_ptr.to(tl.pointer_type(tl.int32))
    tl.store(q + offs, x.to(tl.int32))


def test_casts():
    module, _ = compile_ir(cast_kernel, {"x_ptr": "*fp32", "b_ptr": "*i1", "i_ptr": "*i32",
                                         "h_ptr": "*fp16", "p_ptr": "*fp32"})
    (cmp,) = ops(module, "cmp")
    assert cmp.attrs == {"pred": "ne"} and str(cmp.results[0].type) == "tensor<16xi1>"
    bitcasts = ops(module, "bitcast")
    assert [str(b.results[0].type) for b in bitcasts] == ["tensor<16xi32>", "ptr<i32>"]
    rtz = [c for c in ops(module, "cast") if c.attrs]
    assert rtz[0].attrs == {"fp_downcast_rounding": "rtz"}


def test_bitcast_needs_equal_widths():
    @naiad.jit
    def k(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr).to(tl.int16, bitcast=True))

    with pytest.raises(CompilationError, match=r"cannot bitcast f32 \(32 bits\) to i16"):
        compile_ir(k, {"x_ptr": "*fp32"})


def test_run_casts():
    x = np.array([0.0, -1.5, 2.7, -0.0, 3.0, 1e-3, -7.9, 100.25] * 2, np.float32)
    b, i, h = np.zeros(16, bool), np.zeros(16, np.int32), np.zeros(16, np.float16)
    p = np.zeros(16, np.float32)
    run(cast_kernel, {"x_ptr": "*fp32", "b_ptr": "*i1", "i_ptr": "*i32", "h_ptr": "*fp16",
                      "p_ptr": "*fp32"}, {}, (1,), [x, b, i, h, p])
    np.testing.assert_array_equal(b, x != 0)
    np.testing.assert_array_equal(i, x.view(np.int32))
    np.testing.assert_array_equal(p.view(np.int32), x.astype(np.int32))


# -- shapes --------------------------------------------------------------------------------------

@naiad.jit
def shape_kernel(x_ptr, out_ptr, OP: tl.constexpr):
    r = tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :]
    x = tl.load(x_ptr + r)                                   # 8x16
    if OP == "reshape":
        y = tl.reshape(x, (16, 8)).reshape(8, 16)
    elif OP == "view":
        y = x.view(2, 4, 16).reshape([8, 16])
    elif OP == "trans":
        y = tl.trans(tl.trans(x) * 2)
    elif OP == "permute":
        y = tl.permute(tl.reshape(x, 2, 4, 16), (2, 0, 1)).permute(1, 2, 0).reshape(8, 16)
    elif OP == "broadcast_to":
        y = tl.broadcast_to(tl.sum(x, axis=0)[None, :], (8, 16))
    elif OP == "expand_dims":
        y = tl.expand_dims(tl.max(x, axis=1), -1) + tl.expand_dims(tl.min(x, 0), 0)
    elif OP == "join_split":
        a, b = tl.split(tl.join(x, x + 1))
        y = a * 10 + b
    elif OP == "ravel":
        y = tl.reshape(tl.ravel(x) + 1, 8, 16)
    tl.store(out_ptr + r, y)


SHAPE = {
    "reshape": lambda x: x, "view": lambda x: x, "trans": lambda x: x * 2,
    "permute": lambda x: x,
    "broadcast_to": lambda x: np.broadcast_to(x.sum(0)[None, :], (8, 16)),
    "expand_dims": lambda x: x.max(1)[:, None] + x.min(0)[None, :],
    "join_split": lambda x: x * 10 + (x + 1), "ravel": lambda x: x + 1,
}


@pytest.mark.parametrize("op", sorted(SHAPE))
def test_shape_ops(op):
    module, _ = compile_ir(shape_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"OP": op})
    names = {o.name for o in ops(module)}
    expect = {"trans": "trans", "permute": "trans", "join_split": "split", "reshape": "reshape",
              "view": "reshape", "broadcast_to": "broadcast", "expand_dims": "expand_dims",
              "ravel": "reshape"}[op]
    assert expect in names
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    out = np.full_like(x, np.nan)
    run(shape_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"OP": op}, (1,), [x, out])
    np.testing.assert_allclose(out, SHAPE[op](x), rtol=1e-6)


@naiad.jit
def bad_shape_kernel(x_ptr, OP: tl.constexpr):
    x = tl.arange(0, 16)
    if OP == "reshape":
        y = tl.reshape(x, (4, 8))
    elif OP == "reshape-pow2":
        y = tl.reshape(x, (2, 3))
    elif OP == "permute":
        y = tl.permute(x[:, None], (0, 0))
    elif OP == "broadcast":
        y = tl.broadcast_to(x[None, :], (4, 8))
    elif OP == "split":
        y = tl.split(x)
    tl.store(x_ptr, y)


@pytest.mark.parametrize("op,msg", [("reshape", r"cannot reshape \[16\] \(16 elements\)"),
                                    ("reshape-pow2", "not a power of two"),
                                    ("permute", "not a reordering"),
                                    ("broadcast", r"cannot broadcast shape \[1, 16\] to \[4, 8\]"),
                                    ("split", "last dimension of size 2")])
def test_shape_mistakes(op, msg):
    with pytest.raises(CompilationError, match=msg):
        compile_ir(bad_shape_kernel, {"x_ptr": "*i32"}, {"OP": op})


# -- hints -----------------------------------------------------------------------------------------

def test_hints_become_hint_ops_with_per_dimension_lists():
    @naiad.jit
    def k(x_ptr, n):
        m = tl.multiple_of(n, 16)
        offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, 64), 8), 64)
        tl.store(x_ptr + m + offs, 1.0)

    module, _ = compile_ir(k, {"x_ptr": "*fp32", "n": "i32"})
    hints = [h.attrs for h in ops(module, "hint")]
    assert hints == [{"divisibility": [16]}, {"divisibility": [8]}, {"contiguity": [64]}]


def test_a_hint_as_a_statement_marks_its_value_in_its_own_block():
    """``tl.multiple_of(ptrs, 16)`` with the result unused (tutorial 08) still reaches the load
    of ``ptrs`` that follows in the same block; a hint inside a loop on a value defined
    outside it only reaches the uses inside (the loop's value stays valid after the loop)."""
    from naiad.passes.axis_info import analyze

    @naiad.jit
    def k(x_ptr, y_ptr, n, out_ptr):
        ptrs = x_ptr + tl.arange(0, 64)
        outer = y_ptr + tl.arange(0, 64)
        acc = tl.zeros((64,), dtype=tl.float32)
        for i in range(n):
            tl.multiple_of(ptrs, 16)
            tl.multiple_of(outer, 16)
            acc += tl.load(ptrs) + tl.load(outer)
            ptrs += 64
        tl.store(out_ptr + tl.arange(0, 64), acc + tl.load(outer))

    module, _ = compile_ir(k, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32",
                               "out_ptr": "*fp32"})
    fn = next(f for f in module.functions.values() if f.attrs.get("kernel"))
    info = analyze(fn)
    loads = ops(module, "load")
    inner_x, inner_y, after = loads
    assert inner_x.operands[0].defining_op.name == "hint"   # the carried pointer, hinted
    assert info.divisibility(inner_x.operands[0]) == 4       # 16 bytes of f32
    assert inner_y.operands[0].defining_op.name != "hint"   # defined outside the loop
    assert after.operands[0].defining_op.name != "hint"


# -- reductions ------------------------------------------------------------------------------------

@naiad.jit
def reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr):
    r = tl.arange(0, 4)[:, None] * 32 + tl.arange(0, 32)[None, :]
    x = tl.load(x_ptr + r)
    if OP == "sum":
        y = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        y = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        y = x.min(axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        y = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        y = x.argmin(AXIS, keep_dims=KEEP)
    elif OP == "xor_sum":
        y = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
    if AXIS is None:
        if KEEP:
            tl.store(out_ptr + tl.arange(0, 1)[:, None], y)
        else:
            tl.store(out_ptr, y)
    elif AXIS == 0:
        if KEEP:
            tl.store(out_ptr + tl.arange(0, 32)[None, :], y)
        else:
            tl.store(out_ptr + tl.arange(0, 32), y)
    else:
        if KEEP:
            tl.store(out_ptr + tl.arange(0, 4)[:, None], y)
        else:
            tl.store(out_ptr + tl.arange(0, 4), y)


REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax,
          "argmin": np.argmin, "xor_sum": lambda x, axis: np.bitwise_xor.reduce(
              x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions(op, axis, keep):
    dtype, sig = (np.int32, "*i32") if op == "xor_sum" else (np.float32, "*fp32")
    if dtype == np.int32:
        x = RNG.integers(-1000, 1000, (4, 32), dtype=np.int32)
    else:
        x = RNG.integers(-5, 5, (4, 32)).astype(np.float32)  # many ties for arg*
    out_dtype = np.int32 if op.startswith("arg") else dtype
    out = np.full(32, -999, out_dtype)
    out_sig = "*i32" if out_dtype == np.int32 else "*fp32"
    module = run(reduce_kernel, {"x_ptr": sig, "out_ptr": out_sig},
                 {"OP": op, "AXIS": axis, "KEEP": keep}, (1,), [x, out])
    want = np.atleast_1d(REDUCE[op](x, axis=axis))
    np.testing.assert_array_equal(out[:want.size], want)
    reduces = ops(module, "reduce")
    assert len(reduces) == 1 and reduces[0].attrs["axis"] == (0 if axis is None else axis)
    if op in ("max", "min"):  # tl.max/tl.min ignore NaN like Triton: no propagate_nan
        combine = reduces[0].regions[0].block.ops[0]
        assert combine.name == op and combine.attrs == {}


def test_narrow_sums_accumulate_in_32_bits_and_max_widens_like_triton():
    @naiad.jit
    def k(a_ptr, h_ptr, out_ptr):
        offs = tl.arange(0, 16)
        tl.store(out_ptr, tl.sum(tl.load(a_ptr + offs)))
        tl.store(out_ptr + 1, tl.max(tl.load(h_ptr + offs), axis=0))
        tl.store(out_ptr + 2, tl.sum(tl.load(h_ptr + offs), dtype=tl.float64))

    module, _ = compile_ir(k, {"a_ptr": "*u8", "h_ptr": "*fp16", "out_ptr": "*fp64"})
    assert [str(r.results[0].type) for r in ops(module, "reduce")] == ["u32", "f32", "f64"]


@naiad.jit
def pair_max(a, ia, b, ib):
    take_a = (a > b) | ((a == b) & (ia > ib))  # ties go to the larger index
    return tl.where(take_a, a, b), tl.where(take_a, ia, ib)


@naiad.jit
def add_combine(a, b):
    return a + b


@naiad.jit
def custom_reduce_kernel(x_ptr, v_ptr, i_ptr, s_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    v, i = tl.reduce((x, offs), 0, pair_max)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)
    tl.store(s_ptr, x.reduce(0, add_combine))


def test_run_custom_reduce_with_tuple_inputs():
    x = RNG.integers(0, 4, 64).astype(np.float32)
    v, i, s = (np.full(1, -1, t) for t in (np.float32, np.int32, np.float32))
    module = run(custom_reduce_kernel, {"x_ptr": "*fp32", "v_ptr": "*fp32", "i_ptr": "*i32",
                                        "s_ptr": "*fp32"}, {}, (1,), [x, v, i, s])
    assert v[0] == x.max() and i[0] == np.flatnonzero(x == x.max())[-1]
    assert s[0] == x.sum()
    assert not ops(module, "call")  # combine functions are generated inline in the region


def test_combine_function_must_be_jit():
    @naiad.jit
    def k(x_ptr):
        tl.store(x_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, 4)), 0, max))

    with pytest.raises(CompilationError, match="tl.reduce needs a @naiad.jit combine function"):
        compile_ir(k, {"x_ptr": "*fp32"})


# -- scans -----------------------------------------------------------------------------------------

@naiad.jit
def scan_kernel(x_ptr, out_ptr, OP: tl.constexpr, REV: tl.constexpr):
    r = tl.arange(0, 4)[:, None] * 16 + tl.arange(0, 16)[None, :]
    x = tl.load(x_ptr + r)
    if OP == "cumsum":
        y = tl.cumsum(x, axis=1, reverse=REV)
    elif OP == "cumprod":
        y = x.cumprod(0, reverse=REV)
    else:
        y = tl.associative_scan(x, 1, add_combine, reverse=REV)
    tl.store(out_ptr + r, y)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "assoc"])
@pytest.mark.parametrize("rev", [False, True])
def test_scans(op, rev):
    x = RNG.integers(-3, 4, (4, 16)).astype(np.int32)
    out = np.full_like(x, -999)
    module = run(scan_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, {"OP": op, "REV": rev},
                 (1,), [x, out])
    (scan,) = ops(module, "scan")
    assert scan.attrs == {"axis": 0 if op == "cumprod" else 1, "reverse": rev}
    axis = 0 if op == "cumprod" else 1
    src = np.flip(x, axis) if rev else x
    want = np.cumprod(src, axis) if op == "cumprod" else np.cumsum(src, axis)
    np.testing.assert_array_equal(out, np.flip(want, axis) if rev else want)


# -- dot -----------------------------------------------------------------------------------------

@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, MODE: tl.constexpr):
    r16 = tl.arange(0, 16)
    r32 = tl.arange(0, 32)
    a = tl.load(a_ptr + r16[:, None] * 32 + r32[None, :])
    b = tl.load(b_ptr + r32[:, None] * 16 + r16[None, :])
    if MODE == "acc":
        c = tl.dot(a, b, tl.full([16, 16], 1, c_ptr.dtype.element_ty), allow_tf32=False)
    elif MODE == "f16out":
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b, input_precision="tf32x3")
    tl.store(c_ptr + r16[:, None] * 16 + r16[None, :], c)


@pytest.mark.parametrize("elem,mode,out,prec", [("fp32", "acc", "fp32", "ieee"),
                                                ("fp16", "f16out", "fp16", "ieee"),
                                                ("i8", "acc", "i32", "ieee"),
                                                ("fp32", "plain", "fp32", "tf32x3")])
def test_dot(elem, mode, out, prec):
    sig = {"a_ptr": "*" + elem, "b_ptr": "*" + elem, "c_ptr": "*" + out}
    module, _ = compile_ir(dot_kernel, sig, {"MODE": mode})
    # tf32x3 is split in the tile IR into three tf32 dots (small*big, big*small, big*big)
    parts = ["tf32"] * 3 if prec == "tf32x3" else [prec]
    assert [d.attrs["input_precision"] for d in ops(module, "dot")] == parts
    dot = ops(module, "dot")[-1]
    irname = {"fp32": "f32", "fp16": "f16", "i32": "i32"}[out]
    assert str(dot.results[0].type) == f"tensor<16x16x{irname}>".replace("16x16x", "16x16x")
    npt = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8}[elem]
    a = RNG.integers(-4, 4, (16, 32)).astype(npt)
    b = RNG.integers(-4, 4, (32, 16)).astype(npt)
    c = np.zeros((16, 16), {"fp32": np.float32, "fp16": np.float16, "i32": np.int32}[out])
    run(dot_kernel, sig, {"MODE": mode}, (1,), [a, b, c])
    want = a.astype(np.int64) @ b.astype(np.int64) + (1 if mode == "acc" else 0)
    np.testing.assert_array_equal(c.astype(np.int64), want)


def test_dot_mistakes():
    @naiad.jit
    def k(a_ptr, b_ptr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
        tl.store(a_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))

    with pytest.raises(CompilationError, match="operands must have one dtype, got f32 and f16"):
        compile_ir(k, {"a_ptr": "*fp32", "b_ptr": "*fp16"})


# -- standard-library helpers ----------------------------------------------------------------------

@naiad.jit
def standard_kernel(x_ptr, sm_ptr, il_ptr, sw_ptr):
    r = tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
    x = tl.load(x_ptr + r)
    tl.store(sm_ptr + r, tl.softmax(x, dim=1))
    a = tl.arange(0, 8)
    tl.store(il_ptr + tl.arange(0, 16), tl.interleave(a, a + 100))
    i = tl.arange(0, 8)[:, None]
    j = tl.arange(0, 4)[None, :]
    ni, nj = tl.swizzle2d(i, j, 8, 4, 3)
    tl.store(sw_ptr + i * 4 + j, ni * 10 + nj)


def test_run_softmax_interleave_swizzle2d():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    sm = np.full_like(x, np.nan)
    il = np.full(16, -1, np.int32)
    sw = np.full((8, 4), -1, np.int32)
    run(standard_kernel, {"x_ptr": "*fp32", "sm_ptr": "*fp32", "il_ptr": "*i32",
                          "sw_ptr": "*i32"}, {}, (1,), [x, sm, il, sw])
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(il, np.stack([np.arange(8), np.arange(8) + 100], 1).ravel())
    want = np.zeros((8, 4), np.int32)
    for i in range(8):
        for j in range(4):
            ij = i * 4 + j
            off_i = ij // 12 * 3
            g = min(8 - off_i, 3)
            ij %= 12
            want[i, j] = (off_i + ij % g) * 10 + ij // g
    np.testing.assert_array_equal(sw, want)
