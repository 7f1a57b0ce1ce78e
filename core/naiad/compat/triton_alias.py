"""An import hook that makes ``import triton`` (and every ``triton.x.y``) resolve to naiad.

``triton`` is :mod:`naiad.compat.triton_root`; ``triton.<path>`` is the module named in
:data:`ALIASES`, else ``naiad.<path>`` (``triton.language.extra`` -> ``naiad.language.extra``).
A Triton module naiad has no counterpart of fails with ``ModuleNotFoundError`` naming both, so
code that probes for optional parts of Triton (``try: import triton.x``) behaves as usual.

The hook sits first on ``sys.meta_path`` while installed; :func:`aliased` installs it for a
``with`` block and puts back whatever ``triton`` modules were imported before (so one process can
import a Triton program once with naiad and once with the real Triton).
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

#: triton module -> the naiad module standing in for it (other names map triton.x -> naiad.x)
ALIASES = {
    "triton": "naiad.compat.triton_root",
    "triton.runtime.autotuner": "naiad.runtime.autotune",
    "triton.runtime.interpreter": "naiad.runtime.errors",
    "triton.compiler.errors": "naiad.errors",
    "triton.compiler": "naiad.compiler",
    "triton._internal_testing": "naiad.compat.internal_testing",
    "triton.errors": "naiad.errors",
    "triton._C": "naiad.compat.triton_c",
    "triton._C.libtriton": "naiad.compat.triton_c.libtriton",
}


def counterpart(fullname: str) -> str:
    """The naiad module standing in for Triton module ``fullname``."""
    mapped = ALIASES.get(fullname)
    if mapped is not None:
        return mapped
    return "naiad" + fullname[len("triton"):]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.original_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the naiad module is already initialised; importlib replaced its __spec__ by the alias
        # spec, so put its own back (reloads, pickling and submodule lookups read it)
        module.__spec__ = self.original_spec


class TritonAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``triton`` and ``triton.*`` as naiad modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        naiad_name = counterpart(fullname)
        try:
            found = importlib.util.find_spec(naiad_name)
        except (ImportError, AttributeError, ValueError):
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: naiad stands in for triton here and has no "
                f"counterpart {naiad_name!r}", name=fullname)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(naiad_name),
                                              is_package=True)


_FINDER = TritonAliasFinder()


def _triton_modules() -> dict:
    return {name: mod for name, mod in sys.modules.items()
            if name == "triton" or name.startswith("triton.")}


def install() -> None:
    """Resolve ``triton`` to naiad from now on (Triton modules already imported are dropped from
    ``sys.modules``; code holding them keeps them)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in _triton_modules():
        if not getattr(sys.modules[name], "__name__", "").startswith("naiad"):
            del sys.modules[name]


def uninstall() -> None:
    """Stop resolving ``triton`` to naiad and forget the aliased modules."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name, mod in _triton_modules().items():
        if getattr(mod, "__name__", "").startswith("naiad"):
            del sys.modules[name]


def installed() -> bool:
    return _FINDER in sys.meta_path


@contextlib.contextmanager
def aliased():
    """``with aliased():`` -- ``triton`` is naiad inside the block; the ``triton`` modules that
    were imported before are restored afterwards."""
    saved = _triton_modules()
    was_installed = installed()
    install()
    try:
        yield
    finally:
        if not was_installed:
            uninstall()
        for name in list(_triton_modules()):
            del sys.modules[name]
        sys.modules.update(saved)
