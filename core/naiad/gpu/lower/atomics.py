"""Atomics: ``atomicrmw``/``cmpxchg``, performed exactly once per element.

Memory order follows the op's ``sem`` (Triton's default ``acq_rel``; ``acquire``, ``release``,
``relaxed``) at its ``scope`` (``TargetInfo.syncscope``). Where the target has a single
instruction carrying both (``TargetInfo.atomic_instruction``: NVIDIA's ``atom.acq_rel.gpu``)
each element is that instruction. Otherwise the order is expressed with fences: a release fence
before the op's atomics, each atomic ``monotonic``, an acquire fence after. That is the standard
mapping of acquire/release RMWs onto fences, and it holds on every LLVM target, some of which
emit a plain (relaxed) instruction for an ``acq_rel`` atomicrmw -- silently dropping the
ordering a lock needs.

Every lane applies its own elements (repeated addresses in a block accumulate). An element
held by several registers or threads (a broadcast layout) is applied by its owner only; a
scalar atomic by thread 0. When the old values are used, threads that did not perform the
atomic receive them through shared memory.

Float ``max``/``min`` use the integer trick (IEEE order equals signed-integer order for
non-negative floats and reversed unsigned order for negative ones), so no float-atomic-max
instruction is needed; integer kinds follow the type's signedness; float ``add`` is ``fadd``.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import IRError
from ...ir.types import ScalarType
from ..movement import atomic_needs_broadcast
from .context import KernelLowering, lowers
from .shared import smem_read, smem_write
from .types import I1, I8


_SEMANTICS = {"relaxed": (False, False), "acquire": (False, True), "release": (True, False),
              "acq_rel": (True, True)}


def _sem(op) -> str:
    sem = op.attrs.get("sem", "acq_rel")
    if sem not in _SEMANTICS:
        raise IRError(f"unknown atomic memory semantics {sem!r}; expected one of "
                      f"{', '.join(_SEMANTICS)}")
    return sem


def _scope(op) -> str:
    return op.attrs.get("scope", "gpu")


def _ordering(kl: KernelLowering, scope: str = "gpu") -> str:
    """Ordering of each LLVM atomic instruction: relaxed; fences carry acquire/release."""
    sync = kl.ti.syncscope(scope)
    return f'syncscope("{sync}") monotonic' if sync else "monotonic"


def _fence(kl: KernelLowering, ordering: str, scope: str = "gpu") -> None:
    kl.b.fence(ordering, kl.ti.syncscope(scope))


class _Emitter:
    """Emits one element's atomic instruction for an op: the target's single instruction that
    carries the op's ``sem``/``scope`` itself (``TargetInfo.atomic_instruction``), when it has
    one for every instruction the op needs; else a relaxed LLVM atomic, the op then being
    wrapped in release/acquire fences (``fenced``)."""

    def __init__(self, kl: KernelLowering, op, needs: list[tuple[str, str]], address_space):
        self.kl, self.sem, self.scope = kl, _sem(op), _scope(op)
        found = {n: kl.ti.atomic_instruction(n[0], n[1], address_space) for n in needs}
        self.native = found if needs and all(found.values()) else None
        self.fenced = self.native is None

    def rmw(self, llvm_op: str, elem: str, ptr, val):
        if self.native is not None:
            return self.native[(llvm_op, elem)](self.kl.b, ptr, val, self.sem, self.scope)
        return self.kl.b.atomic_rmw(llvm_op, ptr, val, _ordering(self.kl, self.scope))

    def cas(self, elem: str, ptr, cmp, val):
        if self.native is not None:
            return self.native[("cas", elem)](self.kl.b, ptr, val, self.sem, self.scope,
                                              compare=cmp)
        pair = self.kl.b.cmpxchg(ptr, cmp, val, _ordering(self.kl, self.scope), "monotonic")
        return self.kl.b.extract_value(pair, 0)


def _bits_name(elem) -> str:
    return f"i{elem.bitwidth}"


def _rmw_instructions(kind: str, elem) -> list[tuple[str, str]]:
    """(LLVM atomicrmw op, element) of each instruction ``_rmw_one`` emits for ``kind``."""
    is_float = isinstance(elem, ScalarType) and elem.is_float
    unsigned = isinstance(elem, ScalarType) and elem.is_unsigned
    if kind in ("max", "min") and is_float:
        bits = _bits_name(elem)
        return [("max", bits), ("umin", bits)] if kind == "max" else [("min", bits), ("umax", bits)]
    if kind == "add":
        return [("fadd" if is_float else "add", elem.name)]
    if kind in ("max", "min"):
        return [(("u" + kind) if unsigned or elem.name == "i1" else kind, elem.name)]
    if kind in ("xchg", "and", "or", "xor"):
        return [(kind, _bits_name(elem) if is_float else elem.name)]
    raise IRError(f"unknown atomic kind {kind!r}")


def _int_view(kl: KernelLowering, v, elem):
    """(integer-typed value, back-conversion) for floats and i1."""
    b = kl.b
    if v.type == I1:
        return b.zext(v, I8), lambda x: b.icmp_unsigned("!=", x, ir.Constant(I8, 0))
    if isinstance(v.type, ir.IntType) or isinstance(v.type, ir.PointerType):
        return v, lambda x: x
    it = ir.IntType(elem.bitwidth)
    return b.bitcast(v, it), lambda x: b.bitcast(x, v.type)


def _rmw_one(kl: KernelLowering, em: _Emitter, kind: str, elem, ptr, val, pred):
    """One element's atomic under ``pred``; returns the old value (zero where not done)."""
    b = kl.b
    is_float = isinstance(elem, ScalarType) and elem.is_float
    (first_op, first_elem), *rest = _rmw_instructions(kind, elem)

    def guarded(p, emit, zero):
        if p is None:
            return emit()
        return kl.if_then(p, lambda: [emit()], [zero])[0]

    if kind in ("max", "min") and is_float:
        bits, back = _int_view(kl, val, elem)
        zero = ir.Constant(bits.type, 0)
        nonneg = b.icmp_signed(">=", bits, zero)
        (neg_op, _), = rest
        p_pos = nonneg if pred is None else b.and_(pred, nonneg)
        neg = b.not_(nonneg)
        p_neg = neg if pred is None else b.and_(pred, neg)
        old_pos = guarded(p_pos, lambda: em.rmw(first_op, first_elem, ptr, bits), zero)
        old_neg = guarded(p_neg, lambda: em.rmw(neg_op, first_elem, ptr, bits), zero)
        return back(b.select(nonneg, old_pos, old_neg))
    if kind == "add" and is_float:
        if elem.name == "bf16" and em.fenced:  # bf16 lives in an i16: compare-and-swap on the bits
            return guarded(pred, lambda: _bf16_add_cas(kl, em, ptr, val), ir.Constant(val.type, 0))
        return guarded(pred, lambda: em.rmw(first_op, first_elem, ptr, val),
                       ir.Constant(val.type, 0))
    ival, back = _int_view(kl, val, elem) if val.type == I1 or (is_float and kind != "xchg") \
        else (val, lambda x: x)
    zero = ir.Constant(ival.type, 0) if not isinstance(ival.type, ir.PointerType) \
        else ir.Constant(ival.type, None)
    return back(guarded(pred, lambda: em.rmw(first_op, first_elem, ptr, ival), zero))


