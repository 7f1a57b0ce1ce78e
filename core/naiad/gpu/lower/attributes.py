"""Kernel attributes from the ``naiad_llvm_attributes`` hook, set on the llvmlite module.

The plugins' :class:`~naiad.plugins.LLVMAttributes` are merged in hook order, then the kernel's
``ir.Function`` gets the calling convention and string attributes and the ``ir.Module`` the
module flags and named metadata, through :mod:`naiad.gpu.llvm` (no edits of printed IR text).
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import CodegenError
from ...plugins.contract import KernelDescription, LLVMAttributes  # noqa: F401 - re-exported
from .. import llvm as L


def merge_attributes(answers) -> LLVMAttributes:
    """Merge the hook's answers in order (later plugins win on the same key). naiad's plugin
    manager has checked each answer already (naming the plugin); a bare pluggy manager has not."""
    out = LLVMAttributes()
    for answer in answers or ():
        if answer is None:
            continue
        if not isinstance(answer, LLVMAttributes):
            raise CodegenError(f"naiad_llvm_attributes must return naiad.plugins.LLVMAttributes, "
                               f"got {type(answer).__name__} {answer!r}")
        out.merge(answer)
    return out


KernelAttributes = LLVMAttributes  # the name tests and older code use


def apply_attributes(module: ir.Module, kernel: str, attrs: LLVMAttributes,
                     default_cc: str) -> None:
    """Put the calling convention, function and parameter attributes on ``kernel``'s
    ``ir.Function`` and add module flags and named metadata to ``module``."""
    fn = module.globals.get(kernel)
    if not isinstance(fn, ir.Function):
        raise CodegenError(f"kernel @{kernel} not found in the generated LLVM module")
    cc = attrs.calling_convention or default_cc
    if cc:
        fn.calling_convention = cc
    for key, value in sorted(attrs.function.items()):
        L.set_string_attribute(fn, key, value)
    for arg in fn.args:
        for name in attrs.parameter_attributes:
            arg.add_attribute(name)
    for name, value in sorted(attrs.module_flags.items()):
        behavior, val = value if isinstance(value, (tuple, list)) else (1, value)
        L.add_module_flag(module, name, val, behavior)
    for name, tuples in sorted(attrs.metadata.items()):
        for tup in tuples:
            L.add_named_metadata(module, name, tup, fn)
