"""What identifies a kernel's code for the caches, and the watch that notices when it changes.

A kernel's fingerprint hashes the source of the kernel and of every ``@jit`` function it can
reach, each one's default argument values, and the value of every name outside their bodies that
the frontend may fold into the code: module globals and closure variables, and attribute chains
through modules and classes (``cfg.SCALE``, ``pkg.sub.helper(x)``). Names that resolve into
naiad's own modules (``tl.load``, ``tl.float16``) are covered by naiad's source hash instead.

The same walk records what it read in a :class:`GlobalWatch`. Launches check it, so rebinding a
global that a compiled kernel folded in is an error (Triton's "Global variable ... has changed"),
never a silently stale kernel.

Thread safety: one re-entrant lock serialises fingerprinting and the walk keeps its state on its
own stack, so threads launching a kernel for the first time at once all get the same, complete
fingerprint (a shared "in progress" set once made them see each other's walks as cycles).
"""
from __future__ import annotations

import ast
import hashlib
import threading
import types
from typing import NamedTuple

from ..errors import StaleKernelError

_lock = threading.RLock()
_MISSING = object()
_PLAIN = (int, float, bool, str, bytes, type(None))


# -- identities ---------------------------------------------------------------------------------
def stable_repr(value) -> str | None:
    """A text that is the same in every process for equal values, or None when there is none (an
    object whose repr holds a memory address): such values keep a kernel out of the disk cache."""
    from .jit import JITFunction

    if isinstance(value, JITFunction):
        return f"jit:{value.__module__}.{value.__qualname__}:{function_fingerprint(value)}"
    if isinstance(value, _PLAIN):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        parts = [stable_repr(v) for v in value]
        return None if None in parts else f"{type(value).__name__}({','.join(parts)})"
    text = repr(value)
    if " at 0x" in text or "object at" in text:
        return None
    return f"{type(value).__module__}.{type(value).__qualname__}:{text}"


def _naiad_code(value) -> bool:
    """True for naiad's own modules, classes and functions (naiad's source hash covers them, so
    they need no place in a kernel's fingerprint). Instances (a ``tl.float16`` kept in a user's
    global) are values and do count."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
    elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        name = getattr(value, "__module__", None)
    else:
        return False
    return isinstance(name, str) and (name == "naiad" or name.startswith("naiad."))


def _identity(value) -> str:
    """How a dependency's value enters the fingerprint (callees by name: the walk hashes them)."""
    from .jit import JITFunction

    if type(value).__name__ == "constexpr" and hasattr(value, "value"):
        value = value.value
    if isinstance(value, JITFunction):
        return f"jit:{value.__qualname__}"   # its code is hashed by the walk
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, type):
        return f"type:{value.__module__}.{value.__qualname__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return f"function:{getattr(value, '__module__', None)}.{value.__qualname__}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({','.join(_identity(v) for v in value)})"
    ident = stable_repr(value)
    # a value without a stable identity cannot be folded by the frontend (it raises when such a
    # global is used), so its type is all the fingerprint needs
    return ident if ident is not None else f"unfoldable:{type(value).__qualname__}"