def _bf16_add_cas(kl: KernelLowering, em: _Emitter, ptr, val):
    """``*ptr += val`` on bf16 bits with a compare-and-swap loop; returns the old bits."""
    from .elementwise import emit_binary

    b = kl.b
    start = b.block
    loop, done = kl.new_block("bf16_add"), kl.new_block("bf16_add_done")
    first = b.load(ptr, typ=val.type, align=2)
    b.branch(loop)
    b.position_at_end(loop)
    cur = b.phi(val.type)
    cur.add_incoming(first, start)
    new = emit_binary(b, "add", ScalarType("bf16"), cur, val, {})
    pair = b.cmpxchg(ptr, cur, new, _ordering(kl, em.scope), "monotonic")
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    cur.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return seen


def _cas_one(kl: KernelLowering, em: _Emitter, elem, ptr, cmp, val, pred):
    icmp_, back = _int_view(kl, cmp, elem)
    ival, _ = _int_view(kl, val, elem)
    zero = ir.Constant(ival.type, None if isinstance(ival.type, ir.PointerType) else 0)

    def emit():
        return em.cas(_cas_elem(kl, elem), ptr, icmp_, ival)

    old = emit() if pred is None else kl.if_then(pred, lambda: [emit()], [zero])[0]
    return back(old)


def _cas_elem(kl: KernelLowering, elem) -> str:
    """The element a compare-and-swap moves: its bits (floats compare bitwise; i1 is a byte)."""
    ty = kl.ltype(elem)
    if isinstance(ty, ir.PointerType):
        return "ptr"
    return "i8" if ty == I1 else f"i{elem.bitwidth}"


def _address_space(kl: KernelLowering, op) -> int:
    ty = kl.get(op.operands[0])[0].type
    return getattr(ty, "addrspace", 0)


def _lower_atomic(kl: KernelLowering, op, em: _Emitter, per_element,
                  mask_index: int | None) -> None:
    release, acquire = _SEMANTICS[em.sem]
    if release and em.fenced:
        _fence(kl, "release", em.scope)
    _lower_atomic_elements(kl, op, per_element, mask_index)
    if acquire and em.fenced:
        _fence(kl, "acquire", em.scope)


