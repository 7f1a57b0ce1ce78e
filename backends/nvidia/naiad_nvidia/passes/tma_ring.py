"""The TMA variant of the wgmma ring (:mod:`naiad_nvidia.passes.async_copy_pipeline`): when
both operands of a pipelined dot are tensor-descriptor loads with a tensor map
(``descriptor_access`` ops, see ``naiad.language.descriptor``), thread 0 fills each ring slot
with ``cp.async.bulk.tensor`` copies completing on the slot's mbarrier, instead of every thread
issuing ``cp.async`` chunks.

Why: one instruction per 128-byte-wide panel replaces a cp.async per 16 bytes per thread and
all its address arithmetic, out-of-bounds boxes are zero-filled by the hardware (no masks),
and the copies write wgmma's swizzled layout directly (the map's swizzle is the panel width).

The schedule is the cp.async ring's (prefetch distance ``num_stages - 1``, early or late
copies, the wgmma of iteration i left running) with three changes:

    before the loop: nvidia.tma_init                      # mbarriers of the slots
    prologue:        tma_expect + tma_copy A, B into slots 0..D-1
    loop i:          tma_wait(slot i % S, phase); barrier  # tile i landed; slot (i+D)%S free
                     tma_expect + tma_copy A, B of tile i+D into slot (i+D) % S
                     nvidia.wgmma_ring(acc, slot i % S)
    after the loop:  nvidia.tma_release

``phase`` (the parity of the slot's mbarrier phase) is carried and flips each time the read
slot wraps. B may be the descriptor block itself (``[K, N]``, stored N-major as the cp.async
ring stores it) or its transpose ``b.T`` of a ``[N, K]`` block (stored K-major: what TMA
writes, read with ``imm-trans-b = 0``).
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.ir import Operation

from ..ir.tma_op import TMA_COPY_OP, TMA_EXPECT_OP, TMA_STORE_OP
from ..ir.wgmma_smem import KIND_BYTES
from .prefetch_loads import NotEligible, materialize

ACCESS_OP = "descriptor_access"
#: operand kinds the TMA ring moves (wgmma reads their B either N-major or K-major)
TMA_KINDS = ("f16", "bf16")


@dataclass
class TmaOperand:
    """One operand: its load (the portable lowering, erased once the ring replaces it), the
    ``descriptor_access`` op holding the map and offsets, and a ``trans`` in between (or None)."""

    load: Operation
    access: Operation
    trans: Operation | None = None

    @property
    def block(self) -> list[int]:
        return list(self.access.attrs["block"])

    def erase(self) -> None:
        if self.trans is not None:
            self.trans.erase()
        self.load.erase()
        self.access.erase()


@dataclass
class TmaOperands:
    a: TmaOperand
    b: TmaOperand

    @property
    def b_k_major(self) -> bool:
        return self.b.trans is not None

    @property
    def accesses(self) -> tuple[Operation, Operation]:
        return self.a.access, self.b.access


def access_of(load: Operation | None, body) -> Operation | None:
    """The ``descriptor_access`` op (with a tensor map) linked to ``load`` in ``body``."""
    if load is None or load.name != "load" or load.parent is not body:
        return None
    access = load.attrs.get("descriptor_access")
    if access is None:
        return None
    for op in body.ops:
        if op.name == ACCESS_OP and op.attrs.get("access") == access and op.attrs.get("map"):
            return op
    return None


def _operand(value, body, which: str, allow_trans: bool) -> TmaOperand | None:
    d = value.defining_op
    trans = None
    if allow_trans and d is not None and d.name == "trans" and d.parent is body:
        trans, d = d, d.operands[0].defining_op
    access = access_of(d, body)
    if access is None:
        return None
    if len(d.results[0].uses) != 1 or (trans is not None and len(trans.results[0].uses) != 1):
        raise NotEligible(f"the descriptor load of {which} has other users than the dot")
    if len(access.attrs["block"]) != 2:
        raise NotEligible(f"the descriptor of {which} is not two-dimensional")
    return TmaOperand(d, access, trans)


def tma_operands(mma: Operation, body) -> TmaOperands | None:
    """The TMA operands of a wgmma-marked mma; None when they are not both descriptor loads
    the ring can move (the cp.async ring may still take their masked loads; the reason is kept
    on the ``descriptor_access`` ops for the remark). Raises NotEligible when a descriptor load
    has other users."""
    a = _operand(mma.operands[0], body, "A", allow_trans=False)
    b = _operand(mma.operands[1], body, "B", allow_trans=True)
    if a is None and b is None:
        return None
    kind = mma.attrs.get("kind")
    why = None
    if a is None or b is None:
        why = (f"operand {'B' if a else 'A'} of its dot is not a tensor-descriptor load with a "
               f"tensor map (the TMA ring moves both)")
    elif kind not in TMA_KINDS:
        why = f"the TMA ring moves {'/'.join(TMA_KINDS)} operands, not {kind}"
    else:
        elem = KIND_BYTES[kind]
        for which, op in (("A", a), ("B", b)):
            if op.block[1] * elem < 32:
                why = (f"the rows of the {which} block ({op.block[1]} x {elem} bytes) are "
                       f"narrower than wgmma's 32-byte swizzle")
    if why is not None:
        for op in (a, b):
            if op is not None:
                op.access.attrs["why"] = why
        return None
    return TmaOperands(a, b)


def emit_copies(ops: TmaOperands, rp, env, body, block, anchor, valid, slot, loc) -> None:
    """Thread 0 fills slot ``slot`` with the tiles of the iteration ``env`` describes (see
    the module docstring), when ``valid``."""
    elem = KIND_BYTES[rp.mma.attrs["kind"]]
    total = sum(op.block[0] * op.block[1] * elem for op in (ops.a, ops.b))
    block.insert_before(anchor, Operation(
        TMA_EXPECT_OP, [valid, slot], [], {"bytes": total, "bar_offset": rp.bar_offset},
        loc=loc))
    for op, offset in ((ops.a, 0), (ops.b, rp.b_offset)):
        cache: dict = {}
        tmap, row, col = (materialize(v, body, env, block, anchor, cache)
                          for v in op.access.operands)
        rows, cols = op.block
        block.insert_before(anchor, Operation(
            TMA_COPY_OP, [valid, slot, tmap, row, col], [],
            {"offset": offset, "rows": rows, "cols": cols, "elem_bytes": elem,
             "stage_bytes": rp.stage_bytes, "bar_offset": rp.bar_offset}, loc=loc))


def epilogue_reserve(loop: Operation) -> int:
    """Shared memory to leave beside a TMA ring in ``loop`` for the descriptor stores of an
    enclosing tile loop: carried across tiles (:mod:`naiad_nvidia.passes.tma_persistent`) the
    ring lives beside their store buffers, so its schedule should fit with them. 0 when
    ``loop`` is not directly in a ``for``. Stores marked ``may_widen`` (they will be masked
    stores, :func:`device_tensor_maps.mark_widening_stores`) need none."""
    tiles = loop.parent_op
    if tiles is None or tiles.name != "for":
        return 0
    need = 0
    for op in tiles.walk():
        if op.name == ACCESS_OP and op.attrs.get("kind") == "store" and op.attrs.get("map") \
                and not op.attrs.get("may_widen"):
            store = _memory_op(op)
            if store is None or len(op.attrs["block"]) != 2:
                continue
            elem = max(store.operands[1].type.scalar.bitwidth // 8, 1)
            rows, cols = op.attrs["block"]
            need = max(need, rows * cols * elem)
    return -(-need // 1024) * 1024


def _memory_op(access: Operation) -> Operation | None:
    """The load/store ``access`` annotates (in its block)."""
    for op in access.parent.ops:
        if op.name in ("load", "store") and op.attrs.get("descriptor_access") == \
                access.attrs.get("access"):
            return op
    return None


#: why a store whose column offset may not be 16-byte aligned keeps the masked stores
UNALIGNED_STORE = ("its column offset is not known to be a multiple of 16 bytes (TMA faults "
                   "on an unaligned start); `tl.multiple_of` says so")


def _store_may_widen(access: Operation, elem: int, facts) -> str | None:
    """Why a TMA store through ``access``'s map might write outside the view, or None
    (:func:`tma_store_rule.tma_store_is_exact` on what is known about the view's extents and
    the store's offsets: a map built in the kernel from its ``descriptor_make`` operands' axis
    info, a host map from the launch's ``block_gcd`` fact)."""
    from .device_tensor_maps import made_by
    from .tma_store_rule import known_multiple, tma_store_is_exact

    block = list(access.attrs["block"])
    make = made_by(access)
    if make is not None:
        extents = [known_multiple(facts.get(v)) for v in make.operands[1:1 + len(block)]]
    else:
        extents = list(access.attrs.get("block_gcd") or [1] * len(block))
    offsets = [known_multiple(facts.get(v)) for v in access.operands[1:]]
    return tma_store_is_exact(block, elem, extents, offsets)


def _store_by_tma(access: Operation, shared_limit: int, facts) -> str | None:
    """Replace the store ``access`` annotates by ``nvidia.tma_store``; None when done, else
    why not. ``facts``: the function's axis info, read as Triton's compiler reads it (integers
    taken to be >= 0: a descriptor store at a negative offset faults on the H200, see
    docs/language.md); the column offset must be provably 16-byte aligned, and the store
    provably inside the view (:mod:`.tma_store_rule`)."""
    from naiad.backend import axis_info

    store = _memory_op(access)
    if store is None or store.name != "store":
        return "its store was rewritten by an earlier pass"
    value = store.operands[1]
    rows_cols = list(access.attrs["block"])
    if len(rows_cols) != 2:
        return "the TMA store handles two-dimensional blocks only"
    if getattr(value.type, "layout", None) is None:
        return "the stored value has no layout"
    elem = max(value.type.scalar.bitwidth // 8, 1)
    rows, cols = rows_cols
    need = rows * cols * elem
    if need > shared_limit:
        return f"the block needs {need} bytes of shared memory (over {shared_limit})"
    convert = value.defining_op
    if convert is not None and convert.name == "convert_layout" and len(value.uses) == 1:
        value = convert.operands[0]   # any layout writes to the buffer: skip the conversion
    tmap, row, col = access.operands
    if axis_info.every_element_div(facts.get(col)) * elem % 16:
        return UNALIGNED_STORE
    why = _store_may_widen(access, elem, facts)
    if why is not None:
        return why
    # at the access, not the store: the language makes the offsets after the store (a
    # constant offset may have no definition before it)
    access.parent.insert_before(access, Operation(
        TMA_STORE_OP, [value, tmap, row, col], [],
        {"rows": rows, "cols": cols, "elem_bytes": elem, "scratch_bytes": need},
        loc=store.loc))
    store.erase()
    if convert is not None and not convert.results[0].uses:
        convert.erase()
    return None


def lower_descriptor_accesses(module, ctx=None, shared_limit: int = 227 * 1024) -> None:
    """Turn each 2-D descriptor store with a tensor map into ``nvidia.tma_store``, then erase
    the ``descriptor_access`` ops: the loads the TMA ring did not take stay the portable masked
    loads, and a performance remark at the source line says why."""
    from naiad.backend import axis_info, remarks

    for fn in module.functions.values():
        facts = None
        for op in list(fn.walk()):
            if op.name != ACCESS_OP:
                continue
            what = f"desc.{op.attrs.get('kind', 'load')}"
            if not op.attrs.get("map"):
                why = str(op.attrs.get("portable") or "the launcher built no tensor map")
            elif op.attrs.get("kind") == "store":
                facts = facts or axis_info.analyze(fn, assume_non_negative=True)
                why = _store_by_tma(op, shared_limit, facts)
            else:
                why = op.attrs.get("why") or ("only descriptor loads feeding a dot in a loop "
                                              "that the wgmma ring pipelines move by TMA")
            if why is not None:
                remarks.remark(module, op.loc, what,
                               f"uses masked pointer accesses, not TMA: {why}")
            op.erase()
