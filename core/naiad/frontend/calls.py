"""Calls inside kernels: to language builtins, to @jit functions (a specialised function per
argument types and constexpr values, reached by a ``call`` op), inline generation of combine
functions, and the few host functions allowed on compile-time values."""
from __future__ import annotations

import inspect

from ..errors import CompilationError
from ..language.core import constexpr, is_builtin, tensor, unwrap
from ..language.dtypes import dtype, pointer_type
from ..language.iterators import range as tl_range, static_range
from ..language.semantics import describe
from ..kernel import KernelDefinition as JITFunction  # not the runtime: no import cycle
from .context import Callee, ReturnTemplate, normalize_constant
from .structures import flatten, has_tensor, rebuild, template_key
from .pybuiltins import host_handler

_CONSTRUCTORS = (tl_range, static_range, pointer_type)


class CallsMixin:
    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = self._eval_elts(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error("**kwargs in calls is not supported in kernels", kw)
            kwargs[kw.arg] = self.visit(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node):
        if isinstance(fn, JITFunction):
            return self.call_jit(fn, args, kwargs, node)
        if is_builtin(fn) or inspect.ismethod(fn) and is_builtin(fn.__func__):
            return self._call_builtin(fn, args, kwargs)
        if fn is constexpr:
            if len(args) != 1 or kwargs:
                raise CompilationError("tl.constexpr() takes exactly one value")
            if isinstance(args[0], tensor):
                raise CompilationError("tl.constexpr() needs a compile-time value, got a "
                                       f"run-time {args[0].type}")
            return args[0]
        if fn in _CONSTRUCTORS:
            return self._python(lambda: fn(*args, **kwargs))
        if inspect.ismethod(fn) and isinstance(fn.__self__, dtype):
            return self._python(lambda: fn(*args, **kwargs))
        handler = host_handler(fn)
        if handler is not None:
            return handler(args, kwargs, self.semantic)
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        if inspect.isfunction(fn):
            raise CompilationError(
                f"cannot call the plain Python function {name!r} from a kernel; decorate it "
                "with @naiad.jit to make it a device function")
        raise CompilationError(f"{describe(fn) if not callable(fn) else repr(name)} cannot be "
                               "called inside a kernel")

    def _call_builtin(self, fn, args, kwargs):
        try:
            inspect.signature(fn).bind(*args, _semantic=self.semantic, **kwargs)
        except TypeError as e:
            name = getattr(fn, "__name__", "builtin")
            raise CompilationError(f"bad arguments to tl.{name}: {e}") from None
        return fn(*args, _semantic=self.semantic, **kwargs)

    def _bind_jit_args(self, fn: JITFunction, args, kwargs):
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as e:
            params = ", ".join(fn.arg_names)
            raise CompilationError(f"bad call to @jit function {fn.__name__}({params}): "
                                   f"{e}") from None
        bound.apply_defaults()
        return bound.arguments

    def call_jit(self, fn: JITFunction, args, kwargs, node):
        """Emit (once per specialisation) ``fn`` as a function and a ``call`` op to it."""
        bound = self._bind_jit_args(fn, args, kwargs)
        dyn_names, dyn_values, consts, structures = [], [], {}, {}
        for pname, value in bound.items():
            if has_tensor(value):
                # run-time values, also where the parameter is annotated tl.constexpr (Triton
                # accepts that too: the callee is compiled for run-time values there)
                start = len(dyn_values)
                structures[pname] = flatten(value, dyn_values)
                n = len(dyn_values) - start
                dyn_names += [pname] if n == 1 else [f"{pname}_{i}" for i in range(n)]
            else:
                consts[pname] = normalize_constant(value)
        arg_types = [v.type for v in dyn_values]
        key = self.ctx.callee_key(fn, arg_types, consts) + (
            tuple(sorted((p, template_key(t)) for p, t in structures.items())),)
        callee = self.ctx.callees.get(key)
        if callee is None:
            callee = Callee(function=None)
            self.ctx.callees[key] = callee
            name = self.ctx.callee_name(fn.__name__)
            gen = type(self)(fn, self.ctx)
            try:
                gen.generate_callee(name, dyn_names, arg_types, consts, callee, structures)
            except CompilationError as e:
                raise self._from_callee(e, fn, node) from None
        elif callee.template is None:
            raise CompilationError(f"recursive call of @jit function {fn.__name__} is not "
                                   "supported")
        func = callee.function
        op = self.builder.create("call", [v.handle for v in dyn_values],
                                 list(func.result_types), {"callee": func.name})
        return self._rebuild_return(callee.template, op.results)

    def _from_callee(self, err: CompilationError, fn, node) -> CompilationError:
        """``err`` (located in the callee) with the call site added, once."""
        if err.lineno is None or getattr(err, "call_site_added", False):
            return err
        loc = self.src.loc(node)
        new = CompilationError(f"{err.raw_message} (in @jit function {fn.__name__} called at "
                               f"{loc})", filename=err.filename, lineno=err.lineno,
                               col=err.col, source_line=err.source_line)
        new.call_site_added = True
        new.__cause__ = err.__cause__
        if hasattr(err, "internal_error"):
            new.internal_error = err.internal_error
        return new

    @staticmethod
    def _rebuild_return(template: ReturnTemplate, results):
        if template.kind == "none":
            return None
        return rebuild(template.structure, [tensor(r) for r in results])

    def inline_jit(self, fn, args, what: str):
        """Generate ``fn(*args)`` in place (combine functions of reductions and scans)."""
        fn = unwrap(fn)
        if not isinstance(fn, JITFunction):
            raise CompilationError(f"{what} needs a @naiad.jit combine function, got "
                                   f"{describe(fn)}")
        bound = self._bind_jit_args(fn, args, {})
        gen = type(self)(fn, self.ctx, builder=self.builder)
        return gen.generate_inline(bound)
