"""The stream pipeliner (``pipeline_matrix_loops``; the AMD plugin runs it as pass
``stream_pipeline``): multi-buffer the staged operands of a ``matrix_mma`` K loop in
shared memory and issue the global loads of later tiles while the matrix issues of this one run.

Why: a staged ``matrix_mma`` writes its operand tiles to shared memory and reads them back
inside the op, so each iteration waits for its own global loads with nothing to overlap them.
With ``num_stages = S >= 2`` the loop becomes (``D = S - 1`` tiles ahead, ``D`` ring slots)::

    prologue:  tiles 0 .. D-1 loaded (each under "iteration t exists");
               tile 0 -> slot 0 (matrix_ring_store); tiles 1 .. D-1 carried in registers
    loop i:    tile i+D loaded into registers (masked off past the end)   # in flight ...
               matrix_mma_ring(next, acc, slot i % D)                     # ... during the MFMAs
                   reads tile i from its slot and writes ``next`` (tile i+1: the one just
                   loaded when D = 1, else the oldest carried) into slot (i+1) % D
               carried tiles shift by one; tile i+D joins them

so ``S = 2`` keeps one slot (LDS as without pipelining, the next tile's global loads overlap
this tile's MFMAs) and ``S = 3`` two slots and one register tile in flight -- the shape of
Triton's AMD stream pipeliner (global loads ``S - 1`` iterations ahead, ``S - 1`` LDS buffers).
A ``for`` loop's own ``num_stages`` attribute (``tl.range(..., num_stages=)``) overrides the
option.

Registers: a target with ``TargetInfo.register_budget(num_warps)`` (AMD) bounds the prefetch:
the accumulator plus ``D`` tiles in flight must fit it, else ``D`` shrinks (to 0: the loop is
left as written) with a remark -- spilling in the K loop costs more than the overlap gains.

Eligibility (see :mod:`naiad.gpu.passes.loop_pipelining` for the general rules: constant step,
no writes, address computations that may run ahead): the loop body holds exactly one
``matrix_mma`` whose operands A and B are both staged (:mod:`.staging`) and both ``load`` ops
of the body used only by it, and no other shared-memory user. Masked loads (K not a multiple of
the block) keep their masks, evaluated for the iteration they belong to.
"""
from __future__ import annotations

from ... import remarks
from ...ir.core import Module, Operation
from ...ir.types import i1, i32
from ..layouts import linear_of
from ..movement import scratch_bytes
from ..passes.loop_pipelining import (NotPipelinable, add_carried, ahead, check_ahead,
                                      constant, constant_step, drop_dead, guarded_load,
                                      iteration_exists, kernel_loops, loop_writes,
                                      yield_carried)
from .op import MATRIX_MMA
from .ring import MMA_RING, RING_STORE, tile_bytes
from .staging import operand_views


def pipeline_matrix_loops(module: Module, ctx=None, num_stages: int = 2,
                          min_slots: int = 1) -> bool:
    """Pipeline every eligible loop. ``min_slots`` asks for at least that many ring slots (a
    ping-pong schedule needs two); it is not honoured where the larger ring would not fit the
    target's shared memory (``TargetInfo.shared_memory_bytes``), which then gets ``S - 1``."""
    ti = getattr(ctx, "target_info", None)
    limit = getattr(ti, "shared_memory_bytes", None)
    budget = ti.register_budget(getattr(ctx, "num_warps", 4)) \
        if hasattr(ti, "register_budget") else None
    changed = False
    for op in kernel_loops(module):
        stages = int(op.attrs["num_stages"] if "num_stages" in op.attrs else num_stages)
        if stages >= 2:
            changed |= pipeline_loop(op, stages, min_slots, limit, module, budget)
    return changed


def pipelinable_mma(loop: Operation) -> Operation:
    """The loop's one staged ``matrix_mma`` fed by two body loads, or NotPipelinable."""
    body = loop.regions[0].block
    if constant_step(loop) is None:
        raise NotPipelinable("the loop step is not a positive constant")
    if loop_writes(loop):
        raise NotPipelinable("the loop writes memory")
    mmas = [o for o in body.ops if o.name == MATRIX_MMA]
    if len(mmas) != 1:
        raise NotPipelinable(f"{len(mmas)} matrix_mma ops in the loop body")
    mma = mmas[0]
    if any(o is not mma and scratch_bytes(o) for o in loop.walk()):
        raise NotPipelinable("another shared-memory user in the loop")
    if any(staged is None for _, _, staged in operand_views(mma)):
        raise NotPipelinable("an operand is read from registers")
    for v in mma.operands[:2]:
        d = v.defining_op
        if d is None or d.name != "load" or d.parent is not body or d.attrs.get("volatile") \
                or len(v.uses) != 1:
            raise NotPipelinable("an operand is not a load of the loop body used only here")
    return mma


