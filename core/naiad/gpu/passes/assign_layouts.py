"""Layout assignment: give every tensor value of the kernel a layout (tile IR -> GPU IR).

Three steps per function:

1. *anchors*: each load/atomic through a tensor of pointers wants the coalesced layout of its
   pointer (:mod:`.coalesce`); each ``dot`` wants a blocked layout for its accumulator; a
   result that already carries a layout (a backend pass ran before this one and fixed it,
   e.g. a matrix instruction's accumulator layout, its operands placed by explicit
   ``convert_layout`` ops) wants that layout, so a loop-carried accumulator takes it too; a
   store takes the stored value's layout when that stores as well (a dot's accumulator needs
   no round trip through shared memory), its own coalesced layout otherwise.
2. *wishes* (:mod:`.wishes`): a wanted layout flows to the operands of ops that can compute
   in any layout (elementwise, ``addptr``, ``broadcast``, ``expand_dims`` as a slice,
   ``hint``), through loop-carried values and branch results, and from a reduction's sliced
   result to its input.
   The first wish wins; a value wished two layouts keeps the first.
   Then wishes flow *forward* to values no anchor reached (an accumulator summing loaded tiles
   takes the tiles' layout; an elementwise result takes its first *data* operand's wish, not a
   mask's or a broadcast's, so ``where(mask, acc, x)`` keeps a matrix accumulator's layout),
   and from there backward again, until nothing changes.
3. *forward assignment*: in program order each op gets result layouts (its wish, else from its
   operands, else the default blocked layout), and ``convert_layout`` is inserted on every
   operand whose layout differs from what the op needs.

The remove-conversions pass then folds what this leaves redundant.
"""
from __future__ import annotations

from ...errors import IRError
from ...ir.core import Block, Function, Module, Operation, Value
from ...ir.types import TensorType
from ..axis import AxisFacts
from ..layouts import (BlockedLayout, DotOperandLayout, Layout, LinearEncoding, SliceLayout,
                       blocked_for, linear_of)
from ..linear_layout import LinearLayout
from ... import remarks
from .coalesce import coalesced_layout, sign_remark
from .layout_rules import (FOLLOW_OPS, MEMORY_OPS, is_elementwise, is_tensor, layout_of,
                           reducible, scan_ordered, set_layout, split_register, store_friendly)
from .wishes import LayoutWishes


def runs_along(ll, dim: int) -> bool:
    """The layout's first register basis steps by one along ``dim`` (or it has none): the
    vectorization the access measured along ``dim`` still applies."""
    regs = ll.bases.get("register", ())
    if not regs:
        return True
    return all(c == (1 if i == dim else 0) for i, c in enumerate(regs[0]))

def assign_layouts(module: Module, ctx) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        _Assigner(fn, ctx, module).run()


class _Assigner:
    def __init__(self, fn: Function, ctx, module: Module | None = None):
        self.fn = fn
        self.module = module
        self.nw = ctx.num_warps
        self.ws = ctx.warp_size
        self.axis = AxisFacts(fn)
        self.wishes = LayoutWishes()
        self.wanted = self.wishes.wanted
        self.want = self.wishes.want
        self.forward_until_stable = self.wishes.forward_until_stable
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
        stores = []
        for op in ops:  # anchors: memory accesses first, in program order
            if op.name in MEMORY_OPS and is_tensor(op.operands[0]):
                mask_idx = {"load": 1, "store": 2, "atomic_rmw": 2}.get(op.name)
                mask = op.operands[mask_idx] if mask_idx is not None \
                    and len(op.operands) > mask_idx else None
                layout, vec = coalesced_layout(op.operands[0], self.axis, self.nw, self.ws, mask)
                if op.name in ("load", "store"):
                    op.attrs["vec"] = vec
                    self.say_why_narrow(op, mask, vec)
                if op.name == "store":
                    stores.append((op, layout, vec, mask))
                    continue  # decided once the stored value's layout is known
                self.mem_layout[op] = layout
                self.want(op.operands[0], layout)
                if mask is not None:
                    self.want(mask, layout)
        for op in ops:
            if op.name in ("load", "atomic_rmw", "atomic_cas", "atomic_poll") \
                    and op in self.mem_layout:
                self.want(op.results[0], self.mem_layout[op])
        for op in ops:
            if op.name == "dot":
                acc = op.operands[2]
                self.want(acc, self.dot_layout(acc.type.shape))
                self.want(op.results[0], self.wanted.get(acc, self.dot_layout(acc.type.shape)))
        for op in ops:  # layouts a backend pass fixed before assignment are kept
            if op.name == "convert_layout":
                continue
            for r in op.results:
                if is_tensor(r) and layout_of(r) is not None:
                    self.want(r, layout_of(r))
        self.forward_until_stable(ops)
        for op, layout, vec, mask in stores:
            # a value already laid out well for this store is stored as it is: converting
            # e.g. a dot's accumulator would cost a round trip through shared memory
            value = op.operands[1]
            have = self.wanted.get(value)
            if have is not None and have != layout and have.distributed and (
                    store_friendly(linear_of(have, value.type.shape), layout.order[0], vec)
                    or value.type.numel <= self.nw * self.ws
                    or getattr(have, "stores_in_place", False)):
                # (a tensor no larger than the program's thread count, e.g. a row-wise
                # reduction's result, costs more to convert than to store unvectorized; a
                # matrix accumulator's layout says it stores in place: the epilogue of the
                # matrix pipeline, see naiad.gpu.matrix)
                if not runs_along(linear_of(have, value.type.shape), layout.order[0]):
                    op.attrs["vec"] = 1  # vec was measured along the coalesced layout's dim
                layout = have
            self.mem_layout[op] = layout
            self.want(op.operands[0], layout)
            if mask is not None:
                self.want(mask, layout)
        self.forward_until_stable(ops)
        self.assign_block(self.fn.body.block)
        self.mark_uniform_compares(ops)

    def say_why_narrow(self, op: Operation, mask, vec: int) -> None:
        """A remark at the access's line when only a sign keeps it narrow (see
        :func:`.coalesce.sign_remark`)."""
        if self.module is None:
            return
        message = sign_remark(op.operands[0], self.axis, self.nw, self.ws, mask, vec)
        if message:
            remarks.remark(self.module, op.loc, op.name, message)

    def mark_uniform_compares(self, ops) -> None:
        """Record on each tensor ``cmp`` its result's constancy per dimension (``uniform``),
        from axis info: ``cols < N`` with ``cols`` a multiple of 8 plus a range and ``N`` a
        multiple of 16 is the same for 8 consecutive columns, so the lowering compares once
        per run of consecutive registers instead of per element (fewer instructions, and the
        per-element indices need not stay live)."""
        for op in ops:
            if op.name == "cmp" and is_tensor(op.results[0]):
                constancy = self.axis.facts(op.results[0]).constancy
                if any(c > 1 for c in constancy):
                    op.attrs["uniform"] = list(constancy)

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
            for res in op.results:  # (inline_asm may give several)
                set_layout(res, lay)
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
        if name == "gather":  # the source goes through shared memory in any layout
            set_layout(op.results[0], layout_of(op.operands[1]))
            return
        if name == "histogram":  # counted where the input lies; the mask joins it there
            if len(op.operands) > 1:
                self.convert(op, 1, layout_of(op.operands[0]))
            r = op.results[0]
            lay = self.result_layout(r, lambda: self.default(r.type.shape))
            set_layout(r, lay if lay.distributed else self.default(r.type.shape))
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