# -- which names a function reads from outside ---------------------------------------------------
def _chain(node) -> tuple[str, ...] | None:
    """``a.b.c`` as ("a", "b", "c"); None when the expression is not rooted at a plain name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(attrs))


def _local_names(code) -> set[str]:
    names = set(code.co_varnames) | set(code.co_cellvars)
    for const in code.co_consts:   # comprehensions (their own code objects before Python 3.12)
        if isinstance(const, types.CodeType):
            names |= _local_names(const)
    return names


def outside_chains(fn) -> list[tuple[str, ...]]:
    """Every dotted name in ``fn``'s body rooted at a name that is not one of its locals (the
    body only: decorators and annotations are evaluated by Python, defaults are hashed by value).
    """
    local = _local_names(fn.fn.__code__)
    chains = set()
    for stmt in fn.ast.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Name, ast.Attribute)):
                chain = _chain(node)
                if chain is not None and chain[0] not in local:
                    chains.add(chain)
    return sorted(chains)


class Watched(NamedTuple):
    """One value a kernel read from outside its body: where (a globals dict or a closure cell),
    the chain of names, and the value seen."""

    where: object
    chain: tuple[str, ...]
    value: object

    def current(self):
        """The value the chain has now (``_MISSING`` where it no longer resolves)."""
        if isinstance(self.where, dict):
            value = self.where.get(self.chain[0], _MISSING)
        else:
            try:
                value = self.where.cell_contents
            except ValueError:
                return _MISSING
        for attr in self.chain[1:]:
            if value is _MISSING:
                break
            value = getattr(value, attr, _MISSING)
        return value


def _resolve(fn, chain, closure):
    """``(Watched, value)`` for the longest part of ``chain`` the frontend would fold: descends
    through modules and classes, stops at naiad's own objects (None then) and at any other value.
    """
    root = chain[0]
    if root in closure:
        cell = closure[root]
        try:
            value = cell.cell_contents
        except ValueError:
            return None
        where = cell
    elif root in fn.fn.__globals__:
        where = fn.fn.__globals__
        value = where[root]
    else:
        return None   # a builtin, or undefined (the frontend reports it)
    used = 1
    for attr in chain[1:]:
        if _naiad_code(value) or not isinstance(value, (types.ModuleType, type)):
            break
        value = getattr(value, attr, _MISSING)
        used += 1
        if value is _MISSING:
            break
    if _naiad_code(value):
        return None
    return Watched(where, chain[:used], value), value


def _closure_cells(pyfn) -> dict:
    return dict(zip(pyfn.__code__.co_freevars, pyfn.__closure__ or ()))


# -- the fingerprint ----------------------------------------------------------------------------
class GlobalWatch:
    """The outside values a kernel's fingerprint was computed from; :meth:`check` raises
    :class:`StaleKernelError` once one of them has been rebound.

    Launches call :meth:`check` every time, so it runs a function generated for these items:
    one dict lookup (or cell read) and ``getattr`` per name, compared by identity; only when an
    identity differs does the slow comparison run (which adopts an equal new value, so rebinding
    a global to an equal one costs nothing on later launches)."""

    __slots__ = ("kernel", "items", "_unchanged")

    def __init__(self, kernel: str, items: tuple[Watched, ...]):
        self.kernel = kernel
        self.items = items
        self._unchanged = _identity_check(items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def check(self) -> None:
        if not self._unchanged():
            self._compare()

    def _compare(self) -> None:
        items = list(self.items)
        for k, item in enumerate(items):
            now = item.current()
            if now is item.value:
                continue
            if not _same(now, item.value):
                name = ".".join(item.chain)
                shown = "<deleted>" if now is _MISSING else repr(now)
                raise StaleKernelError(
                    f"Global variable {name} has changed since naiad compiled kernel "
                    f"{self.kernel!r}, from {item.value!r} to {shown}. A kernel folds the "
                    f"globals it reads in at compile time: pass the value as a tl.constexpr "
                    f"argument, or call {self.kernel}.cache_clear() after changing it")
            items[k] = item._replace(value=now)   # equal: watch the new object from now on
        self.items = tuple(items)
        self._unchanged = _identity_check(self.items)


def _identity_check(items: tuple[Watched, ...]):
    """A function returning True while every item's chain still resolves to the very object
    recorded (False, or an exception caught here, sends the caller to the slow comparison)."""
    if not items:
        return lambda: True
    namespace: dict = {"M": _MISSING}
    terms = []
    for k, item in enumerate(items):
        namespace[f"w{k}"], namespace[f"v{k}"] = item.where, item.value
        expr = (f"w{k}.get({item.chain[0]!r}, M)" if isinstance(item.where, dict)
                else f"w{k}.cell_contents")
        for attr in item.chain[1:]:
            expr = f"getattr({expr}, {attr!r}, M)"
        terms.append(f"{expr} is v{k}")
    source = ("def unchanged():\n    try:\n        return " + " and ".join(terms)
              + "\n    except Exception:\n        return False\n")
    exec(compile(source, "<naiad global watch>", "exec"), namespace)
    return namespace["unchanged"]


def _same(a, b) -> bool:
    if a is _MISSING or b is _MISSING or type(a) is not type(b):
        return False
    return _identity(a) == _identity(b)


class Fingerprint(NamedTuple):
    """``digest`` hashes what the code computes and nothing of where it lives, so identical code
    in two files has one digest; ``locations`` is where each reached function's source starts
    (file, first line), which errors, remarks and device asserts of a compiled kernel quote."""
    digest: str
    watch: GlobalWatch
    locations: tuple[tuple[str, str, int], ...] = ()


def fingerprint_of(fn) -> Fingerprint:
    """The :class:`Fingerprint` of a JITFunction (computed once; ``cache_clear()`` forgets it)."""
    info = fn.__dict__.get("_naiad_fingerprint")
    if info is None:
        with _lock:
            info = fn.__dict__.get("_naiad_fingerprint")
            if info is None:
                info = _compute(fn)
                fn.__dict__["_naiad_fingerprint"] = info
    return info


def function_fingerprint(fn) -> str:
    """sha256 hex of everything in ``fn``'s code that a compiled kernel depends on."""
    return fingerprint_of(fn).digest


def _compute(root) -> Fingerprint:
    """Walk ``root`` and every @jit function it reaches (each once, in a deterministic order, so
    mutual recursion needs no special case) and hash their sources and outside values."""
    from .jit import JITFunction

    h = hashlib.sha256()
    watched: list[Watched] = []
    order = [root]
    seen = {id(root)}
    for fn in order:   # grows while walking
        h.update(f"\0function {fn.__qualname__}\0".encode())
        h.update(fn.source.encode())
        pyfn = fn.fn
        defaults = list(pyfn.__defaults__ or ()) + sorted((pyfn.__kwdefaults__ or {}).items())
        h.update(f"\0defaults={_identity(defaults)}".encode())
        reached = list(defaults)
        closure = _closure_cells(pyfn)
        for chain in outside_chains(fn):
            found = _resolve(fn, chain, closure)
            if found is None:
                continue
            item, value = found
            h.update(f"\0{'.'.join(item.chain)}={_identity(value)}".encode())
            watched.append(item)
            reached.append(value)
        for value in reached:    # callees (also passed as default values) are walked too
            if type(value).__name__ == "constexpr":
                value = getattr(value, "value", value)
            if isinstance(value, JITFunction) and id(value) not in seen:
                seen.add(id(value))
                order.append(value)
    unique = {(id(w.where), w.chain): w for w in watched}
    locations = tuple((fn.__qualname__, fn.filename, fn.first_line) for fn in order)
    return Fingerprint(h.hexdigest(), GlobalWatch(root.__qualname__, tuple(unique.values())),
                       locations)
