"""Every mistake in a kernel is a CompilationError that names this file, the line and column of
the offending code, quotes the line with a caret, and says what is wrong.

Offending lines carry a ``# E:<tag>`` marker; the expected position is computed from it.
"""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError
from naiad.frontend import generate

from frontend_testutil import marked

HERE = __file__
GLOBAL_LIST = [1, 2, 3]


def plain_python_helper(x):
    return x + 1


@naiad.jit
def jit_helper(x, y):
    return x + y


@naiad.jit
def callee_with_error(x):
    return x & 1  # E:callee


def check(kernel, sig, consts, tag, snippet, message):
    """Compile and check the error's position, quoted line, caret and message."""
    with pytest.raises(CompilationError) as info:
        generate(kernel, sig, consts, {})
    err = info.value
    line, col, text = marked(tag, snippet, HERE)
    assert err.filename == HERE
    assert (err.lineno, err.col) == (line, col), str(err)
    assert err.source_line.strip() == text.strip()
    assert re.search(message, err.raw_message), err.raw_message
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"{HERE}:{line}:{col + 1}: ")
    assert rendered[1].strip() == text.strip()
    caret = rendered[2]
    assert len(caret) - len(caret.lstrip()) - 4 == col - (len(text) - len(text.lstrip()))
    assert caret.strip() == "^"
    # no naiad traceback chained to it: at most the bare message as the cause (as Triton's)
    assert err.__cause__ is None or (err.__cause__.__traceback__ is None
                                     and str(err.__cause__) == err.raw_message.split(
                                         " (in @jit function")[0])
    assert err.__context__ is None or err.__suppress_context__
    return err


P = {"x_ptr": "*fp32", "n": "i32"}


# -- broadcasting -------------------------------------------------------------------------------
@naiad.jit
def k_shape_mismatch(x_ptr, n):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    c = a + b  # E:shape
    tl.store(x_ptr + c, 1.0)


def test_shape_mismatch_in_broadcasting():
    check(k_shape_mismatch, P, {}, "E:shape", "a + b", r"shapes \[16\] and \[32\] are "
                                                       r"incompatible")


# -- names --------------------------------------------------------------------------------------
@naiad.jit
def k_unknown_name(x_ptr, n):
    y = undefined_thing + 1  # noqa: F821  # E:unknown
    tl.store(x_ptr, y)


def test_unknown_name():
    check(k_unknown_name, P, {}, "E:unknown", "undefined_thing",
          r"name 'undefined_thing' is not defined")


@naiad.jit
def k_global_list(x_ptr, n):
    tl.store(x_ptr, GLOBAL_LIST[0])  # E:global


def test_global_that_is_not_a_constant():
    check(k_global_list, P, {}, "E:global", "GLOBAL_LIST", r"global 'GLOBAL_LIST' \(a list\)")


# -- arange ---------------------------------------------------------------------------------------
@naiad.jit
def k_arange_runtime_bound(x_ptr, n):
    offs = tl.arange(0, n)  # E:arange-n
    tl.store(x_ptr + offs, 1.0)


def test_arange_bound_must_be_constexpr():
    check(k_arange_runtime_bound, P, {}, "E:arange-n", "tl.arange",
          r"arange's end must be a compile-time constant \(tl.constexpr\)")


