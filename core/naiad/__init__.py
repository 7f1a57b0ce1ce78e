"""naiad: a Triton-style tile kernel language whose backends are pluggy plugins.

Public API (kept import-light: heavy parts load on first use)::

    import naiad, naiad.language as tl

    @naiad.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[(naiad.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    naiad.compile(add, signature={...}, constexprs={...}, target="nvidia:sm_90")
"""
from __future__ import annotations

import importlib

from .errors import (NaiadError, CompilationError, IRError, OptionError, TargetError,
                     CodegenError, DeviceError, PluginError, OutOfBoundsError)
from .plugins.hookspecs import hookimpl, hookspec
from .utils import cdiv, next_power_of_2

__version__ = "0.1.0"

# name -> module that defines it; resolved lazily by __getattr__ below.
_LAZY = {
    "jit": "naiad.runtime.jit",
    "JITFunction": "naiad.runtime.jit",
    "compile": "naiad.compiler",
    "CompiledKernel": "naiad.compiler",
    "autotune": "naiad.runtime.autotune",
    "Config": "naiad.runtime.autotune",
    "heuristics": "naiad.runtime.autotune",
    "set_target": "naiad.runtime.targets",
    "get_target": "naiad.runtime.targets",
    "target": "naiad.runtime.targets",
    "to_device": "naiad.runtime.memory",
    "empty": "naiad.runtime.memory",
    "zeros": "naiad.runtime.memory",
    "to_host": "naiad.runtime.memory",
    "language": "naiad.language",
    "testing": "naiad.testing",
    "plugins": "naiad.plugins",
    "set_allocator": "naiad.runtime.allocator",
    "runtime": "naiad.runtime",
    "tools": "naiad.tools",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'naiad' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module == f"naiad.{name}" else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
