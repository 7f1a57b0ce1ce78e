"""The parser on its own: types, layout attributes, and errors that point at the right line."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from ir_testutil import kernel
from naiad.errors import IRError
from naiad.ir import (PointerType, ScalarType, TensorType, bf16, f16, f32, i1, i8, i32, i64,
                      print_module, u64)
from naiad.ir import parser as parser_mod
from naiad.ir.parser import parse_attribute, parse_module, parse_type, register_attribute
from naiad.ir.types import SCALAR_NAMES
from naiad.ir.verifier import verify

# -- types --------------------------------------------------------------------------------------

TYPES = [
    ("i1", i1), ("u64", u64), ("bf16", bf16), ("f32", f32),
    ("ptr<f16>", PointerType(f16)),
    ("ptr<f32, 3>", PointerType(f32, 3)),
    ("ptr<ptr<i8>>", PointerType(PointerType(i8))),
    ("tensor<4x8xf32>", TensorType((4, 8), f32)),
    ("tensor<128xi64>", TensorType((128,), i64)),
    ("tensor<4xptr<f16>>", TensorType((4,), PointerType(f16))),
    ("tensor<2x3x5xptr<i32, 3>>", TensorType((2, 3, 5), PointerType(i32, 3))),
]


@pytest.mark.parametrize("text,expected", TYPES, ids=[t for t, _ in TYPES])
def test_parse_type(text, expected):
    t = parse_type(text)
    assert t == expected
    assert str(t) == text


def test_every_scalar_type_parses():
    for name in SCALAR_NAMES:
        assert parse_type(name) == ScalarType(name)


@pytest.mark.parametrize("text,message", [
    ("f33", "unknown type 'f33'"),
    ("tensor<4x8>", "expected 'x' and an element type"),
    ("tensor<4xtensor<2xf32>>", "element type must be a scalar or pointer"),
    ("ptr<f32", "expected '>' to close 'ptr<'"),
    ("ptr<f32, x>", "expected an address space"),
    ("tensor<4xf32, 7>", "expected a layout attribute"),
    ("i32 i32", "unexpected 'i32' after the end"),
])
def test_bad_types(text, message):
    with pytest.raises(IRError, match=re.escape(message)):
        parse_type(text)


# -- layout attributes --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Grid:
    """A stand-in layout: nested lists and a string inside the angle brackets."""

    size: tuple
    order: tuple
    note: str

    def __str__(self):
        size = "[" + ", ".join(f"[{a}, {b}]" for a, b in self.size) + "]"
        return f'#testgrid<{size}, ({", ".join(map(str, self.order))}), "{self.note}">'


def _parse_grid(inner: str) -> _Grid:
    calls.append(inner)
    import ast

    size, order, note = ast.literal_eval(inner)
    if not isinstance(note, str):
        raise ValueError("the note must be a string")
    return _Grid(tuple(tuple(p) for p in size), tuple(order), note)


calls: list[str] = []


@pytest.fixture
def grid_attr(monkeypatch):
    monkeypatch.setitem(parser_mod._ATTRIBUTE_PARSERS, "testgrid", _parse_grid)
    calls.clear()
    return _parse_grid


def test_register_attribute_is_public(monkeypatch):
    monkeypatch.setattr(parser_mod, "_ATTRIBUTE_PARSERS", dict(parser_mod._ATTRIBUTE_PARSERS))
    register_attribute("testonly", lambda inner: inner)
    assert "testonly" in parser_mod.registered_attributes()
    assert parse_attribute("#testonly<a<b>[c]>") == "a<b>[c]"
    assert parse_attribute("#testonly<{k = [1, <2>], s = \"}>\"}>") == '{k = [1, <2>], s = "}>"}'
    with pytest.raises(ValueError):
        register_attribute("not valid", lambda s: s)


def test_layout_in_tensor_type_and_attribute_round_trips(grid_attr):
    lay = '#testgrid<[[1, 4], [8, 4]], (1, 0), "a > b">'
    text = kernel(f"%x: tensor<32x16xf32, {lay}>", f"""
        %y = neg %x {{layout = {lay}}} : tensor<32x16xf32, {lay}>
        return
    """)
    m = parse_module(text)
    verify(m)
    x = m.functions["k"].args[0]
    assert x.type.layout == _Grid(((1, 4), (8, 4)), (1, 0), "a > b")
    # the parser handed over exactly the text between '<' and its matching '>'
    assert calls[0] == '[[1, 4], [8, 4]], (1, 0), "a > b"'
    assert m.functions["k"].body.block.ops[0].attrs["layout"] == x.type.layout
    assert print_module(m) == text
    assert parse_type(f"tensor<32x16xf32, {lay}>") == x.type


def test_layouts_take_part_in_type_equality(grid_attr):
    """Operands of one elementwise op with different layouts are a verifier error."""
    a = '#testgrid<[[1, 1]], (0, 1), "a">'
    b = '#testgrid<[[1, 1]], (0, 1), "b">'
    text = kernel(f"%x: tensor<4xf32, {a}>, %y: tensor<4xf32, {b}>", f"""
        %z = add %x, %y : tensor<4xf32, {a}>
        return
    """)
    with pytest.raises(IRError, match="operands must all have one type"):
        verify(parse_module(text))


@pytest.mark.parametrize("text,message", [
    ("#nosuch<1>", "unknown attribute #nosuch"),
    ("#testgrid<[[1, 2], (0, 1), \"x\">", "'>' does not match '['"),
    ("#testgrid<[[1, 2]], (0, 1)", "unclosed '<'"),
    ("#testgrid<[[1, 2]], (0, 1), 5>", "bad #testgrid attribute: the note must be a string"),
    ("#testgrid<1, 2>", "bad #testgrid attribute"),
])
def test_bad_layout_attributes(grid_attr, text, message):
    with pytest.raises(IRError, match=re.escape(message)):
        parse_attribute(text)


# -- errors point at the line -------------------------------------------------------------------

BODY_ERRORS = [
    # (name, body of @k(%x: f32), message fragment, line in the module text)
    ("unknown type", """
        %a = add %x, %x : f33
     """, "unknown type 'f33'", 3),
    ("undefined value", """
        %a = add %x, %x : f32
        %b = add %a, %nope : f32
     """, "use of undefined value %nope", 4),
    ("forward reference", """
        %a = add %x, %b : f32
        %b = add %x, %x : f32
     """, "use of undefined value %b", 3),
    ("value from a closed region", """
        %c = constant {value = true} : i1
        %r = if %c : f32 {
          %inner = add %x, %x : f32
          yield %inner
        } {
          yield %x
        }
        %bad = add %inner, %x : f32
     """, "%inner (defined on line 5) is not visible here", 10),
    ("sibling region value", """
        %c = constant {value = true} : i1
        %r = if %c : f32 {
          %inner = add %x, %x : f32
          yield %inner
        } {
          yield %inner
        }
     """, "is not visible here", 8),
    ("op result used inside its own region", """
        %c = constant {value = true} : i1
        %r = if %c : f32 {
          yield %r
        } {
          yield %x
        }
     """, "use of undefined value %r", 5),
    ("redefinition", """
        %a = add %x, %x : f32
        %a = mul %x, %x : f32
     """, "redefinition of %a (first defined on line 3)", 4),
    ("redefinition of a block argument", """
        %c = constant {value = true} : i1
        %lb = constant {value = 0} : i32
        %r = for %lb, %lb, %lb, %x : f32 {
        ^(%c: i32, %a: f32):
          yield %a
        }
     """, "redefinition of %c", 6),
    ("more results than types", """
        %a, %b = add %x, %x : f32
     """, "names 2 result(s) but gives 1 result type(s)", 3),
    ("results without types", """
        %a = add %x, %x
     """, "names 1 result(s) but gives 0", 3),
    ("types without results", """
        add %x, %x : f32
     """, "lists result types but names no results", 3),
    ("two ops on one line", """
        %a = add %x, %x : f32 %b = add %x, %x : f32
     """, "one op per line", 3),
    ("operand list broken", """
        %a = add %x %x : f32
     """, "operands are separated by ','", 3),
    ("bad attribute value", """
        %a = constant {value = forty} : f32
     """, "unexpected word 'forty'", 3),
    ("attribute without '='", """
        %a = program_id {axis 0} : i32
     """, "expected '=' after attribute name 'axis'", 3),
    ("duplicate attribute", """
        %a = program_id {axis = 0, axis = 1} : i32
     """, "attribute 'axis' given twice", 3),
    ("unterminated list", """
        %a = hint %x {l = [1, 2} : f32
     """, "expected ']' or ','", 3),
    ("unterminated string", """
        %a = hint %x {s = "abc} : f32
     """, "unterminated string", 3),
    ("stray character", """
        %a = add %x, %x : f32 $
     """, "unexpected character '$'", 3),
    ("printed undefined operand", """
        %a = add %x, %<undefined> : f32
     """, "expected a value name after '%'", 3),
    ("missing op name", """
        %a = %x
     """, "expected an op name", 3),
    ("bad block header", """
        %lb = constant {value = 0} : i32
        for %lb, %lb, %lb {
        ^(%i i32):
          yield
        }
     """, "expected ':' after the block argument", 5),
    ("region brace followed by text", """
        %c = constant {value = true} : i1
        if %c {a = 1} { yield
        } {
          yield
        }
     """, "a region's '{' must end its line", 4),
    ("missing closing brace", """
        %c = constant {value = true} : i1
        if %c {
          yield
        } {
          yield
     """, "missing '}'", 10),
]


@pytest.mark.parametrize("name,body,message,line", BODY_ERRORS, ids=[c[0] for c in BODY_ERRORS])
def test_parse_errors_name_the_line(name, body, message, line):
    text = kernel("%x: f32", body)
    with pytest.raises(IRError, match=re.escape(message)) as info:
        parse_module(text)
    err = info.value
    assert err.lineno == line, str(err)
    assert f"<ir>:{line}:" in str(err)
    # the message quotes the offending line (when the error is not at the end of the input)
    if line <= len(text.splitlines()):
        assert text.splitlines()[line - 1].strip() in str(err)


MODULE_ERRORS = [
    ("function defined twice", "module {\nfunc @f() {\n  return\n}\nfunc @f() {\n  return\n}\n}\n",
     "function @f defined twice", 5),
    ("text after the module", "module {\n}\nfunc @g() {\n}\n", "after the end", 3),
    ("not a function", "module {\n  %a = constant {value = 1} : i32\n}\n", "expected 'func' or '}'",
     2),
    ("missing function name", "module {\nfunc f() {\n}\n}\n", "expected a function name", 2),
    ("bad argument", "module {\nfunc @f(%a i32) {\n}\n}\n", "expected ':' after the argument", 2),
    ("bad result list", "module {\nfunc @f() -> (i32 {\n}\n}\n", "expected ')' or ','", 2),
    ("bad module attributes", "module attributes {num_warps = } {\n}\n",
     "expected an attribute value", 1),
    ("unknown layout in a type", "module {\nfunc @f(%a: tensor<4xf32, #nolayout<1>>) {\n}\n}\n",
     "unknown attribute #nolayout", 2),
]


@pytest.mark.parametrize("name,text,message,line", MODULE_ERRORS,
                         ids=[c[0] for c in MODULE_ERRORS])
def test_module_level_parse_errors(name, text, message, line):
    with pytest.raises(IRError, match=re.escape(message)) as info:
        parse_module(text)
    assert info.value.lineno == line, str(info.value)


def test_error_message_shape():
    """`name:line:col: message`, the stripped source line, and a caret under the column."""
    text = "module {\nfunc @f(%x: f32) {\n    %a = add %x, %y : f32\n  return\n}\n}\n"
    with pytest.raises(IRError) as info:
        parse_module(text, source_name="t.ir")
    lines = str(info.value).splitlines()
    assert lines[0] == "t.ir:3:18: use of undefined value %y (values must be defined before they "\
                       "are used)"
    assert lines[1] == "    %a = add %x, %y : f32"
    assert lines[2] == "    " + " " * lines[1][4:].index("%y") + "^"
    assert info.value.col == 18


def test_bare_attribute_and_unparenthesised_result(monkeypatch):
    monkeypatch.setitem(parser_mod._ATTRIBUTE_PARSERS, "flag", lambda inner: ("flag", inner))
    m = parse_module("func @f() -> i32 attributes {mode = #flag} {\n  %a = constant {value = 1}"
                     " : i32\n  return %a\n}\n")
    fn = m.functions["f"]
    assert fn.result_types == [i32] and fn.attrs == {"mode": ("flag", "")}


@pytest.mark.parametrize("text,message", [
    ("#", "expected an attribute mnemonic after '#'"),
    ('#testgrid<[[1, 1]], (0, 1), "unterminated>', "unterminated string in #testgrid"),
])
def test_bad_attribute_text(grid_attr, text, message):
    with pytest.raises(IRError, match=re.escape(message)):
        parse_attribute(text)


def test_negative_address_space():
    with pytest.raises(IRError, match="address space must be >= 0"):
        parse_type("ptr<f32, -1>")


def test_register_attribute_needs_a_callable():
    with pytest.raises(TypeError):
        register_attribute("whatever", 3)


HOSTILE = [
    ("huge integer", "func @f() {\n  %c = constant {value = " + "9" * 5000 + "} : i32\n"
     "  return\n}\n", "integer literal 99999999999999999999... (5000 digits) does not fit", 2),
    ("integer over 64 bits", "func @f() {\n  %c = constant {value = -18446744073709551616} : "
     "i64\n  return\n}\n", "integer literal -18446744073709551616 does not fit in 64 bits", 2),
    ("huge tensor dimension", "func @f(%a: tensor<" + "7" * 400 + "xf32>) {\n  return\n}\n",
     "does not fit in 64 bits", 1),
    ("deeply nested list", "func @f() {\n  %c = constant {value = " + "[" * 20000 + "]" * 20000
     + "} : i32\n  return\n}\n", "nesting deeper than 100 levels", 2),
    ("deeply nested pointer", "func @f(%a: " + "ptr<" * 20000 + "f32" + ">" * 20000
     + ") {\n  return\n}\n", "nesting deeper than 100 levels", 1),
    ("deeply nested regions", "func @f() {\n" + "%c = scf {\n" * 5000 + "}\n" * 5000
     + "  return\n}\n", "nesting deeper than 100 levels", 102),
]


@pytest.mark.parametrize("name,text,message,line", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_text_gives_located_ir_errors(name, text, message, line):
    """Never ValueError (Python's 4300-digit limit) or RecursionError: an IRError with a place."""
    with pytest.raises(IRError, match=re.escape(message)) as info:
        parse_module(text)
    assert info.value.lineno == line, str(info.value)[:200]


def test_largest_64_bit_integers_still_parse():
    for value in ("18446744073709551615", "-9223372036854775808"):
        assert parse_attribute(value) == int(value)
