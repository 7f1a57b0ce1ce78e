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
from types import MethodType

from . import launch_hooks
from ..errors import CompilationError
from .call_site import CALL_ERRORS, at_call_site

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
        self._exec_text = None
        if fn.__code__.co_filename.startswith("<"):   # defined by exec(text)
            self._exec_text = _text_given_to_exec(fn)

    @cached_property
    def source(self) -> str:
        """Dedented source text of the function (decorators included).

        Python keeps no source for functions defined in ``exec``'d strings or typed at a plain
        REPL; naiad needs it (to compile, and to identify the kernel in the caches). A string
        given to ``exec`` is found again where it can be (Triton's tests do this); otherwise a
        CompilationError says why (``linecache`` entries, as IPython makes, do work)."""
        try:
            return textwrap.dedent(inspect.getsource(self.fn))
        except (OSError, TypeError) as exc:
            found = _function_in_text(self._exec_text, self.fn) if self._exec_text else None
            if found is None:
                raise CompilationError(
                    f"cannot read the source code of @jit function {self.__qualname__!r} ({exc}): "
                    f"naiad compiles a kernel from its source text, which Python keeps only for "
                    f"functions defined in a file (not in an exec'd string or at a plain REPL); "
                    f"define the kernel in a .py module") from None
            return found

    @property
    def src(self) -> str:
        """Triton's name for the source text."""
        return self.source

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the source text (Triton's API; the kernel recompiles from the new text)."""
        self.__dict__["source"] = textwrap.dedent(new_src)
        self.__dict__.pop("ast", None)
        self.__dict__.pop("cache_key_source", None)
        self.__dict__.pop("_naiad_fingerprint", None)   # the on-disk cache key changes too
        self.cache_clear()

    @cached_property
    def filename(self) -> str:
        try:
            return inspect.getsourcefile(self.fn) or "<unknown>"
        except TypeError:
            return self.fn.__code__.co_filename

    @cached_property
    def first_line(self) -> int:
        """Line number (1-based) in ``filename`` of the first line of ``source``."""
        try:
            return inspect.getsourcelines(self.fn)[1]
        except OSError:
            return self.fn.__code__.co_firstlineno

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
        """``kernel[grid]``: a callable launching on ``grid`` (see :mod:`naiad.runtime.launch`);
        passed through :data:`naiad.runtime.launch_hooks.observer` when one is set. It is the
        kernel's warm launch function with ``grid`` bound as its first argument, the way a
        method binds its object (``types.MethodType``): made and called at about half a
        ``functools.partial``'s cost."""
        try:
            launch = MethodType(self._naiad_launch, grid)
        except (AttributeError, TypeError):
            # the first launch (no warm launch generated yet), or grid None, to which nothing
            # can be bound (the call then says what a grid is)
            from .launch import warm_launch_of

            launch = partial(warm_launch_of(self), grid)
        if launch_hooks.observer is not None:
            return launch_hooks.observer(self, grid, launch)
        return launch

    def run(self, *args, grid, **kwargs):
        """Launch on ``grid``; the form autotune/heuristics wrappers call. A kernel launched
        with ``TensorDescriptor`` arguments before goes straight to its descriptor launch when
        this call has descriptors too (``kernel[grid]`` would get there after its warm launch
        failed to bind them: the same route, without the failure's cost)."""
        if "_naiad_descriptor_fast" in self.__dict__ and launch_hooks.observer is None:
            types, launch_with_descriptors, fingerprint_of = _DESCRIPTOR_ROUTE or \
                _descriptor_route()
            if not types.isdisjoint(map(type, args)) or kwargs and \
                    not types.isdisjoint(map(type, kwargs.values())):
                fingerprint_of(self).watch.check()   # as the warm/slow launch checks first
                return launch_with_descriptors(self, grid, args, kwargs, None)
        return self[grid](*args, **kwargs)

    def warmup(self, *args, grid=(1,), **kwargs):
        """Compile for these arguments (filling the caches) without launching; returns the
        CompiledKernel. ``target=`` picks a target other than the current one. Tutorial 02
        calls it before every launch: a warm call is one generated function keyed like the
        warm launch (:func:`naiad.runtime.warm_launch.make_warm_warmup`)."""
        warmup = self.__dict__.get("_naiad_warmup")
        if warmup is None:
            from .launch import warm_warmup_of

            warmup = warm_warmup_of(self)
        try:
            return warmup(args, kwargs)
        except CALL_ERRORS as exc:
            raise at_call_site(exc, f"{self.__name__}.warmup(...)") from None

    def cache_info(self) -> dict:
        """Counters of this kernel's caches: hits, disk_hits, compiles, disk_writes, launches."""
        from .launch import runtime_of

        return runtime_of(self).cache_info()

    def cache_clear(self) -> None:
        """Forget the in-memory compiled kernels and the kernel's fingerprint (the on-disk cache
        stays): after changing a global the kernel reads, this makes the next launch use it."""
        self.__dict__.pop("_naiad_runtime", None)
        self.__dict__.pop("_naiad_launch", None)
        self.__dict__.pop("_naiad_warmup", None)
        self.__dict__.pop("_naiad_fingerprint", None)

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


#: (descriptor types, ``launch_with_descriptors``, ``fingerprint_of``) once a kernel was
#: launched with descriptors: imported once, not per call (an import statement costs ~1 us)
_DESCRIPTOR_ROUTE: tuple = ()


def _descriptor_route() -> tuple:
    global _DESCRIPTOR_ROUTE
    from .descriptor_args import launch_with_descriptors
    from .descriptor_fast_path import DESCRIPTOR_TYPES
    from .fingerprint import fingerprint_of

    _DESCRIPTOR_ROUTE = (DESCRIPTOR_TYPES, launch_with_descriptors, fingerprint_of)
    return _DESCRIPTOR_ROUTE


def _text_given_to_exec(fn) -> str | None:
    """The text a function defined by ``exec(text)`` came from: a ``str`` local of the frame
    that called ``exec`` holding ``def <name>(`` (the usual ``src = ...; exec(src)`` pattern).
    Looked up while that frame is still on the stack (at decoration time)."""
    import sys

    marker = f"def {fn.__name__}("
    frame = sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename == fn.__code__.co_filename:
        frame = frame.f_back      # up to the exec'd code
    while frame is not None and frame.f_code.co_filename == fn.__code__.co_filename:
        frame = frame.f_back      # and past it, to the caller of exec
    if frame is None:
        return None
    for value in frame.f_locals.values():
        if isinstance(value, str) and marker in value:
            return value
    return None


def _function_in_text(text: str, fn) -> str | None:
    """The lines of ``fn``'s definition (decorators included) in ``text``, dedented."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    line = fn.__code__.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start == line or node.lineno == line:
                lines = textwrap.dedent(text).splitlines()[start - 1:node.end_lineno]
                return textwrap.dedent("\n".join(lines)) + "\n"
    return None


#: Triton's other ``@jit`` keywords: accepted, kept on the JITFunction, without effect on naiad's
#: code (``debug`` is read by the language's debug checks where they exist).
TRITON_JIT_KEYWORDS = ("version", "repr", "launch_metadata", "do_not_specialize_on_alignment",
                       "debug")


def jit(fn=None, *, do_not_specialize=(), noinline: bool = False, **keywords):
    """Decorator: ``@naiad.jit`` or ``@naiad.jit(do_not_specialize=[...])``. Triton's other
    keywords (:data:`TRITON_JIT_KEYWORDS`) are accepted; any other keyword is an error."""
    unknown = [k for k in keywords if k not in TRITON_JIT_KEYWORDS]
    if unknown:
        from .specialize import ArgumentError

        raise ArgumentError(f"jit() got an unexpected keyword argument {unknown[0]!r}; @jit "
                            f"accepts do_not_specialize, noinline, "
                            f"{', '.join(TRITON_JIT_KEYWORDS)}")
    noinline = bool(noinline)

    def wrap(f):
        if isinstance(f, JITFunction):
            f = f.fn
        jf = JITFunction(f, do_not_specialize=do_not_specialize or (), noinline=noinline)
        jf.jit_keywords = dict(keywords)
        jf.debug = keywords.get("debug")
        return jf

    return wrap(fn) if fn is not None else wrap
