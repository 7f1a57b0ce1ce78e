"""Memory access: ``load``, ``store`` and the atomics, through scalar or block pointers."""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_bool, builtin, tensor, unwrap
from .semantics import describe, is_number

#: load modifiers (".cs": streaming, as Triton accepts), then the store-only ones
LOAD_CACHE_MODIFIERS = ("", ".ca", ".cg", ".cv", ".cs")
CACHE_MODIFIERS = LOAD_CACHE_MODIFIERS + (".wb", ".wt")
EVICTION_POLICIES = ("", "evict_first", "evict_last", "evict_normal")
MEM_SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
MEM_SCOPES = ("gpu", "cta", "sys")


def _pointer(ptr, what: str) -> tensor:
    ptr = unwrap(ptr)
    if not isinstance(ptr, tensor) or not ptr.type.scalar.is_pointer:
        raise CompilationError(f"{what} needs a pointer (or a tensor of pointers) as its first "
                               f"argument, got {describe(ptr)}")
    return ptr


def _choice(value, allowed, what: str) -> str:
    value = unwrap(value)
    if value is None:
        value = ""
    if value not in allowed:
        raise CompilationError(f"{what} must be one of {', '.join(repr(a) for a in allowed)}, "
                               f"got {value!r}")
    return value


def _fit_to_pointer(s, ptr: tensor, value, what: str) -> tensor:
    """``value`` broadcast to ``ptr``'s shape (never widening a scalar pointer)."""
    value = unwrap(value)
    if is_number(value) and not isinstance(value, bool):
        t = irt.with_element(ptr.type, ptr.type.scalar.pointee)
        if not t.scalar.is_pointer and not (t.scalar.is_int and isinstance(value, float)):
            try:
                return s.constant(value, t)  # a number directly in the pointee type
            except CompilationError:
                pass  # out of range: convert like a typed value below
    value = s.to_tensor(value)
    if not ptr.is_block() and value.is_block():
        raise CompilationError(f"{what} cannot be a tensor ({value.type}) when the pointer is a "
                               f"scalar ({ptr.type})")
    return s.broadcast_to(value, ptr.shape)


def _mask(s, ptr: tensor, mask, what: str) -> tensor | None:
    mask = unwrap(mask)
    if mask is None:
        return None
    if isinstance(mask, bool):
        return s.full(ptr.shape, mask, irt.i1)
    if not isinstance(mask, tensor) or mask.type.scalar != irt.i1:
        raise CompilationError(f"{what}'s mask must be a boolean (i1) value, got "
                               f"{describe(mask)}")
    return _fit_to_pointer(s, ptr, mask, f"{what}'s mask")


def _attrs(**kv):
    return {k: v for k, v in kv.items() if v not in ("", None, False)}


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False, _semantic=None):
    """Load from ``pointer``; lanes where ``mask`` is false give ``other`` (undefined if absent)."""
    s = _semantic
    ptr = _pointer(pointer, "tl.load")
    if unwrap(boundary_check) or unwrap(padding_option):
        raise CompilationError("boundary_check/padding_option belong to block pointers, which "
                               "naiad does not support; use mask= and other=")
    cache = _choice(cache_modifier, LOAD_CACHE_MODIFIERS, "cache_modifier")
    evict = _choice(eviction_policy, EVICTION_POLICIES, "eviction_policy")
    volatile = as_bool(volatile, "volatile")
    m = _mask(s, ptr, mask, "tl.load")
    elem = ptr.type.scalar.pointee
    operands = [ptr]
    if m is not None:
        operands.append(m)
    if unwrap(other) is not None:
        if m is None:
            raise CompilationError("tl.load: `other` needs a `mask` (it fills the masked-off "
                                   "lanes)")
        o = s.cast(_fit_to_pointer(s, ptr, other, "tl.load's other"), elem)
        operands.append(o)
    rt = irt.with_element(ptr.type, elem)
    return s.op("load", operands, rt, **_attrs(cache_modifier=cache, eviction_policy=evict,
                                                 volatile=volatile))


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="",
          _semantic=None):
    """Store ``value`` (converted to the pointee type) where ``mask`` is true."""
    s = _semantic
    ptr = _pointer(pointer, "tl.store")
    if unwrap(boundary_check):
        raise CompilationError("boundary_check belongs to block pointers, which naiad does not "
                               "support; use mask=")
    cache = _choice(cache_modifier, ("", ".wb", ".cg", ".cs", ".wt"), "cache_modifier")
    evict = _choice(eviction_policy, EVICTION_POLICIES, "eviction_policy")
    elem = ptr.type.scalar.pointee
    val = s.cast(_fit_to_pointer(s, ptr, value, "tl.store's value"), elem)
    operands = [ptr, val]
    m = _mask(s, ptr, mask, "tl.store")
    if m is not None:
        operands.append(m)
    s.builder.create("store", [o.handle for o in operands], [],
                     _attrs(cache_modifier=cache, eviction_policy=evict))
    return None


_NARROW = (irt.i1, irt.i8, irt.i16, irt.u8, irt.u16)


