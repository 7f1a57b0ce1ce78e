"""The frontend: a @jit function's Python AST -> tile IR.

``generate(fn, signature, constexprs, specialization)`` returns a :class:`~naiad.ir.Module`
whose function ``fn.__name__`` is the kernel (attrs ``{"kernel": True}``); @jit functions it
calls become further functions (``{"kernel": False}``) reached by ``call`` ops.
"""
from __future__ import annotations

from ..errors import CompilationError
from ..ir.core import Module
from .codegen import CodeGenerator
from .context import ModuleContext
from .source import SourceLoc

__all__ = ["generate", "SourceLoc"]


def generate(fn, signature: dict[str, str], constexprs: dict | None = None,
             specialization: dict[str, dict] | None = None) -> Module:
    """Compile ``fn`` (a JITFunction) to tile IR.

    ``signature`` maps every non-constexpr parameter to a type string (``"*fp32"``, ``"i32"``);
    ``constexprs`` gives the compile-time parameters' values; ``specialization`` maps parameter
    names to facts (``{"divisibility": 16}``, ``{"equal_to": 1}``) stored in the kernel's
    ``arg_attrs``. Mistakes in the kernel raise :class:`~naiad.errors.CompilationError`.
    """
    from ..kernel import KernelDefinition as JITFunction

    if not isinstance(fn, JITFunction):
        raise CompilationError(f"generate() needs a @naiad.jit function, got {fn!r}")
    ctx = ModuleContext(fn.__name__)
    CodeGenerator(fn, ctx).generate_kernel(dict(signature or {}), dict(constexprs or {}),
                                           dict(specialization or {}))
    return ctx.module
