"""Name resolution inside a kernel: local variables, then the function's closure and module
globals (compile-time constants only), then the few Python builtins kernels may use."""
from __future__ import annotations

import builtins
import types

import numpy as np

from ..errors import CompilationError
from ..language.core import constexpr, tensor
from ..language.dtypes import dtype
from ..kernel import KernelDefinition as JITFunction  # not the runtime: no import cycle

#: Python builtins a kernel may name (what they do is decided in :mod:`.pybuiltins`)
ALLOWED_BUILTINS = ("range", "min", "max", "float", "int", "bool", "len", "abs", "isinstance",
                    "print", "tuple", "list", "getattr", "hasattr", "zip", "enumerate", "str",
                    "type", "AssertionError", "ValueError", "TypeError", "RuntimeError")


class Undefined:
    """A local that must not be read here (e.g. assigned in one branch of a dynamic ``if``)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def _is_constant(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, dtype)):
        return True
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return False


def global_value(name: str, value):
    """The value a kernel sees for a global/closure variable, or a CompilationError."""
    if isinstance(value, constexpr):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    if _is_constant(value):
        return value
    if isinstance(value, (types.ModuleType, JITFunction, type)) or callable(value):
        return value  # what calling it does is checked at the call
    raise CompilationError(
        f"global {name!r} (a {type(value).__name__}) cannot be used inside a kernel; kernels "
        f"read only compile-time constants from globals (ints, floats, bools, strings, dtypes "
        f"or tl.constexpr(...)); pass it as an argument instead")


class Scope:
    """Local variables of the function being generated, with snapshots for branches/loops."""

    def __init__(self, fn_globals: dict, closure: dict):
        self.locals: dict[str, object] = {}
        self.fn_globals = fn_globals
        self.closure = closure

    def lookup(self, name: str):
        if name in self.locals:
            value = self.locals[name]
            if isinstance(value, Undefined):
                raise CompilationError(value.reason)
            return value
        for table in (self.closure, self.fn_globals):
            if name in table:
                return global_value(name, table[name])
        if name in ALLOWED_BUILTINS:
            return getattr(builtins, name)
        if hasattr(builtins, name):
            raise CompilationError(f"the Python builtin {name!r} is not supported inside a "
                                   "kernel")
        raise CompilationError(f"name {name!r} is not defined")

    def bind(self, name: str, value) -> None:
        if isinstance(value, tensor) and value.handle.name_hint is None and \
                not value.handle.is_block_arg:
            value.handle.name_hint = name
        self.locals[name] = value

    def snapshot(self) -> dict:
        return dict(self.locals)

    def restore(self, snapshot: dict) -> None:
        self.locals = dict(snapshot)
