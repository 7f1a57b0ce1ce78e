"""Device-side printing and assertions on NVIDIA GPUs, through the CUDA driver's built-in
``vprintf(format, packed args)`` and ``__assertfail(message, file, line, function, char size)``
(both resolved by ptxas; no library to link).
"""
from __future__ import annotations

from typing import Sequence

from llvmlite import ir

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
GENERIC = ir.PointerType()


def _declare(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    return fn


def _string(builder: ir.IRBuilder, text: str):
    """A generic pointer to a NUL-terminated constant string in global memory."""
    module = builder.module
    data = bytearray(text.encode("ascii", "replace")) + b"\0"
    key = f"naiad_str_{abs(hash(bytes(data))) & 0xFFFFFFFFFFFF:x}_{len(data)}"
    g = module.globals.get(key)
    if g is None:
        ty = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(module, ty, key, addrspace=1)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, data)
        g.type = ir.PointerType(addrspace=1)   # the module uses opaque pointers
    return builder.addrspacecast(g, GENERIC)


def _entry_alloca(builder: ir.IRBuilder, size: int):
    """``size`` bytes (8-aligned) of stack allocated at the top of the function (one slot, not
    one per execution), as an opaque pointer."""
    entry = builder.function.entry_basic_block
    top = ir.IRBuilder(entry)
    if entry.instructions:
        top.position_before(entry.instructions[0])
    buf = top.alloca(ir.ArrayType(I8, size))
    buf.align = 8
    buf.type = GENERIC   # the module uses opaque pointers
    return buf


def _size(ty: ir.Type) -> int:
    return 8 if isinstance(ty, ir.DoubleType) else ty.width // 8


def vprintf(builder: ir.IRBuilder, fmt: str, args: Sequence) -> None:
    """``printf(fmt, args...)``: the arguments are packed, each naturally aligned, into a
    stack buffer as C varargs would be."""
    fn = _declare(builder.module, "vprintf", I32, [GENERIC, GENERIC])
    packed = ir.Constant(GENERIC, None)
    if args:
        offsets, end = [], 0
        for a in args:
            n = _size(a.type)
            end = (end + n - 1) // n * n
            offsets.append(end)
            end += n
        packed = _entry_alloca(builder, max(end, 8))
        for a, off in zip(args, offsets):
            builder.store(a, builder.gep(packed, [ir.Constant(I32, off)], source_etype=I8))
    builder.call(fn, [_string(builder, fmt), packed])


def assert_fail(builder: ir.IRBuilder, message: str) -> None:
    """Report ``message`` (it starts with ``file:line``) and abort the launch."""
    fn = _declare(builder.module, "__assertfail", ir.VoidType(),
                  [GENERIC, GENERIC, I32, GENERIC, I64])
    where, _, _ = message.partition(": ")
    filename, _, line = where.rpartition(":")
    line_no = int(line) if line.isdigit() else 0
    builder.call(fn, [_string(builder, message), _string(builder, filename or "<kernel>"),
                      ir.Constant(I32, line_no), _string(builder, builder.function.name),
                      ir.Constant(I64, 1)])
