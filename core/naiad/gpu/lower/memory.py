"""Loads and stores: vectorized along the contiguous dimension, masked, one owner per element.

A tensor access moves ``vec`` consecutive registers at once when the layout's leading register
bases step along one dimension and the op's ``vec`` attribute (set by layout assignment from
axis info: contiguity, 16-byte alignment and mask constancy) allows it. A masked access branches
around the memory operation (``TargetInfo.masked_load``/``masked_store`` may predicate instead);
``other`` is selected per element. Stores are done by the elements' owners only: a broadcast
element (held by several threads or registers) is written once. A scalar store is done by
thread 0. ``i1`` is a byte in memory.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .context import KernelLowering, lowers
from .types import I1, I8, i32, pack_vector


def vector_run(ll, limit: int) -> int:
    """Consecutive registers holding consecutive elements of one dimension (a power of two,
    at most ``limit``)."""
    regs = ll.bases.get("register", ())
    if not regs:
        return 1
    dims = [d for d, c in enumerate(regs[0]) if c]
    if len(dims) != 1:
        return 1
    d = dims[0]

    def unit(value):
        return tuple(value if i == d else 0 for i in range(len(regs[0])))

    k = 0
    while k < len(regs) and regs[k] == unit(1 << k) and (2 << k) <= limit:
        k += 1
    return 1 << k


def _and(b, x, y):
    if x is None:
        return y
    if y is None:
        return x
    return b.and_(x, y)


def _is_zero(value) -> bool:
    """An LLVM constant whose bits are all zero (+0.0, 0, null)."""
    if not isinstance(value, ir.Constant):
        return False
    c = value.constant
    if c is None:
        return True
    if isinstance(c, float):
        return c == 0.0 and math.copysign(1.0, c) > 0
    return isinstance(c, int) and c == 0


def _load_value(kl: KernelLowering, ptr, ty, pred, align, cache: str = ""):
    b = kl.b
    if cache:
        value = kl.ti.cached_load(b, ptr, ty, pred, align, cache)
        if value is not None:
            return value
    if pred is None:
        return b.load(ptr, typ=ty, align=align)
    return kl.ti.masked_load(b, ptr, ty, pred, align)


def _store_value(kl: KernelLowering, ptr, value, pred, align, cache: str = "") -> None:
    b = kl.b
    if cache and kl.ti.cached_store(b, ptr, value, pred, align, cache):
        return
    if pred is None:
        b.store(value, ptr, align=align)
    else:
        kl.ti.masked_store(b, ptr, value, pred, align)


def _to_register(kl: KernelLowering, v, lt):
    if lt == I1:
        return kl.b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    return v


def _to_memory(kl: KernelLowering, v):
    return kl.b.zext(v, I8) if v.type == I1 else v


def _size(mt) -> int:
    if isinstance(mt, ir.PointerType):
        return 8
    if isinstance(mt, ir.IntType):
        return max(mt.width // 8, 1)
    return {"half": 2, "float": 4, "double": 8}[str(mt)]


@lowers("load")
def lower_load(kl: KernelLowering, op) -> None:
    b = kl.b
    ptr, res = op.operands[0], op.results[0]
    mask = kl.get(op.operands[1]) if len(op.operands) > 1 else None
    other = kl.get(op.operands[2]) if len(op.operands) > 2 else None
    elem = res.type.scalar
    mt, lt = kl.mtype(elem), kl.ltype(elem)
    size = _size(mt)
    ptrs = kl.get(ptr)
    n = len(ptrs)
    vec = vector_run(kl.linear(ptr), int(op.attrs.get("vec", 1))) if n > 1 else 1
    # a masked-off load is zero (TargetInfo.masked_load's contract): `other = 0` needs no select
    if other is not None and all(_is_zero(o) for o in other):
        other = None
    cache = op.attrs.get("cache_modifier", "")
    out: list = [None] * n
    for r in range(0, n, vec):
        ty = mt if vec == 1 else ir.VectorType(mt, vec)
        loaded = _load_value(kl, ptrs[r], ty, mask[r] if mask else None, size * vec, cache)
        for i in range(vec):
            v = loaded if vec == 1 else b.extract_element(loaded, i32(i))
            v = _to_register(kl, v, lt)
            if other is not None:
                # the mask is uniform over the vector (vec was chosen so): one predicate
                v = b.select(mask[r], v, other[r + i])
            out[r + i] = v
    kl.set(res, out)


@lowers("store")
def lower_store(kl: KernelLowering, op) -> None:
    b = kl.b
    ptr, value = op.operands[0], op.operands[1]
    mask = kl.get(op.operands[2]) if len(op.operands) > 2 else None
    elem = value.type.scalar
    mt = kl.mtype(elem)
    size = _size(mt)
    ptrs, vals = kl.get(ptr), kl.get(value)
    cache = op.attrs.get("cache_modifier", "")
    if not ptr.type.shape:
        pred = _and(b, kl.first_thread_pred(), mask[0] if mask else None)
        _store_value(kl, ptrs[0], _to_memory(kl, vals[0]), pred, size, cache)
        return
    ll = kl.linear(ptr)
    owner = kl.owner_pred(ll)
    owners = set(kl.owner_registers(ll))
    n = len(ptrs)
    vec = vector_run(ll, int(op.attrs.get("vec", 1))) if n > 1 else 1
    for r in range(0, n, vec):
        if r not in owners:
            continue
        pred = _and(b, mask[r] if mask else None, owner)
        if vec == 1:
            v = _to_memory(kl, vals[r])
        else:
            v = pack_vector(b, [_to_memory(kl, x) for x in vals[r:r + vec]],
                            ir.VectorType(mt, vec))
        _store_value(kl, ptrs[r], v, pred, size * vec, cache)
