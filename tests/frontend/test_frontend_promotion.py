"""Type promotion: the pure rules against Triton's documented table (and numpy where the two
agree), then the same rules as they appear in generated IR (casts inserted, result types)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError
from naiad.ir import types as irt
from naiad.language.promotion import computation_type

from frontend_testutil import compile_ir, ops

T = {n: irt.ScalarType(n) for n in irt.SCALAR_NAMES}
SIG = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8",
       "u16": "u16", "u32": "u32", "u64": "u64", "f16": "fp16", "bf16": "bf16", "f32": "fp32",
       "f64": "fp64", "f8e5": "fp8e5", "f8e4nv": "fp8e4nv", "f8e4b8": "fp8e4b8",
       "f8e5b16": "fp8e5b16", "f8e4b15": "fp8e4b15"}

# Triton's documented examples (python-api/triton-semantics) plus the C integer rules they cite,
# corrected where Triton's code (computation_type_impl) and compiled TTIR differ from its docs:
# bfloat16 with an integer or bool computes in float32.
DOCUMENTED = [
    ("i32", "bf16", "f32"),    # kind: the float wins, but bf16 only meets bf16 (Triton's code)
    ("f32", "f16", "f32"),     # width: the wider wins
    ("f16", "bf16", "f16"),    # same width, different floats: Triton documents "prefer float16"
    ("i32", "u32", "u32"),     # same width, different signedness: unsigned wins
    ("i8", "u16", "u16"),      # different width: the wider wins even when unsigned
    ("i16", "u8", "i16"),      # ... or when signed
    ("u8", "i64", "i64"),
    ("u64", "i8", "u64"),
    ("i1", "i32", "i32"),      # bool is the lowest kind
    ("i1", "u8", "u8"),
    ("i1", "f16", "f16"),
    ("i64", "f16", "f16"),     # any float beats any integer
    ("u64", "bf16", "f32"),
    ("i1", "bf16", "f32"),
    ("i8", "bf16", "f32"),
    ("f64", "bf16", "f64"),
    ("i1", "i1", "i1"),
    # float8 (Triton's computation_type_impl): two different formats meet in float16, a wider
    # float wins, bfloat16 gives float32; float8 never computes in float8 (see test_float8_*)
    ("f8e5", "f8e4nv", "f16"),
    ("f8e4b8", "f16", "f16"),
    ("f8e5", "bf16", "f32"),
    ("f8e4nv", "f32", "f32"),
    ("f8e5b16", "f64", "f64"),
]


@pytest.mark.parametrize("a,b,want", DOCUMENTED)
def test_documented_pairs(a, b, want):
    assert computation_type(T[a], False, T[b], False) == T[want]
    assert computation_type(T[b], False, T[a], False) == T[want]  # symmetric


def _numpy_agrees(a, b) -> bool:
    """Pairs where numpy's promotion is Triton's: no bf16/bool, same kind, and for integers
    either one signedness or a signed type strictly wider than the unsigned one."""
    ta, tb = T[a], T[b]
    if "bf16" in (a, b) or "i1" in (a, b) or ta.is_float != tb.is_float:
        return False
    if ta.is_fp8 or tb.is_fp8:   # ml_dtypes promotes float8 its own way (f16 + f8 -> f32)
        return False
    if ta.is_float:
        return True
    if ta.is_unsigned == tb.is_unsigned:
        return True
    signed, unsigned = (ta, tb) if tb.is_unsigned else (tb, ta)
    return signed.bitwidth > unsigned.bitwidth


AGREEING = [(a, b) for a, b in itertools.product(T, T) if _numpy_agrees(a, b)]


@pytest.mark.parametrize("a,b", AGREEING)
def test_matches_numpy_where_they_agree(a, b):
    want = np.promote_types(T[a].numpy_dtype, T[b].numpy_dtype)
    assert computation_type(T[a], False, T[b], False).numpy_dtype == want


@pytest.mark.parametrize("t,value,want", [
    ("u8", 3, "u8"), ("i8", 100, "i8"), ("i64", 1, "i64"),      # int scalar: tensor type kept
    ("f16", 1.5, "f16"), ("bf16", 2.0, "bf16"), ("f16", 3, "f16"),  # lower or equal kind
    ("i16", 4.0, "f32"), ("u64", 0.5, "f32"), ("i32", 1e300, "f64"),  # float scalar, int tensor
    ("i1", 2, "i32"), ("i1", True, "i1"), ("u16", 2 ** 40, "u16"),
])
def test_weak_python_scalars(t, value, want):
    from naiad.language.promotion import python_scalar_type
    assert computation_type(T[t], False, python_scalar_type(value), True) == T[want]
    assert computation_type(python_scalar_type(value), True, T[t], False) == T[want]


def _triton_dtype(tl_mod, name):
    return {"i1": tl_mod.int1, "f16": tl_mod.float16, "bf16": tl_mod.bfloat16,
            "f32": tl_mod.float32, "f64": tl_mod.float64, "f8e5": tl_mod.float8e5,
            "f8e4nv": tl_mod.float8e4nv, "f8e4b8": tl_mod.float8e4b8,
            "f8e5b16": tl_mod.float8e5b16, "f8e4b15": tl_mod.float8e4b15}.get(name) or \
        getattr(tl_mod, name.replace("i", "int").replace("u", "uint"))


@pytest.mark.parametrize("div_or_mod", [False, True])
def test_every_pair_matches_tritons_computation_type_impl(div_or_mod):
    """Triton's code is the authority (its docs differ for bf16); compared when it is installed."""
    triton_lang = pytest.importorskip("triton.language", reason="Triton not installed (optional)")
    from triton.language import core as tcore
    from triton.language.semantic import TritonSemantic
    sem = TritonSemantic.__new__(TritonSemantic)
    sem.tensor = tcore.tensor
    names = [n for n in irt.SCALAR_NAMES if n in SIG]
    for a, b in itertools.product(names, names):
        try:
            want = (sem.computation_type_impl(_triton_dtype(triton_lang, a), False,
                                                 _triton_dtype(triton_lang, b), False, div_or_mod))
        except TypeError:
            with pytest.raises(CompilationError):
                computation_type(T[a], False, T[b], False, div_or_mod)
            continue
        got = computation_type(T[a], False, T[b], False, div_or_mod)
        assert _triton_dtype(triton_lang, str(got)) == want, (a, b, div_or_mod)


