"""GPU-IR pass ``canonicalize_pointers``: every tensor load/store address as one uniform base
pointer plus one i32 offset tensor, ``addptr(splat(base), offsets)``.

Why: AMD's buffer instructions address memory as a base in SGPRs (one per wave) plus a 32-bit
per-lane offset. Kernels build addresses as chains -- ``splat(p)``, ``addptr`` with offsets that
mix uniform and per-element parts (``pid * BLOCK + arange``), ``expand_dims``/``broadcast`` of 2-D
tiles -- so this pass walks each load's/store's pointer chain back to its splatted base and
rebuilds it with

* every *uniform* (scalar) offset moved into the base (``addptr`` on the scalar pointer, 64-bit
  exact): ``splat(s)`` terms of ``add``s, and constant tensors;
* every per-element offset kept as an i32 tensor in the pointer's layout (``expand_dims``,
  ``broadcast`` and ``convert_layout`` of the pointer become the same op on the offsets), summed.

Only accesses that ``convert_to_buffer_ops`` will then turn into buffer instructions are
rewritten -- their summed offsets provably lie in ``[0, 2**31)`` bytes
(:mod:`naiad_amd.passes.buffer_range`). Elsewhere the rewrite would only cost instructions: for a
``global_*`` access LLVM folds uniform offsets into the 64-bit address arithmetic better than
into a separate scalar base (the fp16 matmul's K loop grows from 695 to 748 instructions).
Chains it cannot follow (pointers carried by loops, selected, loaded, or offset by non-i32
integers) are left alone too. The old pointer ops are
deleted when nothing else uses them. The rewrite changes no address: in the original program
``p + (s + t)`` and here ``(p + s) + t`` name the same element whenever the i32 sum ``s + t``
does not overflow, and where it would, the original access was already outside any tensor.
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.backend import PURE
from naiad.ir import OPS, Module, Operation, TensorType, Value, i32

from .buffer_range import bytes_in_range, element_bytes, has_cache_hints, sum_range
from .offset_range import RangeAnalysis

#: shape ops that move a pointer tensor without changing its addresses
_SHAPE_OPS = ("broadcast", "expand_dims", "convert_layout")
#: operand index of the address of each access op
_ADDRESS = {"load": 0, "store": 0}


@dataclass
class Split:
    """A pointer tensor as ``base + sum(scalars) + sum(tensors)`` (element offsets)."""

    base: Value
    scalars: list
    tensors: list


class _Rewriter:
    """Builds the new ops right before the access (``anchor``) so they dominate it."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def emit(self, name, operands, result_type, attrs=None) -> Value:
        op = Operation(name, operands, [result_type], attrs or {}, loc=self.anchor.loc)
        self.anchor.parent.insert_before(self.anchor, op)
        return op.result

    # -- offsets -----------------------------------------------------------------------------
    def offset_parts(self, t: Value):
        """(uniform scalar parts, per-element tensor parts) of the i32 offset tensor ``t``."""
        op = t.defining_op
        if op is None:
            return [], [t]
        if op.name == "splat" and op.operands[0].type == i32:
            return [op.operands[0]], []
        if op.name == "constant" and isinstance(op.attrs.get("value"), int):
            return [self.emit("constant", [], i32, {"value": op.attrs["value"]})], []
        if op.name == "add":
            s1, t1 = self.offset_parts(op.operands[0])
            s2, t2 = self.offset_parts(op.operands[1])
            return s1 + s2, t1 + t2
        if op.name in _SHAPE_OPS:
            inner = op.operands[0]
            scalars, tensors = self.offset_parts(inner)
            if tensors == [inner] and not scalars:
                return [], [t]
            return scalars, [self.emit(op.name, [x], t.type, dict(op.attrs)) for x in tensors]
        return [], [t]

    # -- pointers ----------------------------------------------------------------------------
    def split(self, p: Value) -> Split | None:
        op = p.defining_op
        if op is None:
            return None
        if op.name == "splat":
            return Split(op.operands[0], [], [])
        if op.name == "addptr":
            inner = self.split(op.operands[0])
            off = op.operands[1]
            if inner is None or not isinstance(off.type, TensorType) or off.type.element != i32:
                return None
            scalars, tensors = self.offset_parts(off)
            return Split(inner.base, inner.scalars + scalars, inner.tensors + tensors)
        if op.name in _SHAPE_OPS:
            inner = self.split(op.operands[0])
            if inner is None:
                return None
            offset_type = p.type.with_element(i32)
            moved = [self.emit(op.name, [t], offset_type, dict(op.attrs)) for t in inner.tensors]
            return Split(inner.base, inner.scalars, moved)
        return None

    def rebuild(self, p: Value, split: Split) -> Value:
        base = split.base
        for s in split.scalars:
            base = self.emit("addptr", [base, s], base.type)
        offset_type = p.type.with_element(i32)
        if split.tensors:
            offsets = split.tensors[0]
            for t in split.tensors[1:]:
                offsets = self.emit("add", [offsets, t], offset_type)
        else:
            offsets = self.emit("constant", [], offset_type, {"value": 0})
        return self.emit("addptr", [self.emit("splat", [base], p.type), offsets], p.type)


