"""Run-time debugging, compiler hints and escapes: ``tl.device_print``, ``tl.device_assert``,
``tl.debug_barrier``, ``tl.assume``, ``tl.inline_asm_elementwise``.

Device asserts are checked only in debug mode (as Triton's, which needs ``TRITON_DEBUG``):
``NAIAD_DEBUG=1`` in the environment, or a kernel whose ``@jit`` has ``debug=True``. Outside
debug mode a run-time condition is dropped; a compile-time false condition is always an error.
"""
from __future__ import annotations

import os
import string

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_bool, as_dtype, as_int, builtin, tensor, unwrap
from .semantics import describe


def debug_mode(fn=None) -> bool:
    """Whether device asserts are compiled in: ``NAIAD_DEBUG`` set to anything but ``0``/empty,
    or ``debug=True`` on the @jit function."""
    if os.environ.get("NAIAD_DEBUG", "0").strip().lower() not in ("", "0", "false", "no"):
        return True
    return bool(getattr(fn, "debug", False))


def _location(s) -> str:
    """``file:line`` of the kernel code being generated (a SourceLoc), or empty."""
    loc = s.builder.loc
    return f"{loc.filename}:{loc.line}" if loc is not None else ""


@builtin
def device_print(prefix, *args, hex=False, _semantic=None):
    """Print each value's elements at run time, one line per element:
    ``pid (x, y, z) idx (i, j) prefix: value`` (``prefix (operand k): value`` with several)."""
    s = _semantic
    prefix = unwrap(prefix)
    if not isinstance(prefix, str):
        raise CompilationError(f"device_print's prefix must be a string literal, got "
                               f"{describe(prefix)}")
    if any(ch not in string.printable for ch in prefix):
        raise CompilationError(f"{prefix!r} is not an ascii string")
    values = []
    for a in args:
        v = s.to_tensor(a)
        if v.type.scalar.is_pointer:
            raise CompilationError("device_print cannot print pointers")
        values.append(v.handle)
    s.builder.create("print", values, [], {"prefix": prefix, "hex": bool(unwrap(hex))})
    return None


@builtin
def device_assert(cond, msg="", mask=None, _semantic=None):
    """Fail the launch, naming this line and ``msg``, where ``cond`` is false (and ``mask``,
    if given, is true). Checked in debug mode only (see the module docstring); a compile-time
    false condition is an error while compiling."""
    s = _semantic
    cond, msg = unwrap(cond), unwrap(msg)
    if not isinstance(msg, str):
        raise CompilationError(f"device_assert's message must be a string, got {describe(msg)}")
    if not isinstance(cond, tensor):
        if not cond:
            raise CompilationError("device_assert failed" + (f": {msg}" if msg else ""))
        return None
    if not debug_mode(getattr(s.codegen, "fn", None)):
        return None
    ok = s.to_bool(cond)
    m = unwrap(mask)
    if m is not None:
        ok, m = s.broadcast_all(ok, s.to_bool(m))
        ok = s.logical("or", ok, s.unary("not", m))
    where = _location(s)
    text = f"{where}: device_assert failed" if where else "device_assert failed"
    s.builder.create("assert", [ok.handle], [], {"message": text + (f": {msg}" if msg else "")})
    return None


@builtin
def debug_barrier(_semantic=None):
    """A barrier across the threads of one program (orders shared-memory accesses); programs
    never wait for each other."""
    _semantic.builder.create("debug_barrier", [], [], {})
    return None


@builtin
def assume(cond, _semantic=None):
    """Tell the compiler ``cond`` holds. A compile-time false condition is an error; a run-time
    one (a boolean scalar or tensor) becomes an ``assume`` op, from which axis info learns facts
    such as ``x >= 0`` (see ``naiad.passes.axis_info``). A false assumption is undefined
    behaviour on a GPU, as in Triton; the reference executor ignores the op."""
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        if cond.type.scalar != irt.i1:
            raise CompilationError(f"tl.assume needs a boolean condition, got {cond.type}")
        _semantic.builder.create("assume", [cond.handle], [], {})
        return None
    if not cond:
        raise CompilationError("tl.assume: the condition is false at compile time")
    return None


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _semantic=None):
    """Run the target's assembly ``asm`` on each element (each ``pack`` elements) of the
    broadcast ``args``: LLVM inline-asm ``constraints`` list the outputs (``=r``) then the
    inputs. ``dtype`` is the result dtype, or a tuple of dtypes for several results. GPU
    backends only (NVIDIA PTX, AMD GCN); the reference executor reports an error naming the
    kernel line when it reaches one."""
    s = _semantic
    asm, constraints = unwrap(asm), unwrap(constraints)
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise CompilationError("inline_asm_elementwise needs the assembly and the constraints "
                               "as strings")
    items = unwrap(args)
    items = list(items) if isinstance(items, (tuple, list)) else [items]
    values = s.broadcast_all(*[s.to_tensor(a) for a in items]) if items else []
    dts = unwrap(dtype)
    many = isinstance(dts, (tuple, list))
    dts = [as_dtype(d, "inline_asm_elementwise's dtype") for d in (dts if many else [dts])]
    shape = values[0].shape if values else ()
    rtypes = [irt.tensor(shape, d.to_ir()) if shape else d.to_ir() for d in dts]
    where = _location(s)
    op = s.builder.create("inline_asm", [v.handle for v in values], rtypes,
                          {"asm": asm, "constraints": constraints,
                           "pure": as_bool(is_pure, "is_pure"),
                           "pack": as_int(pack, "pack"), "where": where})
    results = [tensor(r) for r in op.results]
    return tuple(results) if many else results[0]
