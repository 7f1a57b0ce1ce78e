"""Parser of the tile IR's textual form: reads back exactly what :mod:`naiad.ir.printer` writes.

A hand-written tokenizer feeds a recursive-descent parser. The grammar, as settled with the
printer::

    module     := 'module' ['attributes' attr-dict] '{' function* '}'      (or bare functions)
    function   := 'func' '@'name '(' [arg (',' arg)*] ')' ['->' ('(' types ')' | type)]
                  ['attributes' attr-dict] '{' op* '}'
    arg        := '%'name ':' type [attr-dict]
    op         := [values '='] opname [values] [attr-dict] [':' types] [loc] region*
    loc        := 'loc' '(' "file" ':' line ':' col ')'          the kernel-source location
    region     := '{' ['^' '(' [block-arg (',' block-arg)*] ')' ':'] op* '}'
    attr-dict  := '{' key '=' attr (',' key '=' attr)* '}'      key: identifier or "string"
    attr       := int | float | 'inf' | '-inf' | 'nan' | 'true' | 'false' | 'none' | "string"
                | '[' [attr (',' attr)*] ']' | '!'type | '#'mnemonic['<' ... '>']
    type       := i1 | i8..i64 | u8..u64 | f16 | bf16 | f32 | f64 | 'ptr<' type [',' int] '>'
                | 'tensor<' (int 'x')* type [',' layout-attr] '>'

Ops are line-oriented, as printed: an op's header (results up to the ``{`` of its first region)
sits on one line, a ``{`` that ends the line opens a region (one followed by more text on its
line is the attribute dict), a region's closing ``}`` and the next region's ``{`` share a line,
and the next op starts on a new line. ``//`` starts a comment. Values must be defined before they
are used (SSA dominance): a region sees its own block arguments and every value defined before
its op in an enclosing block; values defined inside a region are invisible after it closes.
Names are unique per function; numeric names (``%0``) leave no name hint, others become the
value's ``name_hint``. Lists parse as tuples (immutable, hashable attribute values).

Layout attributes ``#mnemonic<...>`` are parsed by functions registered with
:func:`register_attribute`; they receive the text between ``<`` and the matching ``>``
(brackets ``<> [] () {}`` nest and double-quoted strings are skipped).
"""
from __future__ import annotations

import bisect
import json
import re
from typing import Any, Callable

from ..errors import IRError
from .core import Block, Function, Module, Operation, Region, Value
from .types import SCALAR_NAMES, PointerType, ScalarType, TensorType, Type

__all__ = ["parse_module", "parse_type", "parse_attribute", "register_attribute",
           "registered_attributes"]

# -- layout attribute registry -------------------------------------------------------------------

_ATTRIBUTE_PARSERS: dict[str, Callable[[str], Any]] = {}


def register_attribute(mnemonic: str, fn: Callable[[str], Any]) -> None:
    """Make ``#mnemonic<...>`` parse by calling ``fn(inner_text)``.

    ``fn`` gets the text between ``<`` and its matching ``>`` (brackets ``<> [] () {}`` nest,
    quoted strings are skipped; empty for a bare ``#mnemonic``)
    and returns the attribute object, whose ``str()`` must print it back. Registering a mnemonic
    again replaces its parser (plugins may be reloaded). ``fn`` reports bad text by raising; the
    parser turns the exception into an :class:`IRError` at the attribute's position.
    """
    if not isinstance(mnemonic, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", mnemonic):
        raise ValueError(f"attribute mnemonic must be an identifier, got {mnemonic!r}")
    if not callable(fn):
        raise TypeError(f"attribute parser for #{mnemonic} must be callable, got {fn!r}")
    _ATTRIBUTE_PARSERS[mnemonic] = fn


def registered_attributes() -> tuple[str, ...]:
    """Mnemonics that currently have a parser."""
    return tuple(sorted(_ATTRIBUTE_PARSERS))


# -- tokenizer --------------------------------------------------------------------------------

class _Tok:
    __slots__ = ("kind", "value", "pos", "end")

    def __init__(self, kind: str, value: Any, pos: int, end: int):
        self.kind, self.value, self.pos, self.end = kind, value, pos, end

    def is_(self, kind: str, value: Any = None) -> bool:
        return self.kind == kind and (value is None or self.value == value)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.value!r}@{self.pos}>"


