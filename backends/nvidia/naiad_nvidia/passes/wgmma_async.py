"""Which wgmmas of a multi-dot ring loop (:mod:`naiad_nvidia.passes.multi_dot_ring`) may run
asynchronously, and where their results are waited for.

Why: a wgmma that waits for its own result (``wgmma.wait_group 0`` right after its commit)
leaves the tensor cores idle while the warps compute the next iteration's addresses and the
next dot's operands. Attention's ``acc = tl.dot(p, v, acc)`` is read only in the next iteration
(``acc * alpha``), so it can run while the next ``q @ k.T`` is issued and waited for.

The analysis, on the loop body in program order (each dot commits one wgmma group):

* a dot is *in flight* (issued without a wait) when its result is used only by the loop's
  ``yield``: nothing in its own iteration reads it (the ring then also issues the first dot
  without a wait and waits for it after the early copies, which so run while it computes);
* the loop must keep at least one *synchronous* dot (one read in its own iteration: it waits
  with ``wait_group 0``, retiring every older group), and a ring barrier (a tile's first reader
  waits for its copy at a barrier) must follow the first synchronous dot's wait: then, past
  that barrier, no warp still reads the ring slot of the previous iteration, and the copies of
  iteration ``i + D`` -- which overwrite that slot -- are issued after the iteration's last dot,
  while it runs;
* an in-flight dot's register A operand (``p``) is redefined by the next iteration; it must be
  computed after the synchronous dot that retires the in-flight one (PTX forbids touching a
  running wgmma's registers; ptxas would serialize every wgmma of the kernel otherwise);
* where the result is next read -- through the loop-carried block argument in the next
  iteration, or the loop's result after the loop -- an ``nvidia.wgmma_wait`` is placed before the
  first reader, with ``pending`` = the number of groups committed after the dot's by then (the
  largest count that still retires it); a block argument read only as the same dot's
  accumulator needs no wait (wgmmas chain on in-flight accumulators).

Loops that do not meet these conditions keep every dot synchronous, with today's code; so do
loops whose accumulators and register A operands exceed :data:`REGISTER_BUDGET` registers per
thread (keeping them live longer would spill).
"""
from __future__ import annotations

from naiad.backend import remarks
from naiad.ir import Operation

from ..ir.wgmma_op import WGMMA_WAIT_OP


#: 32-bit registers per thread the loop's dot operands may hold (accumulators, register A
#: operands) for its dots to run in flight: a dot in flight keeps its A registers and its
#: accumulator live into the next iteration, which under a full register file spills (hd128
#: with 4 warps: 128 + 64 + 32)
REGISTER_BUDGET = 192


def operand_registers(slots) -> int:
    """32-bit registers per thread of the loop's accumulators and register A operands."""
    total = 0
    for s in slots:
        acc = s.dot.results[0].type
        threads = 32 * acc.layout.warps_per_cta[0]
        m, n = acc.shape
        total += m * n // threads
        if s.a_regs:
            m, k = s.dot.operands[0].type.shape
            total += m * k // 2 // threads
    return total


def _top(op, body):
    """``op`` or its ancestor that sits directly in ``body``."""
    while op is not None and op.parent is not body:
        op = op.parent_op
    return op


def in_flight_dots(body, slots, first_readers, module=None) -> set[int]:
    """Indices of ``slots`` (the loop's :class:`DotSlot` s, in program order) whose wgmma may
    be issued without a wait; empty when the loop keeps every dot synchronous.
    ``first_readers``: indices of the dots that wait for a ring tile at a barrier. A dot kept
    waiting by the register budget alone gets a remark on ``module``."""
    term = body.terminator
    pos = {id(op): i for i, op in enumerate(body.ops)}
    cand = {j for j, s in enumerate(slots)
            if s.dot.results[0].uses and all(u is term for u, _ in s.dot.results[0].uses)}
    registers = operand_registers(slots)
    if cand and registers > REGISTER_BUDGET:
        if module is not None:
            for j in sorted(cand):
                remarks.remark(module, slots[j].dot.loc, "dot", (
                    f"waits for its result each iteration (wgmma.wait_group 0) although only "
                    f"the next iteration reads it: the loop's accumulators and register A "
                    f"operands take {registers} registers per thread, and keeping them live "
                    f"into the next iteration past {REGISTER_BUDGET} would spill"))
        return set()
    while cand:
        sync = [j for j in range(len(slots)) if j not in cand]
        if not sync or not any(j > sync[0] for j in first_readers):
            return set()
        drop = {j for j in cand if not _a_redefined_after_retirement(body, pos, slots, j, sync)}
        if not drop:
            return cand
        cand -= drop
    return set()


def _a_redefined_after_retirement(body, pos, slots, j, sync) -> bool:
    """The A registers of dot ``j`` are rewritten (next iteration) only after the synchronous
    dot that retires it: one later in its own iteration, else the first of the next."""
    s = slots[j]
    if not s.a_regs or any(k > j for k in sync):
        return True
    a = s.dot.operands[0]
    d = _top(a.defining_op, body) if not a.is_block_arg else None
    return d is not None and pos[id(d)] > pos[id(slots[sync[0]].dot)]


def place_waits(loop, rings, in_flight, loc) -> None:
    """Put an ``nvidia.wgmma_wait`` before the first reader of each in-flight ring op's result
    (``rings``: the loop's ring ops in program order): in the next iteration through the
    block argument, and after the loop through its result."""
    body = loop.regions[0].block
    term = body.terminator
    for j in sorted(in_flight):
        ring = rings[j]
        for t, v in enumerate(term.operands):
            if v is not ring.results[0]:
                continue
            _wait_in_body(body, body.args[t + 1], ring, rings, j, loc)
            _wait_after(loop, loop.results[t], loc)


def _wait_in_body(body, arg, ring, rings, j, loc) -> None:
    users = [u for u, _ in arg.uses]
    if not users or all(u is ring for u in users):
        return   # only chained into the same dot: wgmma accumulates into in-flight registers
    pos = {id(op): i for i, op in enumerate(body.ops)}
    first = min((_top(u, body) for u in users), key=lambda op: pos[id(op)])
    ring_pos = [pos[id(r)] for r in rings]
    # groups committed after dot j's: the later dots of its iteration, the earlier ones of this
    pending = sum(p > ring_pos[j] for p in ring_pos) + sum(p < pos[id(first)] for p in ring_pos)
    wait = Operation(WGMMA_WAIT_OP, [], [arg.type], {"pending": pending}, loc=loc)
    body.insert_before(first, wait)
    arg.replace_all_uses_with(wait.result)
    wait.add_operand(arg)


def _wait_after(loop, res, loc) -> None:
    if not res.uses:
        return
    outer = loop.parent
    wait = Operation(WGMMA_WAIT_OP, [], [res.type], {"pending": 0}, loc=loc)
    outer.insert_before(outer.ops[outer.ops.index(loop) + 1], wait)
    res.replace_all_uses_with(wait.result)
    wait.add_operand(res)
