"""Textual form of the tile IR (the parser in :mod:`naiad.ir.parser` reads it back).

Grammar, by example::

    module attributes {num_warps = 4} {
    func @add(%x: ptr<f32> {divisibility = 16}, %n: i32) -> (i32) attributes {kernel = true} {
      %pid = program_id {axis = 0} : i32
      %v = load %p, %m, %o : tensor<1024xf32>
      store %p, %v, %m
      %s, %t = for %lb, %ub, %st, %a, %b : f32, f32 {
      ^(%iv: i32, %a1: f32, %b1: f32):
        yield %a1, %b1
      }
      return %pid
    }
    }

Every op is ``results = name operands {attrs} : result-types`` followed by its regions, each in
braces, with a ``^(args):`` header when the region's block has arguments. Attribute values:
integers, floats (always with ``.``/``e``/``inf``/``nan``), ``true``/``false``, strings in double
quotes, lists ``[..]``, types ``!i32``, ``none``, and layout attributes (``#name<...>``) printed
by their own ``__str__``. Attribute names that are not identifiers are quoted; numpy scalars print
as the equivalent Python numbers. With ``locations=True`` an op's header ends in
``loc("kernel.py":12:5)``, its place in the kernel's source (the "tile" stage is printed so, and
the reference executor reads it back to name the line of a failing access).
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

from .core import Block, Function, Module, Operation, Region, Value
from .types import Type

_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def format_attr(value) -> str:
    if isinstance(value, np.generic):  # np.float64 is a float, but its repr is "np.float64(..)"
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, Type):
        return f"!{value}"
    if value is None:
        return "none"
    text = str(value)  # layout attributes print themselves as #name<...>
    if not text.startswith("#"):
        raise TypeError(f"cannot print attribute value {value!r}")
    return text


def format_attr_dict(attrs: dict) -> str:
    if not attrs:
        return ""
    return "{" + ", ".join(f"{_format_key(k)} = {format_attr(v)}"
                           for k, v in sorted(attrs.items())) + "}"


def _format_key(key: str) -> str:
    return key if _KEY_OK.match(key) else json.dumps(key)


class _Namer:
    """Gives every value a unique printable name, preferring its name hint."""

    def __init__(self):
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def name(self, v: Value) -> str:
        if v in self.names:
            return self.names[v]
        hint = v.name_hint if v.name_hint and _NAME_OK.match(v.name_hint) else None
        if hint is None:
            base = str(self.counter)
            self.counter += 1
            while base in self.taken:
                base = str(self.counter)
                self.counter += 1
        else:
            base, k = hint, 0
            while base in self.taken:
                k += 1
                base = f"{hint}_{k}"
        self.taken.add(base)
        self.names[v] = "%" + base
        return self.names[v]

    def ref(self, v: Value) -> str:
        try:
            return self.names[v]
        except KeyError:
            return "%<undefined>"  # verifier reports it; printing must never crash


def format_loc(loc) -> str | None:
    """``loc("file":line:col)`` (col 1-based) for a ``(filename, line, col0)`` location (the
    frontend's ``SourceLoc``), None for anything else."""
    if not isinstance(loc, tuple) or len(loc) < 3:
        return None
    filename, line, col = loc[0], loc[1], loc[2]
    if not isinstance(filename, str) or not isinstance(line, int) or not isinstance(col, int):
        return None
    return f"loc({json.dumps(filename)}:{line}:{col + 1})"


class Printer:
    def __init__(self, locations: bool = False):
        self.namer = _Namer()
        self.lines: list[str] = []
        self.locations = locations

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def print_op(self, op: Operation, depth: int) -> None:
        res = ""
        if op.results:
            res = ", ".join(self.namer.name(r) for r in op.results) + " = "
        text = res + op.name
        if op.operands:
            text += " " + ", ".join(self.namer.ref(v) for v in op.operands)
        if op.attrs:
            text += " " + format_attr_dict(op.attrs)
        if op.results:
            text += " : " + ", ".join(str(r.type) for r in op.results)
        if self.locations and op.loc is not None:
            where = format_loc(op.loc)
            if where is not None:
                text += " " + where
        if not op.regions:
            self.emit(depth, text)
            return
        self.emit(depth, text + " {")
        for i, region in enumerate(op.regions):
            if i:
                self.emit(depth, "} {")
            self.print_block(region.block, depth + 1)
        self.emit(depth, "}")

    def print_block(self, block: Block, depth: int) -> None:
        if block.args:
            args = ", ".join(f"{self.namer.name(a)}: {a.type}" for a in block.args)
            self.emit(depth - 1, f"^({args}):")
        for op in block.ops:
            self.print_op(op, depth)

    def print_function(self, fn: Function) -> None:
        params = []
        for a, aattrs in zip(fn.args, fn.arg_attrs):
            p = f"{self.namer.name(a)}: {a.type}"
            if aattrs:
                p += " " + format_attr_dict(aattrs)
            params.append(p)
        head = f"func @{fn.name}(" + ", ".join(params) + ")"
        if fn.result_types:
            head += " -> (" + ", ".join(str(t) for t in fn.result_types) + ")"
        if fn.attrs:
            head += " attributes " + format_attr_dict(fn.attrs)
        self.emit(0, head + " {")
        for op in fn.body.block.ops:
            self.print_op(op, 1)
        self.emit(0, "}")


def print_function(fn: Function, locations: bool = False) -> str:
    p = Printer(locations)
    p.print_function(fn)
    return "\n".join(p.lines) + "\n"


def print_module(module: Module, locations: bool = False) -> str:
    """The module's text; ``locations=True`` appends each op's kernel-source location as
    ``loc("file":line:col)`` (the parser reads it back into ``op.loc``)."""
    head = "module"
    if module.attrs:
        head += " attributes " + format_attr_dict(module.attrs)
    parts = [head + " {\n"]
    for fn in module.functions.values():
        parts.append(print_function(fn, locations))
    parts.append("}\n")
    return "".join(parts)


def print_op(op: Operation) -> str:
    """One op (with its regions) for diagnostics; values defined outside it (its operands and
    those its regions use) are named first, by their hints or as numbers."""
    p = Printer()
    inner = {v for o in op.walk() for v in o.results}
    inner.update(a for o in op.walk() for r in o.regions for a in r.block.args)
    for o in op.walk():
        for v in o.operands:
            if v not in inner:
                p.namer.name(v)
    p.print_op(op, 0)
    return "\n".join(p.lines)
