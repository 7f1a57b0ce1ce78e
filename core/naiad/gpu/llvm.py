"""naiad's one LLVM layer: the process-wide lock, target initialisation, and the module edits
llvmlite.ir has no API for (string function attributes), made on llvmlite objects -- never by
editing printed IR text.

llvmlite shares one LLVM context per process, so every parse, optimisation and emission (the
core's check of the lowered module, each backend's toolchain) runs under :data:`LLVM_LOCK`.
Backends reach all of this through :mod:`naiad.backend`.
"""
from __future__ import annotations

import threading

from llvmlite import ir

#: serialises every use of llvmlite.binding in the process (re-entrant).
LLVM_LOCK = threading.RLock()
_initialized = False

I1 = ir.IntType(1)
I32 = ir.IntType(32)


def initialize_llvm():
    """Initialise every LLVM target and asm printer once per process; returns
    ``llvmlite.binding``."""
    global _initialized
    import llvmlite.binding as llvm

    if not _initialized:
        with LLVM_LOCK:
            if not _initialized:
                llvm.initialize_all_targets()
                llvm.initialize_all_asmprinters()
                _initialized = True
    return llvm


def set_string_attribute(fn: ir.Function, key: str, value: str) -> None:
    """Give ``fn`` the string attribute ``"key"="value"``. llvmlite's attribute set accepts only
    the enum attributes it knows, so the quoted pair is added to the set directly (it prints
    verbatim in the function's ``define`` line)."""
    quoted = f'"{_escape(str(key))}"="{_escape(str(value))}"'
    set.add(fn.attributes, quoted)


def add_module_flag(module: ir.Module, name: str, value, behavior: int = 1) -> None:
    """Append ``!{i32 behavior, !"name", i32 value}`` to ``!llvm.module.flags``."""
    node = module.add_metadata([ir.Constant(I32, int(behavior)), str(name),
                                ir.Constant(I32, int(value))])
    module.add_named_metadata("llvm.module.flags", node)


def add_named_metadata(module: ir.Module, name: str, operands, kernel: ir.Function) -> None:
    """Append one node to the named metadata ``!name``: bools become ``i1``, ints ``i32``, the
    string ``"@kernel"`` a pointer to the kernel, anything else a metadata string."""
    def operand(v):
        if isinstance(v, bool):
            return ir.Constant(I1, int(v))
        if isinstance(v, int):
            return ir.Constant(I32, v)
        if v == "@kernel":
            return kernel
        return str(v)

    module.add_named_metadata(name, module.add_metadata([operand(v) for v in operands]))


def _escape(s: str) -> str:
    return s.replace("\\", "\\5C").replace('"', "\\22")
