"""Layout assignment: give every tensor value of the kernel a layout (tile IR -> GPU IR).

Three steps per function:

1. *anchors*: each load/store/atomic through a tensor of pointers wants the coalesced layout
   of its pointer (:mod:`.coalesce`); each ``dot`` wants a blocked layout for its accumulator.
2. *backward propagation*: a wanted layout flows to the operands of ops that can compute in any
   layout (elementwise, ``addptr``, ``broadcast``, ``expand_dims`` as a slice, ``hint``), through
   loop-carried values and branch results, and from a reduction's sliced result to its input.
   The first wish wins; a value wished two layouts keeps the first.
   Then wishes flow *forward* to values no anchor reached (an accumulator summing loaded tiles
   takes the tiles' layout), and from there backward again, until nothing changes.
3. *forward assignment*: in program order each op gets result layouts (its wish, else from its
   operands, else the default blocked layout), and ``convert_layout`` is inserted on every
   operand whose layout differs from what the op needs.

The remove-conversions pass then folds what this leaves redundant.
"""
from __future__ import annotations

from ...errors import IRError
from ...ir.core import Block, Function, Module, Operation, Value
from ...ir.ops import ELEMENTWISE, OPS
from ...ir.types import TensorType
from ..axis import AxisFacts
from ..layouts import (BlockedLayout, DotOperandLayout, Layout, LinearEncoding, SliceLayout,
                       blocked_for, linear_of)
from ..linear_layout import LinearLayout
from .coalesce import coalesced_layout

MEMORY_OPS = ("load", "store", "atomic_rmw", "atomic_cas")
#: shape ops whose result layout follows the operand's (data stays in registers)
FOLLOW_OPS = ("hint",)


def is_tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def layout_of(v: Value) -> Layout | None:
    return v.type.layout if isinstance(v.type, TensorType) else None


def set_layout(v: Value, layout: Layout) -> None:
    t = v.type
    v.type = TensorType(t.shape, t.element, layout)


def is_elementwise(op: Operation) -> bool:
    d = OPS.get(op.name)
    return d is not None and d.has(ELEMENTWISE)


def assign_layouts(module: Module, ctx) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        _Assigner(fn, ctx).run()