def test_division_of_halves_computes_in_f32():
    assert computation_type(T["f16"], False, T["f16"], False, div_or_mod=True) == T["f32"]
    assert computation_type(T["bf16"], False, T["bf16"], False, div_or_mod=True) == T["f32"]
    assert computation_type(T["f16"], False, irt.f32, True, div_or_mod=True) == T["f32"]
    assert computation_type(T["i32"], False, T["i8"], False, div_or_mod=True) == T["i32"]


def test_division_refuses_mixed_signedness():
    with pytest.raises(CompilationError, match="signedness"):
        computation_type(T["i32"], False, T["u32"], False, div_or_mod=True)


# -- the same rules in generated IR -------------------------------------------------------------

@naiad.jit
def binop_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr)
    y = tl.load(y_ptr)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    elif OP == "&":
        z = x & y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "<":
        z = x < y
    elif OP == "where":
        z = tl.where(x > 0, x, y)
    elif OP == "max":
        z = tl.maximum(x, y)
    tl.store(out_ptr, z)


def _z(a, b, op, out="fp64"):
    module, _ = compile_ir(binop_kernel, {"x_ptr": "*" + SIG[a], "y_ptr": "*" + SIG[b],
                                          "out_ptr": "*" + out}, {"OP": op})
    (z,) = [o for o in ops(module) if o.results and o.results[0].name_hint == "z"]
    return z


