"""``@naiad.jit``: wraps a Python function as a kernel (or a device function called by kernels).

This module holds what the frontend needs to know about a jit function (its source, globals and
parameters). Launching (``kernel[grid](...)``), specialisation and caching are added by
:mod:`naiad.runtime.launch`.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cached_property, partial

from ..kernel import KernelDefinition


class JITFunction(KernelDefinition):
    """A ``@naiad.jit`` function: parsed lazily, compiled per specialisation, launched by grid."""

    def __init__(self, fn, *, do_not_specialize=(), noinline: bool = False):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.do_not_specialize = tuple(do_not_specialize)
        self.noinline = noinline
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)

    @cached_property
    def source(self) -> str:
        """Dedented source text of the function (decorators included)."""
        return textwrap.dedent(inspect.getsource(self.fn))

    @cached_property
    def filename(self) -> str:
        return inspect.getsourcefile(self.fn) or "<unknown>"

    @cached_property
    def first_line(self) -> int:
        """Line number (1-based) in ``filename`` of the first line of ``source``."""
        return inspect.getsourcelines(self.fn)[1]

    @cached_property
    def ast(self) -> ast.FunctionDef:
        tree = ast.parse(self.source)
        return tree.body[0]

    @property
    def globals(self) -> dict:
        return self.fn.__globals__

    @cached_property
    def constexpr_params(self) -> list[str]:
        """Parameters annotated ``tl.constexpr`` (by name, as the frontend resolves them)."""
        out = []
        for name, p in self.signature.parameters.items():
            ann = p.annotation
            if ann is inspect.Parameter.empty:
                continue
            text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
            if "constexpr" in str(text):
                out.append(name)
        return out

    @cached_property
    def cache_key_source(self) -> str:
        """Source text identifying this function (callees are added by the compiler)."""
        return self.source

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"@jit function {self.__name__!r} cannot be called from Python; launch it with "
            f"{self.__name__}[grid](...) or call it from inside another @jit function")

    def __getitem__(self, grid):
        """``kernel[grid]``: a callable launching on ``grid`` (see :mod:`naiad.runtime.launch`)."""
        try:
            return partial(self._naiad_launch, grid)
        except AttributeError:   # first launch: generate the warm launch function
            from .launch import warm_launch_of

            return partial(warm_launch_of(self), grid)

    def run(self, *args, grid, **kwargs):
        """Launch on ``grid``; the form autotune/heuristics wrappers call."""
        return self[grid](*args, **kwargs)

    def warmup(self, *args, grid=(1,), **kwargs):
        """Compile for these arguments (filling the caches) without launching; returns the
        CompiledKernel. ``target=`` picks a target other than the current one."""
        from .launch import warmup

        return warmup(self, grid, *args, **kwargs)

    def cache_info(self) -> dict:
        """Counters of this kernel's caches: hits, disk_hits, compiles, disk_writes, launches."""
        from .launch import runtime_of

        return runtime_of(self).cache_info()

    def cache_clear(self) -> None:
        """Forget the in-memory compiled kernels (the on-disk cache stays)."""
        self.__dict__.pop("_naiad_runtime", None)
        self.__dict__.pop("_naiad_launch", None)

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn=None, *, do_not_specialize=(), noinline: bool = False, **_ignored):
    """Decorator: ``@naiad.jit`` or ``@naiad.jit(do_not_specialize=[...])``."""
    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, noinline=noinline)

    return wrap(fn) if fn is not None else wrap