def _atomic_operands(s, kind, pointer, val, mask, sem, scope):
    what = f"tl.atomic_{kind}"
    ptr = _pointer(pointer, what)
    elem = ptr.type.scalar.pointee
    if elem.is_pointer:
        raise CompilationError(f"{what} does not apply to pointers to pointers")
    if elem in _NARROW or elem.is_float and elem.is_fp8:
        raise CompilationError(f"{what} does not support {elem} elements (32- and 64-bit "
                               "only, 16-bit floats for add)")
    if elem in (irt.f16, irt.bf16) and kind != "add":
        raise CompilationError(f"{what} does not support {elem} elements (only atomic_add "
                               "does)")
    if kind in ("and", "or", "xor") and not elem.is_int:
        raise CompilationError(f"{what} needs integer elements, got {elem}")
    v = s.cast(_fit_to_pointer(s, ptr, val, f"{what}'s value"), elem)
    m = _mask(s, ptr, mask, what)
    attrs = {"sem": _choice(sem or "acq_rel", MEM_SEMANTICS, "sem"),
             "scope": _choice(scope or "gpu", MEM_SCOPES, "scope")}
    return ptr, v, m, attrs


def _make_rmw(kind: str):
    def atomic(pointer, val, mask=None, sem=None, scope=None, _semantic=None):
        ptr, v, m, attrs = _atomic_operands(_semantic, kind, pointer, val, mask, sem, scope)
        operands = [ptr, v] + ([m] if m is not None else [])
        return _semantic.op("atomic_rmw", operands, v.type, kind=kind, **attrs)

    atomic.__name__ = f"atomic_{kind}"
    atomic.__qualname__ = atomic.__name__
    atomic.__doc__ = (f"Atomically apply `{kind}` of ``val`` at ``pointer`` (where ``mask``); "
                      "returns the old values.")
    return builtin(atomic)


atomic_add = _make_rmw("add")
atomic_max = _make_rmw("max")
atomic_min = _make_rmw("min")
atomic_xchg = _make_rmw("xchg")
atomic_and = _make_rmw("and")
atomic_or = _make_rmw("or")
atomic_xor = _make_rmw("xor")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None, _semantic=None):
    """Atomically store ``val`` at ``pointer`` where the current value equals ``cmp``; returns
    the old values."""
    s = _semantic
    ptr = _pointer(pointer, "tl.atomic_cas")
    elem = ptr.type.scalar.pointee
    if elem.is_pointer or elem in (irt.i1, irt.i8, irt.u8) or elem.is_float and elem.is_fp8:
        raise CompilationError(f"tl.atomic_cas does not support {elem} elements")
    c = s.cast(_fit_to_pointer(s, ptr, cmp, "tl.atomic_cas's cmp"), elem)
    v = s.cast(_fit_to_pointer(s, ptr, val, "tl.atomic_cas's val"), elem)
    attrs = {"sem": _choice(sem or "acq_rel", MEM_SEMANTICS, "sem"),
             "scope": _choice(scope or "gpu", MEM_SCOPES, "scope")}
    return s.op("atomic_cas", [ptr, c, v], v.type, **attrs)


@builtin
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None, _semantic=None):
    """Wait until the value at ``pointer`` (each element of a block of pointers to 16/32/64-bit
    integers) equals ``expected_value``; returns i1 per element: true where it was seen, false
    where the shared ``timeout_ns`` budget ran out first (each element is loaded at least once).
    ``sem``: ``"acquire"`` (default) or ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"``,
    ``"sys"``. The reference executor runs programs one after another: a poll no earlier
    program satisfied is an error there without a timeout (it would never end)."""
    s = _semantic
    ptr = _pointer(pointer, "tl.atomic_poll")
    elem = ptr.type.scalar.pointee
    if elem.is_pointer or not elem.is_int or elem.bitwidth not in (16, 32, 64):
        raise CompilationError("atomic_poll only supports integer elements with width "
                               f"{{16, 32, 64}}, got {elem}")
    expected = s.cast(_fit_to_pointer(s, ptr, expected_value, "tl.atomic_poll's expected value"),
                      elem)
    sem = unwrap(sem) or "acquire"
    if sem not in ("acquire", "relaxed"):
        raise CompilationError(f"atomic_poll only supports acquire and relaxed semantics, "
                               f"got {sem!r}")
    attrs = {"sem": sem, "scope": _choice(scope or "gpu", MEM_SCOPES, "scope")}
    operands = [ptr, expected]
    timeout = unwrap(timeout_ns)
    if timeout is not None:
        if is_number(timeout) and (isinstance(timeout, float) or timeout < 0):
            raise CompilationError(f"atomic_poll timeout_ns must be a non-negative integer, "
                                   f"got {timeout!r}")
        t = s.to_tensor(timeout)
        if t.is_block() or not t.type.scalar.is_int:
            raise CompilationError(f"atomic_poll timeout_ns must be a scalar integer, got "
                                   f"{describe(t)}")
        operands.append(s.cast(t, irt.u64))
    return s.op("atomic_poll", operands, irt.with_element(ptr.type, irt.i1), **attrs)


tensor.atomic_poll = atomic_poll