_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"
_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<value>%[A-Za-z0-9_.$]+)
  | (?P<symbol>@[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<dims>(?:\d+x)+)
  | (?P<float>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+))
  | (?P<int>-?\d+)
  | (?P<ident>""" + _IDENT + r""")
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<arrow>->)
  | (?P<punct>[{}()\[\]<>,:=^!\-])
""", re.VERBOSE)

_ATTR_HEAD_RE = re.compile(r"#(" + _IDENT + r")")
_OPENERS = {"<": ">", "[": "]", "(": ")", "{": "}"}
_CLOSERS = {">", "]", ")", "}"}
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')


class _Source:
    """The text with line bookkeeping, used to place every diagnostic."""

    def __init__(self, text: str, name: str):
        self.text, self.name = text, name
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, pos) - 1
        return line + 1, pos - self.line_starts[line] + 1

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.line_starts, pos)

    def error(self, pos: int, message: str) -> IRError:
        line, col = self.line_col(pos)
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        src = self.text[start:] if end < 0 else self.text[start:end]
        stripped = src.lstrip()
        caret = " " * max(col - 1 - (len(src) - len(stripped)), 0) + "^"
        err = IRError(f"{self.name}:{line}:{col}: {message}\n    {stripped.rstrip()}\n    {caret}")
        err.lineno, err.col, err.raw_message = line, col, message
        return err


def _tokenize(src: _Source) -> list[_Tok]:
    text, pos, toks = src.text, 0, []
    n = len(text)
    while pos < n:
        if text[pos] == "#":
            toks.append(_scan_attribute(src, pos))
            pos = toks[-1].end
            continue
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            if text[pos] == "%":
                raise src.error(pos, "expected a value name after '%'")
            if text[pos] == '"':
                raise src.error(pos, "unterminated string")
            raise src.error(pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "ws":
            raw = m.group()
            if kind == "value" or kind == "symbol":
                val: Any = raw[1:]
            elif kind == "dims":
                val = tuple(_bounded_int(src, pos, d) for d in raw[:-1].split("x"))
            elif kind == "int":
                val = _bounded_int(src, pos, raw)
            elif kind == "float":
                val = float(raw)
            elif kind == "string":
                try:
                    val = json.loads(raw)
                except ValueError:
                    raise src.error(pos, f"bad string literal {raw}") from None
            else:
                val = raw
            toks.append(_Tok(kind, val, pos, m.end()))
        pos = m.end()
    toks.append(_Tok("eof", None, n, n))
    return toks


#: integers in IR text are 64-bit values (signed or unsigned); longer literals are errors, not
#: Python's ValueError for more than 4300 digits
_INT_LIMIT = 1 << 64
#: deepest nesting of regions, types or attribute lists the parser accepts (each level costs a
#: few Python frames; deeper text is an IRError, never a RecursionError)
MAX_NESTING = 100


def _bounded_int(src: _Source, pos: int, text: str) -> int:
    digits = text.lstrip("-")
    value = int(text) if len(digits) <= 20 else None
    if value is None or not -_INT_LIMIT < value < _INT_LIMIT:
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(digits)} digits)"
        raise src.error(pos, f"integer literal {shown} does not fit in 64 bits")
    return value


def _scan_attribute(src: _Source, pos: int) -> _Tok:
    """``#mnemonic<...>``: find the matching ``>``, nesting <> [] () {} and skipping strings."""
    text = src.text
    m = _ATTR_HEAD_RE.match(text, pos)
    if m is None:
        raise src.error(pos, "expected an attribute mnemonic after '#'")
    mnemonic, i = m.group(1), m.end()
    if i >= len(text) or text[i] != "<":
        return _Tok("attr", (mnemonic, ""), pos, i)
    stack, j = [(">", i)], i + 1
    while j < len(text):
        c = text[j]
        if c == '"':
            s = _STRING_RE.match(text, j)
            if s is None:
                raise src.error(j, f"unterminated string in #{mnemonic}<...>")
            j = s.end()
            continue
        if c in _OPENERS:
            stack.append((_OPENERS[c], j))
        elif c in _CLOSERS:
            want, opened = stack.pop()
            if c != want:
                raise src.error(j, f"'{c}' does not match '{text[opened]}' in #{mnemonic}<...>")
            if not stack:
                return _Tok("attr", (mnemonic, text[i + 1:j]), pos, j + 1)
        j += 1
    raise src.error(stack[-1][1], f"unclosed '{text[stack[-1][1]]}' in #{mnemonic}<...>")