def is_canonical(p: Value) -> bool:
    """``p`` is ``addptr(splat(scalar pointer), i32 offsets)``."""
    op = p.defining_op
    if op is None or op.name != "addptr":
        return False
    base = op.operands[0].defining_op
    return (base is not None and base.name == "splat"
            and op.operands[1].type.scalar == i32)


def canonical_parts(p: Value):
    """(base, offsets) of a canonical pointer tensor (see :func:`is_canonical`)."""
    op = p.defining_op
    return op.operands[0].defining_op.operands[0], op.operands[1]


def erase_dead(values) -> None:
    """Delete the pure ops that defined ``values`` once unused, and their dead inputs in turn."""
    work = [v.defining_op for v in values if v.defining_op is not None]
    while work:
        op = work.pop()
        d = OPS.get(op.name)
        if op.parent is None or d is None or PURE not in d.traits or any(r.uses for r in op.results):
            continue
        inputs = list(op.operands)
        op.erase()
        work += [v.defining_op for v in inputs if v.defining_op is not None]


class _DryRun(_Rewriter):
    """Decomposes without inserting anything: tells whether a rewrite would change the IR."""

    def __init__(self):
        self.emitted = 0

    def emit(self, name, operands, result_type, attrs=None):
        self.emitted += 1
        return operands[0] if operands else Value(result_type, None, 0)


def canonicalize_pointers(module: Module, ctx=None) -> bool:
    """Rewrite the address of every tensor load/store that can become a buffer access into
    ``addptr(splat(base), offsets)`` (see the module docstring). Returns whether IR changed."""
    changed = False
    for fn in module.functions.values():
        ranges = RangeAnalysis(fn)
        for op in [o for o in fn.walk() if o.name in _ADDRESS]:
            p = op.operands[_ADDRESS[op.name]]
            if isinstance(p.type, TensorType) and not has_cache_hints(op):
                changed |= _canonicalize_access(op, p, ranges)
    return changed


def _canonicalize_access(op: Operation, p: Value, ranges: RangeAnalysis) -> bool:
    probe = _DryRun()
    split = probe.split(p)
    if split is None:
        return False
    if is_canonical(p) and not split.scalars and not probe.emitted:
        return False  # already one base and one offset tensor with no uniform part left
    size = element_bytes(split.base.type)
    r = sum_range(ranges, split.tensors)  # the dry run's placeholders carry their inputs' ranges
    if size is None or r is None or not bytes_in_range(r[0], r[1], size):
        return False  # no buffer access to gain: leave the global address as LLVM likes it
    rw = _Rewriter(op)
    op.set_operand(_ADDRESS[op.name], rw.rebuild(p, rw.split(p)))
    erase_dead([p])
    return True