def _lower_atomic_elements(kl: KernelLowering, op, per_element, mask_index: int | None) -> None:
    b = kl.b
    ptr, res = op.operands[0], op.results[0]
    elem = res.type.scalar
    ptrs = kl.get(ptr)
    if not ptr.type.shape:
        pred = kl.first_thread_pred()
        if mask_index is not None:
            pred = b.and_(pred, kl.get(op.operands[mask_index])[0])
        old = per_element(0, pred)
        olds = [old]
        if atomic_needs_broadcast(op):
            from ..linear_layout import LinearLayout

            one = LinearLayout({"register": [], "lane": [], "warp": []}, (1,))
            smem_write(kl, olds, one, elem, pred=kl.first_thread_pred(), registers=[0])
            kl.ti.barrier(b)
            olds = smem_read(kl, one, elem)
        kl.set(res, olds)
        return
    ll = kl.linear(ptr)
    owner = kl.owner_pred(ll)
    owners = kl.owner_registers(ll)
    n = len(ptrs)
    olds: list = [None] * n
    masks = kl.get(op.operands[mask_index]) if mask_index is not None else None
    for r in owners:
        pred = owner
        if masks is not None:
            pred = masks[r] if pred is None else b.and_(pred, masks[r])
        olds[r] = per_element(r, pred)
    # registers repeating an owner register's element take its value
    first: dict[int, int] = {}
    for r in owners:
        first.setdefault(ll.apply_flat(register=r), r)
    for r in range(n):
        if olds[r] is None:
            olds[r] = olds[first[ll.apply_flat(register=r)]]
    if atomic_needs_broadcast(op):
        smem_write(kl, olds, ll, elem, pred=owner)
        kl.ti.barrier(b)
        olds = smem_read(kl, ll, elem)
    kl.set(res, olds)


@lowers("atomic_rmw")
def lower_atomic_rmw(kl: KernelLowering, op) -> None:
    kind = op.attrs["kind"]
    elem = op.results[0].type.scalar
    ptrs, vals = kl.get(op.operands[0]), kl.get(op.operands[1])
    em = _Emitter(kl, op, _rmw_instructions(kind, elem), _address_space(kl, op))
    _lower_atomic(kl, op, em, lambda r, pred: _rmw_one(kl, em, kind, elem, ptrs[r], vals[r], pred),
                  2 if len(op.operands) > 2 else None)


@lowers("atomic_cas")
def lower_atomic_cas(kl: KernelLowering, op) -> None:
    elem = op.results[0].type.scalar
    ptrs, cmps, vals = (kl.get(v) for v in op.operands)
    em = _Emitter(kl, op, [("cas", _cas_elem(kl, elem))], _address_space(kl, op))
    _lower_atomic(kl, op, em, lambda r, pred: _cas_one(kl, em, elem, ptrs[r], cmps[r], vals[r],
                                                       pred), None)



@lowers("atomic_poll")
def lower_atomic_poll(kl: KernelLowering, op) -> None:
    """Every thread spins on atomic (relaxed) loads of its own elements until each equals the
    expected value or the shared timeout expires; then the acquire fence (``sem="acquire"``)
    and a barrier, so no thread of the program runs ahead of a poll another thread performs."""
    ptrs, expected = kl.get(op.operands[0]), kl.get(op.operands[1])
    elem = op.operands[1].type.scalar
    timeout = start = None
    if len(op.operands) > 2:
        timer = getattr(kl.ti, "global_timer_ns", None)
        if timer is None:
            raise IRError(f"atomic_poll with timeout_ns needs a global timer, which target "
                          f"{type(kl.ti).__name__} does not provide")
        timeout = kl.get(op.operands[2])[0]
        start = timer(kl.b)
    scope = _scope(op)
    seen = [_poll_one(kl, ptr, want, elem, timeout, start, scope)
            for ptr, want in zip(ptrs, expected)]
    if op.attrs.get("sem", "acquire") == "acquire":
        _fence(kl, "acquire", scope)
    kl.ti.barrier(kl.b)
    kl.set(op.results[0], seen)


def _poll_one(kl: KernelLowering, ptr, want, elem, timeout, start, scope: str):
    """One element's spin loop; returns i1: the value was seen (else the time ran out)."""
    b = kl.b
    loop, done = kl.new_block("poll"), kl.new_block("poll_done")
    b.branch(loop)
    b.position_at_end(loop)
    value = b.load_atomic(ptr, _ordering(kl, scope), elem.bitwidth // 8, typ=want.type)
    seen = b.icmp_unsigned("==", value, want)
    stop = seen
    if timeout is not None:
        elapsed = b.sub(kl.ti.global_timer_ns(b), start)
        stop = b.or_(seen, b.icmp_unsigned(">=", elapsed, timeout))
    b.cbranch(stop, done, loop)
    b.position_at_end(done)
    return seen