class _Assigner:
    def __init__(self, fn: Function, ctx):
        self.fn = fn
        self.nw = ctx.num_warps
        self.ws = ctx.warp_size
        self.axis = AxisFacts(fn)
        self.wanted: dict[Value, Layout] = {}
        self.mem_layout: dict[Operation, Layout] = {}

    # -- defaults ---------------------------------------------------------------------------
    def default(self, shape) -> BlockedLayout:
        return blocked_for(shape, self.nw, self.ws)

    def dot_layout(self, shape) -> BlockedLayout:
        """Accumulator layout for an FMA dot: a few outputs per thread along both dims."""
        rank = len(shape)
        spt = [1] * rank
        numel = 1
        for s in shape:
            numel *= s
        per_thread = max(numel // (self.nw * self.ws), 1)
        # split the per-thread outputs between the two matrix dims (at most 4x4)
        m = min(shape[-2], 4, max(per_thread // min(shape[-1], 4), 1))
        n = min(shape[-1], 4, max(per_thread // m, 1))
        spt[-2], spt[-1] = m, n
        return blocked_for(shape, self.nw, self.ws, None, spt)

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> None:
        ops = list(self.fn.walk())
        for op in ops:
            if op.name == "call":
                raise IRError(f"@{self.fn.name}: calls must be inlined before the GPU lowering "
                              f"(call of @{op.attrs.get('callee')})")
        for op in ops:  # anchors: memory accesses first, in program order
            if op.name in MEMORY_OPS and is_tensor(op.operands[0]):
                mask_idx = {"load": 1, "store": 2, "atomic_rmw": 2}.get(op.name)
                mask = op.operands[mask_idx] if mask_idx is not None \
                    and len(op.operands) > mask_idx else None
                layout, vec = coalesced_layout(op.operands[0], self.axis, self.nw, self.ws, mask)
                self.mem_layout[op] = layout
                if op.name in ("load", "store"):
                    op.attrs["vec"] = vec
                self.want(op.operands[0], layout)
                if op.name == "load" and len(op.operands) > 1:
                    self.want(op.operands[1], layout)
                if op.name == "store" and len(op.operands) > 2:
                    self.want(op.operands[2], layout)
        for op in ops:
            if op.name in ("load", "atomic_rmw", "atomic_cas") and op in self.mem_layout:
                self.want(op.results[0], self.mem_layout[op])
        for op in ops:
            if op.name == "dot":
                acc = op.operands[2]
                self.want(acc, self.dot_layout(acc.type.shape))
                self.want(op.results[0], self.wanted.get(acc, self.dot_layout(acc.type.shape)))
        for _ in range(4):  # loops feed wishes back to their own bodies: a few rounds
            if not self.forward_wishes(ops):
                break
        self.assign_block(self.fn.body.block)

    # -- step 2b: forward propagation ---------------------------------------------------------
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
            return [(op.results[0], wished[0])] if wished[0].distributed else []
        if name == "expand_dims":
            lay = self.wanted.get(op.operands[0])
            if isinstance(lay, SliceLayout) and lay.dim == op.attrs["axis"]:
                return [(op.results[0], lay.parent)]
        return []

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

    # -- step 2: backward propagation --------------------------------------------------------
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

    # -- step 3: forward assignment ------------------------------------------------------------
    def assign_block(self, block: Block) -> None:
        for op in list(block.ops):
            self.assign_op(op)

    def convert(self, op: Operation, idx: int, layout: Layout) -> None:
        """Make operand ``idx`` of ``op`` have ``layout`` (insert a convert_layout if needed)."""
        v = op.operands[idx]
        if not is_tensor(v) or layout_of(v) == layout:
            return
        if layout_of(v) is None:
            raise IRError(f"internal: operand of {op.name} has no layout yet")
        t = v.type
        cvt = Operation("convert_layout", [v], [TensorType(t.shape, t.element, layout)],
                        loc=op.loc)
        op.parent.insert_before(op, cvt)
        op.set_operand(idx, cvt.result)

    def result_layout(self, v: Value, fallback) -> Layout:
        w = self.wanted.get(v)
        return w if w is not None else fallback()

    def assign_op(self, op: Operation) -> None:
        name = op.name
        tensors = [i for i, x in enumerate(op.operands) if is_tensor(x)]
        if name in ("yield", "condition", "return", "reduce_region"):
            return  # handled by the parent op
        if name in ("constant", "make_range", "splat"):
            if op.results and is_tensor(op.results[0]):
                r = op.results[0]
                set_layout(r, self.result_layout(r, lambda: self.default(r.type.shape)))
            return
        if name in MEMORY_OPS:
            return self.assign_memory(op)
        if name == "convert_layout":
            return
        if is_elementwise(op) or name in FOLLOW_OPS:
            if not op.results or not is_tensor(op.results[0]):
                return
            r = op.results[0]
            first = layout_of(op.operands[tensors[0]]) if tensors else None
            lay = self.result_layout(r, lambda: first or self.default(r.type.shape))
            if name in FOLLOW_OPS and first is not None:
                lay = first
            for i in tensors:
                self.convert(op, i, lay)
            set_layout(r, lay)
            return
        if name == "broadcast":
            r = op.results[0]
            lay = self.result_layout(r, lambda: layout_of(op.operands[0]))
            if not lay.distributed:
                lay = self.default(r.type.shape)
            self.convert(op, 0, lay)
            set_layout(r, lay)
            return
        if name == "expand_dims":
            return self.assign_expand_dims(op)
        if name == "trans":
            return self.assign_trans(op)
        if name == "reshape":
            src = op.operands[0]
            ll = linear_of(layout_of(src), src.type.shape).reshape(op.results[0].type.shape)
            set_layout(op.results[0], LinearEncoding.from_linear(ll))
            return
        if name == "join":
            return self.assign_join(op)
        if name == "split":
            return self.assign_split(op)
        if name == "reduce":
            return self.assign_reduce(op)
        if name == "scan":
            return self.assign_scan(op)
        if name == "dot":
            return self.assign_dot(op)
        if name == "for":
            return self.assign_for(op)
        if name == "while":
            return self.assign_while(op)
        if name == "if":
            return self.assign_if(op)
        # ops without tensor results (program_id, barrier, ...) or unknown ops that already
        # carry layouts (a backend's own) need nothing
        for r in op.results:
            if is_tensor(r) and layout_of(r) is None:
                set_layout(r, self.result_layout(r, lambda: self.default(r.type.shape)))

    def assign_memory(self, op: Operation) -> None:
        if not is_tensor(op.operands[0]):
            return
        lay = self.mem_layout[op]
        for i in range(len(op.operands)):
            self.convert(op, i, lay)
        for r in op.results:
            set_layout(r, lay)

    def assign_expand_dims(self, op: Operation) -> None:
        axis = op.attrs["axis"]
        src, r = op.operands[0], op.results[0]
        cur = layout_of(src)
        w = self.wanted.get(r)
        if w is None or not w.distributed:
            if isinstance(cur, SliceLayout) and cur.dim == axis:
                w = cur.parent
            else:
                w = self.default(r.type.shape)
        self.convert(op, 0, SliceLayout(axis, w))
        set_layout(r, w)

    def assign_trans(self, op: Operation) -> None:
        order = list(op.attrs["order"])
        src = op.operands[0]
        cur = layout_of(src)
        if isinstance(cur, BlockedLayout):
            set_layout(op.results[0], cur.permuted(order))
            return
        ll = linear_of(cur, src.type.shape).permute(order)
        set_layout(op.results[0], LinearEncoding.from_linear(ll))

    def assign_join(self, op: Operation) -> None:
        a = op.operands[0]
        self.convert(op, 1, layout_of(a))
        ll = linear_of(layout_of(a), a.type.shape)
        rank = ll.rank
        new = [tuple([0] * rank + [1])]
        bases = {d: [tuple(v) + (0,) for v in vs] for d, vs in ll.bases.items()}
        bases["register"] = new + bases.get("register", [])
        out = LinearLayout(bases, ll.out_shape + (2,))
        set_layout(op.results[0], LinearEncoding.from_linear(out))

    def assign_split(self, op: Operation) -> None:
        src = op.operands[0]
        if split_register(linear_of(layout_of(src), src.type.shape)) is None:
            rank = len(src.type.shape)
            order = [rank - 1] + list(range(rank - 2, -1, -1))
            spt = [1] * (rank - 1) + [2]
            self.convert(op, 0, blocked_for(src.type.shape, self.nw, self.ws, order, spt))
            src = op.operands[0]
        ll = linear_of(layout_of(src), src.type.shape)
        k = split_register(ll)
        bases = {d: [v[:-1] for v in vs] for d, vs in ll.bases.items()}
        bases["register"] = [v for j, v in enumerate(bases["register"]) if j != k]
        out = LinearEncoding.from_linear(LinearLayout(bases, ll.out_shape[:-1]))
        for r in op.results:
            set_layout(r, out)

    def assign_reduce(self, op: Operation) -> None:
        axis = op.attrs["axis"]
        first = op.operands[0]
        lay = layout_of(first)
        if not reducible(linear_of(lay, first.type.shape), axis):
            lay = self.default(first.type.shape)
        for i in range(len(op.operands)):
            self.convert(op, i, lay)
        for r in op.results:
            if is_tensor(r):
                set_layout(r, SliceLayout(axis, lay))

    def assign_scan(self, op: Operation) -> None:
        axis = op.attrs["axis"]
        first = op.operands[0]
        lay = layout_of(first)
        if not scan_ordered(linear_of(lay, first.type.shape), axis):
            lay = self.scan_layout(first.type.shape, axis)
        for i in range(len(op.operands)):
            self.convert(op, i, lay)
        for r in op.results:
            set_layout(r, lay)

    def scan_layout(self, shape, axis: int) -> BlockedLayout:
        """Registers hold the low bits of the axis, then lanes, then warps, and the other dims
        take the threads the axis does not need: the scan crosses as few threads as it can."""
        rank = len(shape)
        numel = 1
        for s in shape:
            numel *= s
        spt = [1] * rank
        spt[axis] = min(shape[axis], max(1, numel // (self.nw * self.ws)))
        order = [axis] + [d for d in range(rank - 1, -1, -1) if d != axis]
        return blocked_for(shape, self.nw, self.ws, order, spt)

    def assign_dot(self, op: Operation) -> None:
        a, b, acc = op.operands
        lay = layout_of(acc)
        try:
            DotOperandLayout(0, lay).to_linear(a.type.shape)
            DotOperandLayout(1, lay).to_linear(b.type.shape)
        except (IRError, NotImplementedError):
            lay = self.dot_layout(acc.type.shape)
        self.convert(op, 2, lay)
        self.convert(op, 0, DotOperandLayout(0, lay))
        self.convert(op, 1, DotOperandLayout(1, lay))
        set_layout(op.results[0], lay)

    # -- control flow -------------------------------------------------------------------------
    def assign_for(self, op: Operation) -> None:
        body = op.regions[0].block
        for j, arg in enumerate(body.args[1:]):
            init_idx = 3 + j
            if is_tensor(arg):
                lay = self.wanted.get(arg) or layout_of(op.operands[init_idx])
                self.convert(op, init_idx, lay)
                set_layout(arg, lay)
                set_layout(op.results[j], lay)
        self.assign_block(body)
        term = body.terminator
        for j, arg in enumerate(body.args[1:]):
            if is_tensor(arg):
                self.convert(term, j, layout_of(arg))

    def assign_while(self, op: Operation) -> None:
        before, after = op.regions[0].block, op.regions[1].block
        for i, arg in enumerate(before.args):
            if is_tensor(arg):
                lay = self.wanted.get(arg) or layout_of(op.operands[i])
                self.convert(op, i, lay)
                set_layout(arg, lay)
        self.assign_block(before)
        cond = before.terminator
        for i, arg in enumerate(after.args):
            if is_tensor(arg):
                lay = self.wanted.get(arg) or layout_of(cond.operands[1 + i])
                self.convert(cond, 1 + i, lay)
                set_layout(arg, lay)
                set_layout(op.results[i], lay)
        self.assign_block(after)
        term = after.terminator
        for i, arg in enumerate(before.args):
            if is_tensor(arg):
                self.convert(term, i, layout_of(arg))

    def assign_if(self, op: Operation) -> None:
        then, other = op.regions[0].block, op.regions[1].block
        self.assign_block(then)
        self.assign_block(other)
        for i, r in enumerate(op.results):
            if is_tensor(r):
                lay = self.wanted.get(r) or layout_of(then.terminator.operands[i])
                self.convert(then.terminator, i, lay)
                self.convert(other.terminator, i, lay)
                set_layout(r, lay)


# -- layout predicates shared with the lowering ------------------------------------------------

def _axis_kind(vec, axis: int) -> str:
    """'zero', 'axis' (only the axis component), 'other' (no axis component) or 'mixed'."""
    on_axis = vec[axis] != 0
    off_axis = any(c for d, c in enumerate(vec) if d != axis)
    if on_axis and off_axis:
        return "mixed"
    if on_axis:
        return "axis"
    return "other" if off_axis else "zero"


def reducible(ll: LinearLayout, axis: int) -> bool:
    """Reductions need every basis to move along the axis only, or not along it at all."""
    return all(_axis_kind(v, axis) != "mixed" for vs in ll.bases.values() for v in vs)


def scannable(ll: LinearLayout, axis: int) -> bool:
    """Scans need reducible bases whose axis components are single bits."""
    if not reducible(ll, axis):
        return False
    return all(v[axis] & (v[axis] - 1) == 0 for vs in ll.bases.values() for v in vs)


def scan_ordered(ll: LinearLayout, axis: int) -> bool:
    """A scannable layout whose axis bits come from registers, then lanes, then warps (low to
    high): each step of the scan then moves data at most once per level."""
    if not scannable(ll, axis):
        return False
    from ..movement import scan_sources

    try:
        dims = [dim for dim, _ in scan_sources(ll, axis)]
    except IRError:
        return False
    rank = {"register": 0, "lane": 1, "warp": 2}
    return all(rank[a] <= rank[b] for a, b in zip(dims, dims[1:]))


def split_register(ll: LinearLayout) -> int | None:
    """Index of the register basis that alone selects the minor (size-2) dim, or None."""
    unit = tuple([0] * (ll.rank - 1) + [1])
    found = None
    for dim, vs in ll.bases.items():
        for j, v in enumerate(vs):
            if v[-1]:
                if dim != "register" or v != unit or found is not None:
                    return None
                found = j
    return found