@naiad.jit
def k_arange_not_pow2(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # E:arange-pow2
    tl.store(x_ptr + offs, 1.0)


def test_arange_length_must_be_a_power_of_two():
    check(k_arange_not_pow2, P, {"BLOCK": 10}, "E:arange-pow2", "tl.arange",
          r"length end - start = 10 must be a power of two")


# -- loops ---------------------------------------------------------------------------------------
@naiad.jit
def k_loop_type_change(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += tl.load(x_ptr + i)  # E:loop-type
    tl.store(x_ptr, acc)


def test_loop_carried_variable_changes_type():
    check(k_loop_type_change, P, {}, "E:loop-type", "acc +=",
          r"loop-carried variable 'acc' changes type inside the loop: it is i32 before the "
          r"loop and f32")


@naiad.jit
def k_while_type_change(x_ptr, n):
    v = tl.zeros([16], dtype=tl.float32)
    i = 0
    while i < n:
        v = v.to(tl.float16)  # E:while-type
        i += 1
    tl.store(x_ptr + tl.arange(0, 16), v)


def test_while_carried_variable_changes_type():
    check(k_while_type_change, P, {}, "E:while-type", "v = v",
          r"'v' changes type .* tensor<16xf32> before the loop and tensor<16xf16>")


@naiad.jit
def k_return_in_loop(x_ptr, n):
    for i in range(n):
        return  # E:return-loop


def test_return_inside_a_loop():
    check(k_return_in_loop, P, {}, "E:return-loop", "return", r"return inside a loop")


@naiad.jit
def k_loop_local_used_after(x_ptr, n):
    for i in range(n):
        t = i * 2
    tl.store(x_ptr, t)  # E:loop-local


def test_name_first_assigned_in_a_loop_is_not_visible_after_it():
    check(k_loop_local_used_after, P, {}, "E:loop-local", "t)",
          r"'t' is first assigned inside the loop")


# -- branches -----------------------------------------------------------------------------------
@naiad.jit
def k_one_branch(x_ptr, n):
    if n > 0:
        y = 1.0
    tl.store(x_ptr, y)  # E:one-branch


def test_variable_defined_in_one_branch_only():
    check(k_one_branch, P, {}, "E:one-branch", "y)",
          r"'y' is assigned in only one branch of the if statement")


@naiad.jit
def k_branch_types(x_ptr, n):
    y = tl.load(x_ptr)
    if n > 0:  # E:branch-types
        y = y.to(tl.float16)
    tl.store(x_ptr, y)


def test_branches_must_agree_on_a_type():
    check(k_branch_types, P, {}, "E:branch-types", "if",
          r"variable 'y' has type f16 on one path and f32 on the other")


@naiad.jit
def k_block_condition(x_ptr, n):
    offs = tl.arange(0, 16)
    if offs < n:  # E:block-cond
        tl.store(x_ptr, 1.0)


def test_if_on_a_block_is_an_error():
    check(k_block_condition, P, {}, "E:block-cond", "if",
          r"condition of an if statement must be a scalar, got tensor<16xi1>; use tl.where")


@naiad.jit
def k_kernel_returns(x_ptr, n):
    return n  # E:kernel-return


def test_kernel_cannot_return_a_value():
    check(k_kernel_returns, P, {}, "E:kernel-return", "return", r"a kernel cannot return a value")


# -- unsupported constructs ------------------------------------------------------------------------
@naiad.jit
def k_try(x_ptr, n):
    try:  # E:try
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@naiad.jit
def k_with(x_ptr, n):
    with open("f"):  # E:with
        pass


@naiad.jit
def k_lambda(x_ptr, n):
    f = lambda v: v  # noqa: E731  # E:lambda
    tl.store(x_ptr, f(1.0))


@naiad.jit
def k_comprehension(x_ptr, n):
    vals = [i for i in range(4)]  # E:comprehension
    tl.store(x_ptr, vals[0])


@naiad.jit
def k_break(x_ptr, n):
    for i in range(n):
        break  # E:break


@naiad.jit
def k_continue(x_ptr, n):
    i = 0
    while i < n:
        i += 1
        continue  # E:continue


@pytest.mark.parametrize("kernel,tag,snippet,message", [
    (k_try, "E:try", "try", r"try statements are not supported"),
    (k_with, "E:with", "with", r"with statements are not supported"),
    (k_lambda, "E:lambda", "lambda", r"lambda is not supported"),
    (k_comprehension, "E:comprehension", "[i for", r"comprehensions are not supported"),
    (k_break, "E:break", "break", r"break is not supported"),
    (k_continue, "E:continue", "continue", r"continue is not supported"),
])
def test_unsupported_python_constructs(kernel, tag, snippet, message):
    check(kernel, P, {}, tag, snippet, message)


# -- operators -----------------------------------------------------------------------------------
@naiad.jit
def k_bitwise_float(x_ptr, n):
    x = tl.load(x_ptr)
    y = x & 1  # E:bitwise
    tl.store(x_ptr, y)


def test_bitwise_op_on_floats():
    check(k_bitwise_float, P, {}, "E:bitwise", "x & 1",
          r"bitwise operator & needs integer operands, got f32")


@naiad.jit
def k_invert_float(x_ptr, n):
    tl.store(x_ptr, ~tl.load(x_ptr))  # E:invert


def test_invert_on_floats():
    check(k_invert_float, P, {}, "E:invert", "~tl", r"bitwise operator ~ needs an integer")


@naiad.jit
def k_float_floordiv(x_ptr, n):
    tl.store(x_ptr, tl.load(x_ptr) // 2.0)  # E:floordiv


def test_floor_division_of_floats():
    check(k_float_floordiv, P, {}, "E:floordiv", "tl.load(x_ptr) //",
          r"// is defined on integers only")


# -- memory -------------------------------------------------------------------------------------
@naiad.jit
def k_load_non_pointer(x_ptr, n):
    v = tl.load(n)  # E:load-ptr
    tl.store(x_ptr, v)


@naiad.jit
def k_store_non_pointer(x_ptr, n):
    tl.store(n, 1.0)  # E:store-ptr


def test_load_through_a_non_pointer():
    check(k_load_non_pointer, P, {}, "E:load-ptr", "tl.load",
          r"tl.load needs a pointer \(or a tensor of pointers\) as its first argument, got i32")


def test_store_through_a_non_pointer():
    check(k_store_non_pointer, P, {}, "E:store-ptr", "tl.store", r"tl.store needs a pointer")


@naiad.jit
def k_bad_keyword(x_ptr, n):
    v = tl.load(x_ptr, msk=n > 0)  # E:bad-kw
    tl.store(x_ptr, v)


def test_bad_keyword_to_a_builtin():
    check(k_bad_keyword, P, {}, "E:bad-kw", "tl.load",
          r"bad arguments to tl.load: got an unexpected keyword argument 'msk'")


# -- calls
@naiad.jit
def k_plain_call(x_ptr, n):
    tl.store(x_ptr, plain_python_helper(n))  # E:plain


def test_calling_a_plain_python_function():
    check(k_plain_call, P, {}, "E:plain", "plain_python_helper",
          r"cannot call the plain Python function 'plain_python_helper'.*@naiad.jit")


@naiad.jit
def k_wrong_arg_count(x_ptr, n):
    tl.store(x_ptr, jit_helper(n, n, n))  # E:argc


def test_wrong_number_of_arguments_to_a_jit_callee():
    check(k_wrong_arg_count, P, {}, "E:argc", "jit_helper",
          r"bad call to @jit function jit_helper\(x, y\): too many positional arguments")


@naiad.jit
def k_jit_bad_keyword(x_ptr, n):
    tl.store(x_ptr, jit_helper(n, y=n, z=n))  # E:jit-kw


def test_bad_keyword_to_a_jit_callee():
    check(k_jit_bad_keyword, P, {}, "E:jit-kw", "jit_helper",
          r"jit_helper\(x, y\): got an unexpected keyword argument 'z'")


@naiad.jit
def k_calls_broken_callee(x_ptr, n):
    tl.store(x_ptr, callee_with_error(tl.load(x_ptr)))


def test_error_inside_a_callee_points_into_the_callee():
    check(k_calls_broken_callee, P, {}, "E:callee", "x & 1", r"needs integer operands")


# -- compile-time checks
@naiad.jit
def k_static_assert(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, f"BLOCK={BLOCK} must be a multiple of 32")  # E:static
    tl.store(x_ptr, 1.0)


def test_static_assert_failure_quotes_the_message():
    check(k_static_assert, P, {"BLOCK": 48}, "E:static", "tl.static_assert",
          r"static_assert failed: BLOCK=48 must be a multiple of 32")
    generate(k_static_assert, P, {"BLOCK": 64}, {})  # holds: compiles


@naiad.jit
def k_index_tensor(x_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(x_ptr, offs[3])  # E:index


def test_indexing_a_tensor_with_an_int():
    check(k_index_tensor, P, {}, "E:index", "offs[3]", r"only None and ':' can index a tensor")


@naiad.jit
def k_mismatched_dot(x_ptr, n):
    a = tl.zeros([8, 8], dtype=tl.float16)
    b = tl.zeros([16, 8], dtype=tl.float16)
    c = tl.dot(a, b)  # E:dot
    tl.store(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :], c)


def test_dot_shapes_must_match():
    check(k_mismatched_dot, P, {}, "E:dot", "tl.dot", r"tl.dot shapes do not match")


@naiad.jit
def k_missing_constexpr(x_ptr, n, BLOCK: tl.constexpr):  # E:missing
    tl.store(x_ptr, 1.0)


def test_missing_constexpr_value():
    check(k_missing_constexpr, P, {}, "E:missing", "BLOCK",
          r"constexpr parameter 'BLOCK' needs a value")


def test_missing_signature_type():
    check(k_missing_constexpr, {"x_ptr": "*fp32"}, {"BLOCK": 4}, "E:missing", "n,",
          r"parameter 'n' has no type in the signature")


def test_unknown_signature_string():
    check(k_missing_constexpr, {"x_ptr": "*float", "n": "i32"}, {"BLOCK": 4}, "E:missing",
          "x_ptr", r"unknown signature type 'float'")


# -- internal errors become located CompilationErrors
@naiad.jit
def k_internal(x_ptr, n):
    y = tl.exp(tl.load(x_ptr))  # E:internal
    tl.store(x_ptr, y)


def test_internal_exception_is_reported_at_the_node(monkeypatch):
    from naiad.language import semantics

    def broken(self, *a, **k):
        raise KeyError("boom")

    monkeypatch.setattr(semantics.Semantic, "op", broken)
    err = check(k_internal, P, {}, "E:internal", "tl.load", r"internal compiler error: "
                                                             r"KeyError: 'boom'")
    assert isinstance(err.internal_error, KeyError)


# -- positions in indented kernels and multi-line statements
def test_kernel_defined_inside_a_function_maps_columns_back():
    @naiad.jit
    def k(x_ptr, n):
        y = n + 1
        tl.store(x_ptr, tl.load(x_ptr) & y)  # E:indented

    check(k, P, {}, "E:indented", "tl.load(x_ptr) &", r"needs integer operands")


@naiad.jit
def k_multiline(x_ptr, n):
    v = tl.load(x_ptr)
    w = tl.where(n > 0,
                 v << 2,  # E:multiline
                 v)
    tl.store(x_ptr, w)


def test_error_on_a_continuation_line():
    check(k_multiline, P, {}, "E:multiline", "v << 2", r"bitwise operator << needs integer")


# -- tl.histogram -----------------------------------------------------------------------------
@naiad.jit
def k_histogram_2d(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] + tl.arange(0, 4)[None, :]).to(tl.int32)
    tl.store(x_ptr + tl.arange(0, 8), tl.histogram(x, 8).to(tl.float32))  # E:hist-2d


@naiad.jit
def k_histogram_float(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 8), tl.histogram(x, 8).to(tl.float32))  # E:hist-float


@naiad.jit
def k_histogram_int_mask(x_ptr, n):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs).to(tl.int32)
    h = tl.histogram(x, 8, mask=offs)  # E:hist-mask
    tl.store(x_ptr + tl.arange(0, 8), h.to(tl.float32))


@naiad.jit
def k_histogram_bins(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16)).to(tl.int32)
    h = tl.histogram(x, 10)  # E:hist-bins
    tl.store(x_ptr + tl.arange(0, 8), h.to(tl.float32))


@pytest.mark.parametrize("kernel, tag, snippet, message", [
    (k_histogram_2d, "E:hist-2d", "tl.histogram", r"histogram only supports 1D input, got \[4, 4\]"),
    (k_histogram_float, "E:hist-float", "tl.histogram",
     r"histogram only supports integer input, but got tensor<16xf32>"),
    (k_histogram_int_mask, "E:hist-mask", "tl.histogram",
     r"Mask must have boolean scalar type, got tensor<16xi32>"),
    (k_histogram_bins, "E:hist-bins", "tl.histogram",
     r"histogram's num_bins must be a power of two .*got 10"),
])
def test_histogram_mistakes(kernel, tag, snippet, message):
    check(kernel, P, {}, tag, snippet, message)