@pytest.mark.parametrize("a,b,want", DOCUMENTED)
@pytest.mark.parametrize("op", ["+", "*", "where", "max"])
def test_ir_arithmetic_type(a, b, want, op):
    z = _z(a, b, op)
    assert str(z.results[0].type) == want
    assert all(str(v.type) in (want, "i1") for v in z.operands)  # casts were inserted


def test_ir_comparison_is_i1_after_promotion():
    z = _z("i8", "u32", "<")
    assert z.name == "cmp" and str(z.results[0].type) == "i1"
    assert [str(v.type) for v in z.operands] == ["u32", "u32"]


@pytest.mark.parametrize("a,b,want", [("i32", "i32", "f32"), ("i64", "i8", "f32"),
                                      ("f16", "f16", "f32"), ("bf16", "f16", "f32"),
                                      ("f64", "i32", "f64"), ("f32", "f16", "f32")])
def test_ir_true_division(a, b, want):
    z = _z(a, b, "/")
    assert z.name == "div" and str(z.results[0].type) == want


@pytest.mark.parametrize("op,ir", [("//", "div"), ("%", "rem")])
def test_ir_integer_division_and_remainder(op, ir):
    z = _z("i16", "i32", op)
    assert z.name == ir and str(z.results[0].type) == "i32"


def test_ir_float_remainder_is_rem_and_floor_division_is_rejected():
    assert _z("f32", "f32", "%").name == "rem"
    with pytest.raises(CompilationError, match="// is defined on integers only"):
        _z("f32", "f32", "//")


def test_ir_shifts_and_bitwise_promote_like_integers():
    assert str(_z("u8", "i32", "<<").results[0].type) == "i32"
    z = _z("u32", "i8", ">>")
    assert z.name == "shr" and str(z.results[0].type) == "u32"
    assert str(_z("i1", "i1", "&").results[0].type) == "i1"


@naiad.jit
def scalar_kernel(x_ptr, out_ptr, OP: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if OP == "+":
        z = x + C
    elif OP == "r-":
        z = C - x
    elif OP == "/":
        z = x / C
    elif OP == "==":
        z = x == C
    tl.store(out_ptr + tl.arange(0, 16), z)


def _zs(t, op, c):
    module, _ = compile_ir(scalar_kernel, {"x_ptr": "*" + SIG[t], "out_ptr": "*fp64"},
                           {"OP": op, "C": c})
    (z,) = [o for o in ops(module) if o.results and o.results[0].name_hint == "z"]
    return z


@pytest.mark.parametrize("t,op,c,want,const", [
    ("i8", "+", 1, "i8", "i8"), ("u8", "r-", 200, "u8", "u8"), ("f16", "+", 0.5, "f16", "f16"),
    ("i16", "+", 4.0, "f32", "f32"), ("i32", "/", 2, "f32", None), ("f16", "/", 2.0, "f32", "f32"),
    ("i1", "+", 1, "i32", "i32"), ("u16", "==", 7, "i1", "u16"), ("bf16", "r-", 1, "bf16", "bf16"),
])
def test_ir_weak_scalars(t, op, c, want, const):
    """The literal becomes a constant of the computation type directly (no widening of the
    tensor when the literal's kind is not higher)."""
    z = _zs(t, op, c)
    assert str(z.results[0].type) == f"tensor<16x{want}>"
    if const is not None:
        consts = [v.defining_op for v in z.operands if v.defining_op.name == "constant"]
        assert len(consts) == 1 and str(consts[0].results[0].type) == f"tensor<16x{const}>"


@pytest.mark.parametrize("t,c,msg", [("i8", 300, "out of range for type i8"),
                                     ("u8", -1, "negative constant -1"),
                                     ("i32", 2 ** 40, "out of range for type i32")])
def test_ir_weak_scalar_that_does_not_fit_is_an_error(t, c, msg):
    with pytest.raises(CompilationError, match=msg):
        _zs(t, "+", c)