# -- parser -----------------------------------------------------------------------------------

_FLOAT_WORDS = {"inf": float("inf"), "nan": float("nan")}


class _Scope:
    """Values visible at the current point: a stack of per-region name tables."""

    def __init__(self):
        self.frames: list[dict[str, Value]] = [{}]
        self.defined: dict[str, int] = {}  # every name defined in the function -> its position

    def push(self) -> None:
        self.frames.append({})

    def pop(self) -> None:
        self.frames.pop()

    def lookup(self, name: str) -> Value | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None


class _Nesting:
    __slots__ = ("parser", "tok")

    def __init__(self, parser: "_Parser", tok: _Tok):
        self.parser, self.tok = parser, tok

    def __enter__(self):
        p = self.parser
        p.depth += 1
        if p.depth > MAX_NESTING:
            raise p.error(self.tok, f"nesting deeper than {MAX_NESTING} levels (regions, "
                                    f"types or attribute lists)")

    def __exit__(self, *exc):
        self.parser.depth -= 1


class _Parser:
    def __init__(self, text: str, source_name: str):
        self.src = _Source(text, source_name)
        self.toks = _tokenize(self.src)
        self.i = 0
        self.scope = _Scope()
        self.depth = 0

    def nested(self, tok: _Tok) -> "_Nesting":
        """``with self.nested(tok):`` around a recursive step; too deep is an IRError at tok."""
        return _Nesting(self, tok)

    # -- token helpers --------------------------------------------------------------------
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def line(self, tok: _Tok) -> int:
        return self.src.line_of(tok.pos)

    def error(self, tok: _Tok, message: str) -> IRError:
        return self.src.error(tok.pos, message)

    @staticmethod
    def describe(tok: _Tok) -> str:
        if tok.kind == "eof":
            return "end of input"
        text = {"value": "%", "symbol": "@"}.get(tok.kind, "")
        if tok.kind == "attr":
            return f"attribute #{tok.value[0]}"
        if tok.kind == "dims":
            return "'" + "".join(f"{d}x" for d in tok.value) + "'"
        if tok.kind == "string":
            return json.dumps(tok.value)
        return f"'{text}{tok.value}'"

    def at(self, kind: str, value: Any = None) -> bool:
        return self.peek().is_(kind, value)

    def at_punct(self, p: str) -> bool:
        return self.peek().is_("punct", p)

    def accept_punct(self, p: str) -> bool:
        if self.at_punct(p):
            self.i += 1
            return True
        return False

    def expect_punct(self, p: str, what: str = "") -> _Tok:
        tok = self.peek()
        if not tok.is_("punct", p):
            raise self.error(tok, f"expected '{p}'{what}, found {self.describe(tok)}")
        return self.next()

    def expect(self, kind: str, what: str) -> _Tok:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(tok, f"expected {what}, found {self.describe(tok)}")
        return self.next()

    def expect_keyword(self, word: str) -> _Tok:
        tok = self.peek()
        if not tok.is_("ident", word):
            raise self.error(tok, f"expected '{word}', found {self.describe(tok)}")
        return self.next()

    def expect_eof(self) -> None:
        tok = self.peek()
        if tok.kind != "eof":
            raise self.error(tok, f"unexpected {self.describe(tok)} after the end")

    # -- types ----------------------------------------------------------------------------
    def parse_type(self) -> Type:
        tok = self.peek()
        if tok.kind != "ident":
            raise self.error(tok, f"expected a type, found {self.describe(tok)}")
        self.next()
        name = tok.value
        if name in SCALAR_NAMES:
            return ScalarType(name)
        if name == "ptr":
            self.expect_punct("<", " after 'ptr'")
            with self.nested(tok):
                pointee = self.parse_type()
            space = 1
            if self.accept_punct(","):
                space = self.expect("int", "an address space (integer)").value
                if space < 0:
                    raise self.error(self.toks[self.i - 1], "address space must be >= 0")
            self.expect_punct(">", " to close 'ptr<'")
            return PointerType(pointee, space)
        if name == "tensor":
            self.expect_punct("<", " after 'tensor'")
            shape: tuple[int, ...] = ()
            if self.at("dims"):
                shape = self.next().value
            elem_tok = self.peek()
            if elem_tok.kind == "int":
                raise self.error(elem_tok, "expected 'x' and an element type after the tensor "
                                           "shape (e.g. tensor<4x8xf32>)")
            with self.nested(tok):
                element = self.parse_type()
            if isinstance(element, TensorType):
                raise self.error(elem_tok, "a tensor's element type must be a scalar or pointer")
            layout = None
            if self.accept_punct(","):
                layout = self.parse_attribute_token("a layout attribute (#name<...>)")
            self.expect_punct(">", " to close 'tensor<'")
            return TensorType(shape, element, layout)
        raise self.error(tok, f"unknown type '{name}'")

    def parse_type_list(self) -> list[Type]:
        types = [self.parse_type()]
        while self.accept_punct(","):
            types.append(self.parse_type())
        return types

    # -- attributes -----------------------------------------------------------------------
    def parse_attribute_token(self, what: str) -> Any:
        tok = self.peek()
        if tok.kind != "attr":
            raise self.error(tok, f"expected {what}, found {self.describe(tok)}")
        self.next()
        mnemonic, inner = tok.value
        fn = _ATTRIBUTE_PARSERS.get(mnemonic)
        if fn is None:
            known = ", ".join(f"#{m}" for m in registered_attributes()) or "none"
            raise self.error(tok, f"unknown attribute #{mnemonic} (registered: {known})")
        try:
            return fn(inner)
        except IRError as e:
            raise self.error(tok, f"bad #{mnemonic} attribute: {getattr(e, 'raw_message', e)}") \
                from None
        except Exception as e:  # the plugin's parser reports bad text by raising
            raise self.error(tok, f"bad #{mnemonic} attribute: {e}") from None

    def parse_attr_value(self) -> Any:
        tok = self.peek()
        kind, val = tok.kind, tok.value
        if kind in ("int", "float", "string"):
            self.next()
            return val
        if kind == "ident":
            if val in ("true", "false"):
                self.next()
                return val == "true"
            if val == "none":
                self.next()
                return None
            if val in _FLOAT_WORDS:
                self.next()
                return _FLOAT_WORDS[val]
            raise self.error(tok, f"unexpected word '{val}' as an attribute value (strings "
                                  "are quoted, types start with '!')")
        if kind == "punct":
            if val == "-" and self.peek(1).is_("ident", "inf"):
                self.i += 2
                return float("-inf")
            if val == "[":
                self.next()
                items = []
                with self.nested(tok):
                    if not self.accept_punct("]"):
                        items.append(self.parse_attr_value())
                        while self.accept_punct(","):
                            items.append(self.parse_attr_value())
                        self.expect_punct("]", " or ',' in the list")
                return tuple(items)
            if val == "!":
                self.next()
                return self.parse_type()
        if kind == "attr":
            return self.parse_attribute_token("an attribute")
        raise self.error(tok, f"expected an attribute value, found {self.describe(tok)}")

    def parse_attr_dict(self) -> dict[str, Any]:
        self.expect_punct("{")
        attrs: dict[str, Any] = {}
        if self.accept_punct("}"):
            return attrs
        while True:
            key_tok = self.peek()
            if key_tok.kind not in ("ident", "string"):
                raise self.error(key_tok, f"expected an attribute name, found "
                                          f"{self.describe(key_tok)}")
            self.next()
            if key_tok.value in attrs:
                raise self.error(key_tok, f"attribute '{key_tok.value}' given twice")
            self.expect_punct("=", f" after attribute name '{key_tok.value}'")
            attrs[key_tok.value] = self.parse_attr_value()
            if self.accept_punct("}"):
                return attrs
            self.expect_punct(",", " or '}' in the attribute dictionary")

    def at_attr_dict(self, line: int) -> bool:
        """A ``{`` on the op's line opens an attribute dict when more follows it on that line;
        a ``{`` that ends its line opens a region."""
        brace, after = self.peek(), self.peek(1)
        return (brace.is_("punct", "{") and self.line(brace) == line
                and after.kind != "eof" and self.line(after) == line)

    # -- values ---------------------------------------------------------------------------
    def define(self, tok: _Tok, value: Value) -> None:
        name = tok.value
        if name in self.scope.defined:
            line, _ = self.src.line_col(self.scope.defined[name])
            raise self.error(tok, f"redefinition of %{name} (first defined on line {line})")
        self.scope.defined[name] = tok.pos
        self.scope.frames[-1][name] = value
        value.name_hint = None if name.isdigit() else name

    def use(self, tok: _Tok) -> Value:
        v = self.scope.lookup(tok.value)
        if v is not None:
            return v
        if tok.value in self.scope.defined:
            line, _ = self.src.line_col(self.scope.defined[tok.value])
            raise self.error(tok, f"%{tok.value} (defined on line {line}) is not visible here: "
                                  "it is defined inside a region that does not enclose this use")
        raise self.error(tok, f"use of undefined value %{tok.value} "
                              "(values must be defined before they are used)")

    def parse_value_names(self) -> list[_Tok]:
        names = [self.expect("value", "a value name (%name)")]
        while self.accept_punct(","):
            names.append(self.expect("value", "a value name (%name)"))
        return names

    # -- ops, regions, functions ----------------------------------------------------------
    def parse_op(self) -> Operation:
        first = self.peek()
        result_toks: list[_Tok] = []
        if first.kind == "value":
            result_toks = self.parse_value_names()
            self.expect_punct("=", " after the op's results")
        name_tok = self.peek()
        if name_tok.kind != "ident":
            raise self.error(name_tok, f"expected an op name, found {self.describe(name_tok)}")
        self.next()
        line = self.line(name_tok)
        operands: list[Value] = []
        if self.at("value") and self.line(self.peek()) == line:
            operands = [self.use(t) for t in self.parse_value_names()]
        attrs: dict[str, Any] = {}
        if self.at_attr_dict(line):
            attrs = self.parse_attr_dict()
        result_types: list[Type] = []
        if self.at_punct(":") and self.line(self.peek()) == line:
            colon = self.next()
            result_types = self.parse_type_list()
            if not result_toks:
                raise self.error(colon, f"'{name_tok.value}' lists result types but names no "
                                        "results (write '%r = ...')")
        loc = None
        if self.at("ident", "loc") and self.line(self.peek()) == line \
                and self.peek(1).is_("punct", "("):
            loc = self.parse_loc()
        regions: list[Region] = []
        while self.at_punct("{") and self.line(self.peek()) == line:
            if self.at_attr_dict(line):
                raise self.error(self.peek(1), "a region's '{' must end its line (or the op has "
                                               "a second attribute dictionary)")
            region, close = self.parse_region()
            regions.append(region)
            line = self.line(close)
        nxt = self.peek()
        if nxt.kind != "eof" and self.line(nxt) == line:
            raise self.error(nxt, f"unexpected {self.describe(nxt)} after the op "
                                  f"'{name_tok.value}' (operands are separated by ',' and "
                                  "there is one op per line)")
        if len(result_types) != len(result_toks):
            raise self.error(name_tok, f"'{name_tok.value}' names {len(result_toks)} result(s) "
                                       f"but gives {len(result_types)} result type(s)")
        try:
            op = Operation(name_tok.value, operands, result_types, attrs, regions, loc=loc)
        except (TypeError, ValueError) as e:
            raise self.error(name_tok, str(e)) from None
        for tok, value in zip(result_toks, op.results):
            self.define(tok, value)
        return op

    def parse_loc(self) -> tuple[str, int, int]:
        """``loc("file":line:col)`` -> ``(file, line, col - 1)`` (0-based column, as the
        frontend's locations)."""
        self.expect_keyword("loc")
        self.expect_punct("(", " after 'loc'")
        filename = self.expect("string", "a file name in quotes").value
        self.expect_punct(":", " after the file name")
        line = self.expect("int", "a line number").value
        self.expect_punct(":", " after the line number")
        col_tok = self.expect("int", "a column number")
        self.expect_punct(")", " to close 'loc('")
        if line < 1 or col_tok.value < 1:
            raise self.error(col_tok, "line and column numbers start at 1")
        return (filename, line, col_tok.value - 1)

    def parse_region(self) -> tuple[Region, _Tok]:
        with self.nested(self.peek()):
            return self._parse_region()

    def _parse_region(self) -> tuple[Region, _Tok]:
        self.expect_punct("{")
        self.scope.push()
        try:
            arg_toks: list[_Tok] = []
            arg_types: list[Type] = []
            if self.accept_punct("^"):
                self.expect_punct("(", " after '^'")
                if not self.accept_punct(")"):
                    while True:
                        arg_toks.append(self.expect("value", "a block argument (%name)"))
                        self.expect_punct(":", " after the block argument")
                        arg_types.append(self.parse_type())
                        if self.accept_punct(")"):
                            break
                        self.expect_punct(",", " or ')' in the block arguments")
                self.expect_punct(":", " after the block arguments")
            block = Block(arg_types)
            for tok, arg in zip(arg_toks, block.args):
                self.define(tok, arg)
            self.parse_ops_into(block)
            close = self.expect_punct("}", " to close the region")
        finally:
            self.scope.pop()
        return Region(block), close

    def parse_ops_into(self, block: Block) -> None:
        while not self.at_punct("}"):
            if self.at("eof"):
                raise self.error(self.peek(), "unexpected end of input: missing '}'")
            block.append(self.parse_op())

    def parse_function(self) -> Function:
        self.expect_keyword("func")
        name = self.expect("symbol", "a function name (@name)").value
        self.scope = _Scope()
        self.expect_punct("(", " after the function name")
        arg_toks: list[_Tok] = []
        arg_types: list[Type] = []
        arg_attrs: list[dict[str, Any]] = []
        if not self.accept_punct(")"):
            while True:
                arg_toks.append(self.expect("value", "an argument (%name)"))
                self.expect_punct(":", " after the argument name")
                arg_types.append(self.parse_type())
                arg_attrs.append(self.parse_attr_dict() if self.at_punct("{") else {})
                if self.accept_punct(")"):
                    break
                self.expect_punct(",", " or ')' in the argument list")
        result_types: list[Type] = []
        if self.at("arrow"):
            self.next()
            if self.accept_punct("("):
                if not self.accept_punct(")"):
                    result_types = self.parse_type_list()
                    self.expect_punct(")", " or ',' in the result types")
            else:
                result_types = [self.parse_type()]
        attrs: dict[str, Any] = {}
        if self.at("ident", "attributes"):
            self.next()
            attrs = self.parse_attr_dict()
        self.expect_punct("{", " to open the function body")
        fn = Function(name, arg_types, result_types, attrs=attrs)
        fn.arg_attrs = arg_attrs
        for tok, arg in zip(arg_toks, fn.args):
            self.define(tok, arg)
        self.parse_ops_into(fn.body.block)
        self.expect_punct("}")
        return fn

    def parse_functions_into(self, module: Module, end: str | None) -> None:
        while not (self.at_punct(end) if end else self.at("eof")):
            tok = self.peek()
            if end and tok.kind == "eof":
                raise self.error(tok, "unexpected end of input: missing '}'")
            if not tok.is_("ident", "func"):
                want = "'func' or '}'" if end else "'func'"
                raise self.error(tok, f"expected {want}, found {self.describe(tok)}")
            fn = self.parse_function()
            if fn.name in module.functions:
                raise self.error(tok, f"function @{fn.name} defined twice")
            module.add(fn)

    def parse_module(self) -> Module:
        if self.at("ident", "module"):
            self.next()
            attrs = {}
            if self.at("ident", "attributes"):
                self.next()
                attrs = self.parse_attr_dict()
            module = Module(attrs)
            self.expect_punct("{", " to open the module")
            self.parse_functions_into(module, "}")
            self.expect_punct("}")
        else:
            module = Module()
            self.parse_functions_into(module, None)
        self.expect_eof()
        return module


# -- public entry points ------------------------------------------------------------------------

def parse_module(text: str, source_name: str = "<ir>") -> Module:
    """Parse a module (``module [attributes {...}] { func ... }``, or bare ``func``s).

    Raises :class:`IRError` naming ``source_name:line:col`` and quoting the offending line.
    The result is not verified; call :func:`naiad.ir.verifier.verify` for that.
    """
    parser = _Parser(text, source_name)
    try:
        return parser.parse_module()
    except RecursionError:   # called from deep in the stack already: still a located error
        raise parser.error(parser.peek(), "the IR nests too deeply to parse") from None


def parse_type(text: str) -> Type:
    """Parse one type: ``i32``, ``ptr<f16>``, ``ptr<f32, 3>``, ``tensor<4x8xf32, #blocked<..>>``."""
    p = _Parser(text, "<type>")
    t = p.parse_type()
    p.expect_eof()
    return t


def parse_attribute(text: str) -> Any:
    """Parse one attribute value as it appears in an attribute dict (e.g. ``[1, 2]``, ``!f32``,
    ``#blocked<...>``)."""
    p = _Parser(text, "<attribute>")
    value = p.parse_attr_value()
    p.expect_eof()
    return value
