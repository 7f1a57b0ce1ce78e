"""Calls to Python builtins and host helpers from kernel code.

``min``/``max``/``abs`` work on compile-time values (folded) and on tensors (``tl.minimum``,
``tl.maximum``, ``tl.abs``); ``float``/``int``/``bool``/``len`` work on compile-time values
(``isinstance`` on any value); ``naiad.cdiv`` becomes ``tl.cdiv``; functions of the ``math`` module fold
on compile-time numbers. Everything else that is not ``@jit`` or a ``tl`` builtin is refused.
"""
from __future__ import annotations

import builtins

from ..errors import CompilationError
from ..language import math as lmath
from ..language.core import tensor
from ..language.iterators import range as dynamic_range
from .. import utils


def _has_tensor(args) -> bool:
    return any(isinstance(a, tensor) for a in args)


def _fold_minmax(name, args, kwargs, s):
    if kwargs:
        raise CompilationError(f"{name}() with keyword arguments is not supported in a kernel")
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if len(args) < 2:
        raise CompilationError(f"{name}() needs at least two values in a kernel")
    if not _has_tensor(args):
        return getattr(builtins, name)(*args)
    op = lmath.minimum if name == "min" else lmath.maximum
    result = args[0]
    for a in args[1:]:
        result = op(result, a, _semantic=s)
    return result


def _constexpr_only(fn, name):
    def call(args, kwargs, s):
        if _has_tensor(args) or _has_tensor(kwargs.values()):
            hint = " (use x.to(tl.float32) / x.to(tl.int32) to convert a tensor)" \
                if name in ("float", "int", "bool") else ""
            raise CompilationError(f"{name}() works only on compile-time values in a kernel, "
                                   f"not on tensors{hint}")
        return fn(*args, **kwargs)
    return call


def _hasattr(args, kwargs, s):
    """``hasattr(x, name)`` is answered while compiling; for a tensor, whether tensors have
    that attribute (``dtype``, ``shape``, methods such as ``to``)."""
    if len(args) != 2 or kwargs or not isinstance(args[1], str):
        raise CompilationError("hasattr() takes an object and a compile-time string")
    obj, name = args
    if isinstance(obj, tensor):
        return name in ("T", "type") or builtins.hasattr(tensor, name)
    return builtins.hasattr(obj, name)


def _abs(args, kwargs, s):
    if len(args) != 1 or kwargs:
        raise CompilationError("abs() takes exactly one argument")
    if isinstance(args[0], tensor):
        return lmath.abs(args[0], _semantic=s)
    return builtins.abs(args[0])


def _print(args, kwargs, s):
    """``print(...)`` in a kernel is ``tl.device_print`` (as in Triton): a leading string is
    the prefix."""
    from ..language.debug import device_print

    if set(kwargs) - {"hex"}:
        raise CompilationError(f"print() in a kernel is tl.device_print, which takes no "
                               f"{sorted(set(kwargs) - {'hex'})} argument")
    args = list(args)
    prefix = args.pop(0) if args and isinstance(args[0], str) else ""
    return device_print(prefix, *args, _semantic=s, **kwargs)


def _range(args, kwargs, s):
    return dynamic_range(*args, **kwargs)


def _cdiv(args, kwargs, s):
    return lmath.cdiv(*args, _semantic=s, **kwargs)


_HANDLERS = {
    builtins.min: lambda a, k, s: _fold_minmax("min", a, k, s),
    builtins.max: lambda a, k, s: _fold_minmax("max", a, k, s),
    builtins.abs: _abs,
    builtins.print: _print,
    builtins.range: _range,
    utils.cdiv: _cdiv,
    utils.next_power_of_2: _constexpr_only(utils.next_power_of_2, "next_power_of_2"),
}
for _name in ("float", "int", "bool", "len", "tuple", "list", "getattr",
              "zip", "enumerate", "str", "type"):
    _HANDLERS[getattr(builtins, _name)] = _constexpr_only(getattr(builtins, _name), _name)
_HANDLERS[builtins.hasattr] = _hasattr
# a type test is answered while compiling, also for tensors (isinstance(x, tl.tensor))
_HANDLERS[builtins.isinstance] = lambda args, kwargs, s: builtins.isinstance(*args, **kwargs)


def host_handler(fn):
    """The handler for calling ``fn`` from a kernel, or None when ``fn`` is not allowed."""
    try:
        handler = _HANDLERS.get(fn)
    except TypeError:  # unhashable callable
        handler = None
    if handler is not None:
        return handler
    if getattr(fn, "__module__", None) == "math" and callable(fn):
        return _constexpr_only(fn, f"math.{fn.__name__}")
    return None
