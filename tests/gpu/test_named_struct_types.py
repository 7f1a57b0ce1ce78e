"""``naiad.backend.struct_type``: wide structs (inline-asm results such as wgmma's accumulator
registers) are named types, printed once per module instead of at every use."""
from __future__ import annotations

import pytest
from llvmlite import ir

from naiad.backend import initialize_llvm, struct_type
from naiad.gpu.llvm import NAMED_STRUCT_MIN

F32, I32 = ir.FloatType(), ir.IntType(32)


def _module():
    return ir.Module(name="m", context=ir.Context())


def test_narrow_structs_stay_literal_and_wide_ones_are_named_by_their_members():
    m = _module()
    assert isinstance(struct_type(m, [I32] * (NAMED_STRUCT_MIN - 1)), ir.LiteralStructType)
    acc = struct_type(m, [F32] * 64)
    assert isinstance(acc, ir.IdentifiedStructType) and acc.name == "naiad.f32x64"
    assert list(acc.elements) == [F32] * 64
    assert struct_type(m, [F32] * 64) is acc             # equal members: the same type
    mixed = struct_type(m, [F32] * 8 + [I32] * 4 + [ir.VectorType(ir.HalfType(), 2)] * 2)
    assert mixed.name == "naiad.f32x8.i32x4.v2f16x2"
    assert struct_type(m, [F32] * 65).name == "naiad.f32x65"


def test_a_name_taken_by_other_members_is_refused():
    m = _module()
    m.context.get_identified_type("naiad.f32x9").set_body(*([I32] * 9))
    with pytest.raises(ValueError, match="naiad.f32x9"):
        struct_type(m, [F32] * 9)


def test_named_struct_is_printed_once_and_llvm_reads_the_same_values():
    """The type is declared once in the module text, each use prints its name; LLVM parses and
    verifies it, and the module's own context keeps it out of other modules."""
    m = _module()
    fn = ir.Function(m, ir.FunctionType(F32, [F32]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    ty = struct_type(m, [F32] * 16)
    agg = ir.Constant(ty, None)
    for i in range(16):
        agg = b.insert_value(agg, b.fadd(fn.args[0], ir.Constant(F32, float(i))), i)
    b.ret(b.fadd(b.extract_value(agg, 3), b.extract_value(agg, 15)))
    text = str(m)
    assert text.count('%"naiad.f32x16" = type {') == 1
    assert "{float, float" not in text.split("define", 1)[1]
    assert "naiad.f32x16" not in str(_module())
    llvm = initialize_llvm()
    parsed = llvm.parse_assembly(text)
    parsed.verify()
