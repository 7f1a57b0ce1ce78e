"""Which layout each value *wants*, before any op is rewritten.

Anchors (memory accesses, dots) state wishes; :meth:`LayoutWishes.want` propagates a wish
backward to the values it is computed from (through ops that can compute in any layout,
loop-carried values, branch results, and from a reduction's sliced result to its input), and
:meth:`LayoutWishes.forward_until_stable` lets values no anchor reached take the wish of what
they are computed from. The first wish a value receives wins.
"""
from __future__ import annotations

from ...ir.core import Block, Operation, Value
from ..layouts import Layout, SliceLayout
from .layout_rules import FOLLOW_OPS, is_elementwise, is_tensor


#: ops whose result is cheap to produce in any layout (the work is on a smaller source, or none)
_CHEAP_OPS = ("broadcast", "splat", "constant", "make_range", "expand_dims")


def _cheap_to_convert(v: Value) -> bool:
    d = v.defining_op
    return (d is not None and d.name in _CHEAP_OPS) or str(v.type.element) == "i1"


class LayoutWishes:
    def __init__(self):
        self.wanted: dict[Value, Layout] = {}

    def get(self, v: Value) -> Layout | None:
        return self.wanted.get(v)

    # -- forward ----------------------------------------------------------------------------
    def forward_until_stable(self, ops) -> None:
        for _ in range(4):  # loops feed wishes back to their own bodies: a few rounds
            if not self.forward_wishes(ops):
                break

    def forward_wishes(self, ops) -> bool:
        """Values no anchor reached take the wish of what they are computed from (e.g. a
        loop-carried accumulator summing loaded tiles takes the tiles' layout, rather than
        converting every tile to the accumulator's default). Returns True when anything
        changed."""
        changed = False
        for op in ops:
            for v, lay in self._forward_sources(op):
                if is_tensor(v) and v not in self.wanted and lay is not None:
                    self.want(v, lay)
                    changed = True
        return changed

    def _forward_sources(self, op: Operation):
        name = op.name
        tensors = [x for x in op.operands if is_tensor(x)]
        wished = [self.wanted[x] for x in tensors if x in self.wanted]
        if not op.results or not wished:
            if name in ("yield", "condition") and op.parent_op is not None:
                return self._yield_forward(op)
            return []
        if is_elementwise(op) or name in FOLLOW_OPS or name == "broadcast":
            lay = self._forward_choice(op, tensors, wished)
            return [(op.results[0], lay)] if lay.distributed else []
        if name == "expand_dims":
            lay = self.wanted.get(op.operands[0])
            if isinstance(lay, SliceLayout) and lay.dim == op.attrs["axis"]:
                return [(op.results[0], lay.parent)]
        return []

    def _forward_choice(self, op: Operation, tensors, wished):
        """The wish a result takes from its operands: the first *data* operand's, not a mask's
        or a broadcast's (``where(mask, s, -inf)`` keeps ``s``'s layout -- e.g. a matrix
        accumulator's -- rather than the layout a load gave the mask, which would convert the
        whole tile; converting the small tensor under a broadcast is cheap)."""
        for x in tensors:
            if x in self.wanted and not _cheap_to_convert(x):
                return self.wanted[x]
        return wished[0]

    def _yield_forward(self, op: Operation):
        """A yielded (or passed-on) value's wish reaches the block argument or result it
        becomes."""
        parent = op.parent_op
        block = op.parent
        out = []
        if parent.name == "for":
            for j, v in enumerate(op.operands):
                if v in self.wanted:
                    out.append((block.args[j + 1], self.wanted[v]))
        elif parent.name == "while" and op.name == "condition":
            for j, v in enumerate(op.operands[1:]):
                if v in self.wanted:
                    out.append((parent.regions[1].block.args[j], self.wanted[v]))
        elif parent.name == "while" and block is parent.regions[1].block:
            for j, v in enumerate(op.operands):
                if v in self.wanted:
                    out.append((parent.regions[0].block.args[j], self.wanted[v]))
        elif parent.name == "if":
            for j, v in enumerate(op.operands):
                if v in self.wanted:
                    out.append((parent.results[j], self.wanted[v]))
        return out

    # -- backward ---------------------------------------------------------------------------
    def want(self, v: Value, layout: Layout) -> None:
        work = [(v, layout)]
        while work:
            v, layout = work.pop()
            if not is_tensor(v) or v in self.wanted:
                continue
            self.wanted[v] = layout
            work.extend(self._wish_sources(v, layout))

    def _wish_sources(self, v: Value, layout: Layout):
        """Values that should take a layout because ``v`` wants ``layout``."""
        if v.is_block_arg:
            return self._carried_partners(v, layout)
        op = v.defining_op
        if op is None:
            return []
        if op.name in ("for", "while", "if"):
            return self._result_partners(op, v.index, layout)
        if is_elementwise(op) or op.name in FOLLOW_OPS or op.name == "broadcast":
            return [(x, layout) for x in op.operands if is_tensor(x)]
        if op.name == "expand_dims" and layout.distributed:
            return [(op.operands[0], SliceLayout(op.attrs["axis"], layout))]
        if op.name == "reduce" and isinstance(layout, SliceLayout) \
                and layout.dim == op.attrs["axis"]:
            return [(x, layout.parent) for x in op.operands]
        return []

    def _carried_partners(self, arg: Value, layout):
        block: Block = arg.owner
        region = block.parent
        op = region.parent if region is not None else None
        if op is None:
            return []
        i = arg.index
        if op.name == "for":
            if i == 0:
                return []
            return [(op.operands[3 + i - 1], layout), (op.results[i - 1], layout),
                    (block.terminator.operands[i - 1], layout)]
        if op.name == "while":
            if block is op.regions[0].block:
                return [(op.operands[i], layout),
                        (op.regions[1].block.terminator.operands[i], layout)]
            cond = op.regions[0].block.terminator
            return [(cond.operands[1 + i], layout), (op.results[i], layout)]
        return []

    def _result_partners(self, op: Operation, i: int, layout):
        if op.name == "for":
            return [(op.regions[0].block.args[i + 1], layout)]
        if op.name == "while":
            return [(op.regions[1].block.args[i], layout)]
        return [(r.block.terminator.operands[i], layout) for r in op.regions]
