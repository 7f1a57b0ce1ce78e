"""State shared by every code generator of one ``generate()`` call: the module being built, the
callee specialisations already emitted, and per-function source facts (parsed once)."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.core import Function, Module
from ..language.core import constexpr
from ..language.dtypes import dtype
from .analysis import normalize_returns
from .source import SourceInfo


@dataclass
class ReturnTemplate:
    """How a callee's return value is rebuilt at a call: ``kind`` is none or value; for a
    value, ``structure`` is its :mod:`~naiad.frontend.structures` template over the call's
    results."""

    kind: str
    structure: Any = None


@dataclass
class Callee:
    function: Function
    template: ReturnTemplate | None = None  # None while the callee is being generated


def normalize_constant(value):
    """Compile-time values as the frontend sees them (constexpr and numpy scalars unwrapped)."""
    if isinstance(value, constexpr):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    return value


def constant_key(value):
    """A hashable key for a compile-time argument (type-sensitive: 1, 1.0 and True differ)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(constant_key(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))  # keeps -0.0 apart from 0.0, and nan equal to itself
    if value is None or isinstance(value, (bool, int, str, dtype)):
        return (type(value).__name__, value)
    return ("object", id(value))


class ModuleContext:
    def __init__(self, kernel_name: str):
        self.module = Module()
        self.kernel_name = kernel_name
        self.callees: dict[tuple, Callee] = {}
        self._sources: dict[int, SourceInfo] = {}
        self._bodies: dict[int, list[ast.stmt]] = {}
        self._taken = {kernel_name}
        self._keep_alive: list = []  # ids in keys stay valid while we hold the objects

    def source(self, fn) -> SourceInfo:
        key = id(fn)
        if key not in self._sources:
            self._sources[key] = SourceInfo(fn)
            self._keep_alive.append(fn)
        return self._sources[key]

    def body(self, fn, fdef: ast.FunctionDef) -> list[ast.stmt]:
        """The function's statements with every ``return`` moved to a tail position."""
        key = id(fn)
        if key not in self._bodies:
            self._bodies[key] = normalize_returns(fdef.body)
        return self._bodies[key]

    def callee_name(self, base: str) -> str:
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name

    def callee_key(self, fn, arg_types, consts: dict) -> tuple:
        self._keep_alive.append(fn)
        self._keep_alive.extend(consts.values())
        return (id(fn), tuple(arg_types),
                tuple(sorted((k, constant_key(v)) for k, v in consts.items())))
