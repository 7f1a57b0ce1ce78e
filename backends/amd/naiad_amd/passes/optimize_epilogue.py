"""GPU-IR pass ``optimize_epilogue``: store an accumulator from its MFMA/WMMA layout.

Why: a ``store`` of ``convert_layout(acc)`` from a matrix layout to a blocked one moves the
whole accumulator through LDS (32 KiB for a 128x128 f32 tile) and adds two barriers, only so
the store can use the blocked layout's addresses. The addresses are cheap to compute in any
layout, so this pass recomputes the pointer (and mask) tensors in the accumulator's layout
instead and stores the accumulator's registers directly -- as Triton's AMD optimize-epilogue
does. The core's layout assignment already keeps a stored accumulator in its layout
(``MatrixLayout.stores_in_place``); this pass catches the conversions it did not avoid (a
kernel's IR built elsewhere, a conversion a later rewrite introduced).

Only pure, region-free address computations are recomputed: elementwise ops, ``splat``, ``broadcast``, ``expand_dims``, ``make_range``, ``constant`` and
conversions (looked through). Anything else leaves the store as it is.
"""
from __future__ import annotations

from naiad.backend import ELEMENTWISE, PURE, MatrixLayout, SliceLayout, linear_of, opdef
from naiad.ir import Module, Operation, TensorType

_SHAPE_OPS = frozenset({"splat", "broadcast", "expand_dims", "make_range", "constant"})


class _Stuck(Exception):
    pass


def optimize_epilogue(module: Module, ctx=None) -> bool:
    changed = False
    for fn in module.functions.values():
        for store in [op for op in fn.walk() if op.name == "store"]:
            changed |= _store_in_place(store)
        if changed:
            _drop_dead(fn)
    return changed


def _store_in_place(store: Operation) -> bool:
    cvt = store.operands[1].defining_op
    if cvt is None or cvt.name != "convert_layout":
        return False
    acc = cvt.operands[0]
    layout = getattr(acc.type, "layout", None)
    if not isinstance(layout, MatrixLayout):
        return False
    cache: dict = {}
    try:
        ptr = _remat(store.operands[0], layout, cache)
        mask = _remat(store.operands[2], layout, cache) if len(store.operands) > 2 else None
    except _Stuck:
        for clone in cache.values():  # nothing uses the partial clones yet
            if clone.defining_op is not None and not clone.uses:
                clone.defining_op.erase()
        return False
    store.set_operand(0, ptr)
    store.set_operand(1, acc)
    if mask is not None:
        store.set_operand(2, mask)
    old = cvt.results[0].type.layout
    dim = getattr(old, "order", (None,))[0]
    if dim is None or not _runs_along(linear_of(layout, acc.type.shape), dim):
        store.attrs["vec"] = 1  # the width was measured along the old layout's fastest dim
    return True


def _runs_along(ll, dim: int) -> bool:
    regs = ll.bases.get("register", ())
    return not regs or all(c == (1 if i == dim else 0) for i, c in enumerate(regs[0]))


def _remat(v, layout, cache):
    """``v`` computed in ``layout`` (a layout of ``v``'s rank), cloning its pure slice."""
    t = v.type
    if not isinstance(t, TensorType):
        return v
    if t.layout == layout:
        return v
    key = (id(v), layout)
    if key in cache:
        return cache[key]
    d = v.defining_op
    if d is None:
        raise _Stuck()
    if d.name == "convert_layout":
        out = _remat(d.operands[0], layout, cache)
    else:
        if d.regions or len(d.results) != 1 or not opdef(d.name).has(PURE):
            raise _Stuck()
        if d.name == "expand_dims":
            operands = [_remat(d.operands[0], SliceLayout(d.attrs["axis"], layout), cache)]
        elif d.name in _SHAPE_OPS or opdef(d.name).has(ELEMENTWISE):
            # broadcast keeps the rank (its operand takes the same layout); elementwise operands
            # have the result's shape; splat, make_range and constant have no tensor operand
            if any(isinstance(x.type, TensorType) and len(x.type.shape) != len(t.shape)
                   for x in d.operands):
                raise _Stuck()
            operands = [_remat(x, layout, cache) for x in d.operands]
        else:
            raise _Stuck()
        clone = d.clone(dict(zip(d.operands, operands)))
        clone.results[0].type = TensorType(t.shape, t.element, layout)
        block = d.parent
        block.insert(block.ops.index(d) + 1, clone)
        out = clone.results[0]
    cache[key] = out
    return out


def _drop_dead(fn) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(fn.walk())):
            if op.results and not op.regions and opdef(op.name).has(PURE) and \
                    all(not r.uses for r in op.results):
                op.erase()
                changed = True