def pipeline_loop(loop: Operation, stages: int, min_slots: int = 1,
                  limit: int | None = None, module: Module | None = None,
                  budget: int | None = None) -> bool:
    try:
        mma = pipelinable_mma(loop)
        body = loop.regions[0].block
        loads = [v.defining_op for v in mma.operands[:2]]
        carried = check_ahead([x for ld in loads for x in ld.operands], body, mma)
    except NotPipelinable as why:
        mmas = [o for o in loop.regions[0].block.ops if o.name == MATRIX_MMA]
        if module is not None and mmas:  # a K loop the user may expect pipelined
            remarks.remark(module, mmas[0].loc, "the dot's loop",
                           f"is not software-pipelined (num_stages {stages}): {why}")
        return False
    depth = stages - 1
    if budget is not None:
        depth = _depth_in_budget(loop, mma, loads, depth, budget, stages, module)
        if depth == 0:
            return False
    slots = max(depth, min_slots)
    per_slot = sum(tile_bytes(ld.results[0].type) for ld in loads)
    if limit and slots > depth and slots * per_slot > limit:
        slots = depth
    _rewrite(loop, mma, loads, carried, depth, slots)
    return True


def registers_in_flight(mma: Operation, loads, depth: int) -> int:
    """32-bit registers per lane the pipelined loop keeps live across its MFMAs: the
    accumulator and ``depth`` operand tiles (the one just loaded and ``depth - 1`` carried)."""
    def regs(t) -> int:
        return -(-linear_of(t.layout, t.shape).in_size("register") * t.element.bitwidth // 32)

    return regs(mma.operands[2].type) + depth * sum(regs(ld.results[0].type) for ld in loads)


def _depth_in_budget(loop, mma, loads, depth: int, budget: int, stages: int, module) -> int:
    """The deepest prefetch (at most ``depth`` tiles) whose registers fit ``budget``
    (``TargetInfo.register_budget``); a remark when it is less than asked (0: not pipelined)."""
    fits = depth
    while fits and registers_in_flight(mma, loads, fits) > budget:
        fits -= 1
    if fits < depth and module is not None:
        need = registers_in_flight(mma, loads, depth)
        what = f"prefetches {fits} tile{'s' if fits != 1 else ''}" if fits else \
            "is not software-pipelined"
        remarks.remark(module, mma.loc, "the dot's loop",
                       f"{what} (num_stages {stages} asks {depth}): the accumulator and "
                       f"{depth} tiles in flight would hold about {need} registers per lane, "
                       f"over the target's budget of {budget}")
    return fits


def _rewrite(loop: Operation, mma: Operation, loads, carried, depth: int, slots: int) -> None:
    body = loop.regions[0].block
    outer = loop.parent
    iv = body.args[0]
    attrs = {"k_width": mma.attrs["k_width"], "slots": slots}

    # prologue: tiles 0 .. depth-1, tile 0 into slot 0, the others carried in registers
    start = {iv: loop.operands[0]}
    start.update({a: loop.operands[3 + a.index - 1] for a in carried})
    tiles = []
    for t in range(depth):
        env = ahead(loop, carried, t, outer, loop, start)
        valid = iteration_exists(loop, env, outer, loop)
        tiles.append([guarded_load(ld, body, env, valid, outer, loop).result for ld in loads])
    zero = constant(0, i32, outer, loop, loop.loc)
    outer.insert_before(loop, Operation(RING_STORE, tiles[0] + [zero], [], dict(attrs),
                                        loc=mma.loc))
    held = [[add_carried(loop, v, v.name_hint) for v in tile] for tile in tiles[1:]]
    slot = add_carried(loop, zero, "slot") if slots > 1 else zero

    # the body: tile i+depth loaded before the MFMAs of tile i
    env = ahead(loop, carried, depth, body, mma)
    valid = iteration_exists(loop, env, body, mma)
    fresh = [guarded_load(ld, body, env, valid, body, mma).result for ld in loads]
    nxt = held[0] if held else fresh
    ring = Operation(MMA_RING, nxt + [mma.operands[2], slot], [mma.results[0].type],
                     {"instruction": mma.attrs["instruction"], **attrs}, loc=mma.loc)
    body.insert_before(mma, ring)
    ring.result.name_hint = mma.results[0].name_hint
    mma.results[0].replace_all_uses_with(ring.result)
    mma.erase()
    for ld in loads:
        ld.erase()
    if held:  # the carried tiles move up by one; the fresh one joins at the end
        for tile in held[1:] + [fresh]:
            for v in tile:
                yield_carried(loop, v)
    if slots > 1:
        one = constant(1, i32, body, body.terminator, loop.loc)
        inc = body.insert_before(body.terminator, Operation("add", [slot, one], [i32],
                                                            loc=loop.loc)).result
        lim = constant(slots, i32, body, body.terminator, loop.loc)
        wrap = body.insert_before(body.terminator, Operation(
            "cmp", [inc, lim], [i1], {"pred": "eq"}, loc=loop.loc)).result
        yield_carried(loop, body.insert_before(body.terminator, Operation(
            "select", [wrap, zero, inc], [i32], loc=loop.loc)).result)
    drop_dead(body)

