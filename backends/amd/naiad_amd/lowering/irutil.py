"""Small llvmlite.ir helpers shared by the TargetInfo and the math library.

llvmlite.ir has no ``bfloat`` type and no registry of intrinsic declarations, so both live here:
every emitter asks :func:`intrinsic` for a declaration instead of creating duplicates.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import F16, F32, F64, I1, I16, I32, I64, declare  # noqa: F401 - re-exported


class BFloat16Type(ir.types.Type):
    """LLVM's ``bfloat`` type, which llvmlite.ir lacks; prints as ``bfloat``."""

    null = "0.0"
    intrinsic_name = "bf16"

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, BFloat16Type)

    def __hash__(self):
        return hash("bfloat")


BF16 = BFloat16Type()

#: naiad float element names -> the LLVM type naiad_amd computes them in.
FLOAT_TYPES = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}


def is_bf16(ty) -> bool:
    return str(ty) == "bfloat"


def intrinsic(builder: ir.IRBuilder, name: str, ret, args) -> ir.Function:
    """The declaration of ``name`` in the builder's module, created on first use."""
    return declare(builder.module, name, ret, args)


def call_intrinsic(builder: ir.IRBuilder, name: str, ret, args, *, name_hint: str = ""):
    """Declare (once) and call the intrinsic ``name`` with ``args``; returns the result."""
    fn = intrinsic(builder, name, ret, [a.type for a in args])
    return builder.call(fn, list(args), name=name_hint)
