"""Remove redundant ``convert_layout`` ops.

* a conversion to the layout the value already has disappears;
* a conversion of a conversion converts the original value once;
* a conversion of a value computed only from cheap ops (constants, splats, ranges, elementwise
  arithmetic, broadcasts, expand_dims) on inputs that need no conversion is replaced by
  recomputing that value directly in the target layout (*rematerialisation*): recomputing a few
  integer ops per register is much cheaper than moving data through shared memory.

Clones are then merged by CSE and the originals removed by DCE when nothing else uses them.
"""
from __future__ import annotations

from ...ir.core import Module, Operation, Value
from ...ir.types import TensorType
from ..layouts import Layout, SliceLayout
from .layout_rules import is_elementwise, is_tensor, layout_of

#: ops recreated in any layout from their operands
_CHEAP = ("broadcast", "expand_dims", "hint")
_LEAVES = ("constant", "splat", "make_range")
#: most ops one rematerialisation may clone
_BUDGET = 48


def remove_redundant_conversions(module: Module, ctx=None) -> bool:
    changed = False
    for fn in module.functions.values():
        for _ in range(8):
            step = False
            for op in list(fn.walk()):
                if op.name == "convert_layout" and op.parent is not None:
                    step |= _simplify(op)
            changed |= step
            if not step:
                break
    if changed:
        from ...passes.cse import cse
        from ...passes.dce import dce

        cse(module)
        dce(module)
    return changed


def _replace(op: Operation, value: Value) -> None:
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _simplify(op: Operation) -> bool:
    src = op.operands[0]
    want = op.results[0].type.layout
    if layout_of(src) == want:
        _replace(op, src)
        return True
    prod = src.defining_op
    if prod is not None and prod.name == "convert_layout":
        op.set_operand(0, prod.operands[0])
        if not prod.results[0].uses:
            prod.erase()
        return True
    if prod is not None and _rematerialisable(src, want):
        clones: dict[tuple[Value, Layout], Value] = {}
        _replace(op, _remat(src, want, op, clones))
        return True
    return False


def _operand_layouts(op: Operation, layout: Layout) -> list[Layout | None]:
    """Layouts the tensor operands of cheap ``op`` need for its result to have ``layout``."""
    if op.name == "expand_dims":
        return [SliceLayout(op.attrs["axis"], layout)]
    return [layout if is_tensor(x) else None for x in op.operands]


def _rematerialisable(v: Value, layout: Layout) -> bool:
    count = [0]

    def ok(v: Value, layout: Layout) -> bool:
        if not is_tensor(v) or layout_of(v) == layout:
            return True
        op = v.defining_op
        if op is None or len(op.results) != 1 or op.regions:
            return False
        count[0] += 1
        if count[0] > _BUDGET:
            return False
        if op.name in _LEAVES:
            return True
        if op.name == "convert_layout":
            return True  # becomes a single conversion of its source
        if op.name == "expand_dims" and not layout.distributed:
            return False
        if not (is_elementwise(op) or op.name in _CHEAP):
            return False
        return all(ok(x, lay) for x, lay in zip(op.operands, _operand_layouts(op, layout)))

    return layout.distributed and ok(v, layout)


def _insert_after(anchor: Operation, op: Operation) -> None:
    """Clones go right after the op they copy: they then dominate every use of the original,
    and stay outside loops the original is outside of."""
    block = anchor.parent
    block.insert(block.ops.index(anchor) + 1, op)


def _remat(v: Value, layout: Layout, before: Operation, clones) -> Value:
    if not is_tensor(v) or layout_of(v) == layout:
        return v
    key = (v, layout)
    if key in clones:
        return clones[key]
    op = v.defining_op
    t = v.type
    new_type = TensorType(t.shape, t.element, layout)
    if op.name == "convert_layout":
        src = op.operands[0]
        if layout_of(src) == layout:
            out = src
        else:
            cvt = Operation("convert_layout", [src], [new_type], loc=op.loc)
            _insert_after(op, cvt)
            out = cvt.result
    else:
        operands = [_remat(x, lay, before, clones) if lay is not None else x
                    for x, lay in zip(op.operands, _operand_layouts(op, layout))]
        new = Operation(op.name, operands, [new_type], dict(op.attrs), loc=op.loc)
        new.results[0].name_hint = v.name_hint
        _insert_after(op, new)
        out = new.result
    clones[key] = out
    return out
