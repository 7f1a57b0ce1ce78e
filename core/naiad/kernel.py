"""``KernelDefinition``: what the frontend compiles, without what the runtime launches.

``naiad.runtime.jit.JITFunction`` (a ``@naiad.jit`` function) derives from it. The frontend tests
``isinstance(x, KernelDefinition)`` and reads the attributes below, so it never imports the
runtime: frontend -> runtime -> compiler -> frontend would be an import cycle.

Attributes a definition provides: ``fn`` (the Python function), ``__name__``, ``signature``
(``inspect.Signature``), ``arg_names``, ``constexpr_params``, ``noinline``, ``source``,
``filename``, ``first_line`` and ``globals``.
"""
from __future__ import annotations


class KernelDefinition:
    """Marker base class of ``@naiad.jit`` functions (see the module docstring)."""

    __slots__ = ()
