"""naiad's one LLVM layer: the process-wide lock, target initialisation, and the module edits
llvmlite.ir has no API for (string function attributes), made on llvmlite objects -- never by
editing printed IR text.

llvmlite shares one LLVM context per process, so every parse, optimisation and emission (the
core's check of the lowered module, each backend's toolchain) runs under :data:`LLVM_LOCK`.
Backends reach all of this through :mod:`naiad.backend`.

The core parses and verifies every lowered kernel (a failure there is a naiad bug, reported with
the IR); :func:`take_verified_module` hands that parsed module to the backend's toolchain, so a
cold compile parses and verifies its LLVM IR once, not twice.
"""
from __future__ import annotations

import re
import threading

from llvmlite import ir

#: serialises every use of llvmlite.binding in the process (re-entrant).
LLVM_LOCK = threading.RLock()
_initialized = False
#: per thread: (text, module) the core last parsed and verified, until a backend takes it
_handoff = threading.local()

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


def parse_verified(text: str):
    """Parse and verify ``text`` (raises RuntimeError with LLVM's message) and keep the module
    for :func:`take_verified_module`; returns the ``llvmlite.binding.ModuleRef``."""
    llvm = initialize_llvm()
    with LLVM_LOCK:
        _handoff.entry = None
        mod = llvm.parse_assembly(text)
        mod.verify()
        _handoff.entry = (text, mod)
    return mod


def take_verified_module(text: str):
    """The module :func:`parse_verified` made from exactly ``text`` on this thread, handed over
    once (the caller may optimise it in place); None when there is none, and the caller parses
    and verifies ``text`` itself."""
    entry = getattr(_handoff, "entry", None)
    _handoff.entry = None
    if entry is None or not (entry[0] is text or entry[0] == text):
        return None
    return entry[1]


#: a struct with at least this many members gets a named type (see :func:`struct_type`)
NAMED_STRUCT_MIN = 9


def struct_type(module: ir.Module, members) -> ir.Type:
    """The struct of ``members`` (e.g. the accumulator registers an inline-asm MMA returns),
    as a named type of ``module`` when it has at least :data:`NAMED_STRUCT_MIN` members.

    Why: a literal struct type is printed in full at each of its uses -- 128 ``float``s in every
    ``extractvalue`` of a 256-wide MMA's result, two thirds of tutorial 03's LLVM IR text --
    and LLVM parses it again each time; a named type prints as one name. Both are the same
    type to LLVM's optimiser and code generator (the generated code does not change).
    The name follows from the members (``naiad.f32x64``), so equal structs share one type.
    """
    members = list(members)
    if len(members) < NAMED_STRUCT_MIN:
        return ir.LiteralStructType(members)
    runs: list[list] = []
    for ty in members:
        if runs and runs[-1][0] == ty:
            runs[-1][1] += 1
        else:
            runs.append([ty, 1])
    name = "naiad." + ".".join(f"{_type_tag(ty)}x{n}" for ty, n in runs)
    named = module.context.get_identified_type(name)
    if named.is_opaque:
        named.set_body(*members)
    elif list(named.elements) != members:
        raise ValueError(f"struct type {name} exists with other members")
    return named


def _type_tag(ty: ir.Type) -> str:
    """A short, name-safe spelling of ``ty`` (``float`` -> ``f32``, ``<2 x half>`` -> ``v2f16``)."""
    text = {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16"}.get(str(ty))
    if text is not None:
        return text
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_type_tag(ty.element)}"
    return re.sub(r"\W+", "_", str(ty))


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
