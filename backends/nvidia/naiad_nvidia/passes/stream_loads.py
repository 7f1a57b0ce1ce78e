"""GPU-IR pass: stream the loads of a memory-bound loop through shared memory with ``cp.async``
when the loop asks for stages (``tl.range(lo, hi, step, num_stages=S)``, ``S >= 2``).

Why: a loop like tutorial 02's softmax (one row per iteration, ``row_idx`` stepping by the
number of programs) otherwise waits for each row's loads before its reductions; with few
programs per SM the memory latency is exposed once per iteration. After this pass the next
``D = S - 1`` iterations' tiles are in flight while this one computes, without holding them in
registers (the registers, and so the occupancy, stay as they were):

    prologue: copy tiles of iterations 0..D-1 into slots 0..D-1 (one commit group each,
              under "the iteration exists")
    loop j:   cp.async.wait_group D-1                  # tile j landed
              x = read slot j % D (mask -> other)      # where the load was
              ...                                      # the body, its stores included
              copy the tile of iteration j + D into slot j % D; commit
    after:    cp.async.wait_group 0

Each thread copies its own registers' chunks and reads back only those (slot offset of
register chunk ``c`` of thread ``t``: ``(c * threads + t) * chunk``, so a warp's reads are
consecutive 4/8/16-byte words): no barrier is needed, and the ring is a *private* buffer
(``private_buffer``) that the core's allocator places above the shared scratch. A slot is
rewritten at the end of the iteration that read it, after every use of the values read (the
values flow into the body's ops, so the read has completed).

As in Triton, asking for stages says the loop's loads may be issued up to ``D`` iterations
early: they are moved past the body's stores (a loop whose iteration reads what an earlier
iteration of the same loop wrote must not ask for stages). Loads are streamed when (all
checked, otherwise the loop is left alone):

* the loop has no dot and no op of this backend (the matrix passes pipeline those loops), no
  atomic, call or volatile load (programs may synchronise through them: a lock, a flag); its
  induction variable is a signed integer;
* the load is directly in the body, not volatile, of a tensor of 1..64-bit non-pointer,
  non-boolean elements, and its pointer and mask are computed from loop invariants and the
  induction variable only, by pure ops without division;
* its chunks (``vec`` contiguous elements, uniform mask) are 4, 8 or 16 bytes (``cp.async``'s
  sizes), and the ring fits the shared-memory budget (``D`` is reduced until it does).

A load left alone for its chunk size or for the budget gets a performance remark at its line
(``naiad.compile(...).metadata["remarks"]``, ``NAIAD_REMARKS=1``): those are the cases a user
can fix (a pointer or stride not known to be a multiple of 16, a smaller tile or fewer stages).
"""
from __future__ import annotations

from naiad.backend import OpDef, linear_of, register_op, remarks, scratch_bytes, vector_run
from naiad.ir import Module, Operation, TensorType, Value, i1, i32

from .prefetch_loads import NotEligible, check_slice, drop_dead, in_body, materialize
from .prefetch_loads import insert_constant as _const

COPY_OP = "nvidia.stream_copy"
READ_OP = "nvidia.stream_read"
COMMIT_OP = "nvidia.cp_async_commit"
WAIT_OP = "nvidia.cp_async_wait"
#: the shared memory one CTA may use when the target does not say (sm_90's opt-in maximum)
DEFAULT_SHARED_LIMIT = 227 * 1024
#: ops whose loops belong to the matrix passes
_MATRIX_PREFIXES = ("dot", "nvidia.")
CHUNK_SIZES = (4, 8, 16)
#: ops through which programs may synchronise (a lock, a flag): loads are not moved across them
_SYNCHRONIZING = frozenset({"atomic_rmw", "atomic_cas", "call"})

register_op(OpDef(COPY_OP, (3, 4), 0, 0, ("slot_bytes", "vec", "private_buffer",
                                          "private_bytes"), frozenset(),
                  "cp.async of each thread's chunks of a tile into its part of ring slot "
                  "`slot`: (ptr, valid i1, slot i32[, mask])"))
register_op(OpDef(READ_OP, (1, 3), 1, 0, ("slot_bytes", "vec", "private_buffer",
                                          "private_bytes"), frozenset(),
                  "the tile a thread copied into ring slot `slot`: (slot i32[, mask, other])"))


def stream_loop_loads(module: Module, ctx=None) -> bool:
    """The pass (see the module docstring)."""
    threads = (ctx.num_warps * ctx.warp_size) if ctx is not None else 128
    limit = int(getattr(getattr(ctx, "target_info", None), "shared_memory_bytes", 0)
                or DEFAULT_SHARED_LIMIT)
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        buffers = 0
        for op in list(fn.walk()):
            if op.name == "for" and int(op.attrs.get("num_stages") or 0) >= 2:
                scratch = max((scratch_bytes(o) for o in fn.walk()), default=0)
                if _stream(module, op, threads, limit - scratch, f"stream{buffers}"):
                    buffers += 1
                    changed = True
    return changed


# -- eligibility ---------------------------------------------------------------------------------

def _tile_bytes(load: Operation, threads: int, module=None) -> tuple[int, int] | None:
    """(bytes of one slot, elements per chunk, bytes per element) for a streamable load;
    None otherwise (with a remark on ``module`` when only the chunk size is wrong)."""
    t = load.results[0].type
    if not isinstance(t, TensorType) or t.layout is None:
        return None
    elem = t.scalar
    if elem.is_pointer or elem.is_bool or elem.bitwidth not in (8, 16, 32, 64):
        return None
    ll = linear_of(t.layout, t.shape)
    vec = vector_run(ll, int(load.attrs.get("vec", 1)))
    size = elem.bitwidth // 8
    if vec * size not in CHUNK_SIZES:
        if module is not None:
            remarks.remark(module, load.loc, "load", (
                f"is not prefetched by cp.async in its tl.range(num_stages=...) loop: each "
                f"thread's contiguous run is {vec} element(s) = {vec * size} B, cp.async copies "
                f"4, 8 or 16 B (the address is not known to be aligned -- a pointer, offset "
                f"or stride not known to be a multiple of 16, see tl.multiple_of -- or the "
                f"layout gives a thread fewer contiguous elements)"))
        return None
    return ll.in_size("register") * size * threads, vec, size


def _streamable(loop: Operation, threads: int, module=None) \
        -> list[tuple[Operation, int, int, int]]:
    body = loop.regions[0].block
    iv = body.args[0]
    if not (iv.type.is_int and iv.type.is_signed):
        return []
    for o in loop.walk():
        if o.name.startswith(_MATRIX_PREFIXES) or o.name in _SYNCHRONIZING \
                or (o.name == "load" and o.attrs.get("volatile")):
            return []
    out = []
    for op in body.ops:
        if op.name != "load" or op.attrs.get("volatile"):
            continue
        try:
            check_slice(op, body, set())
            if _uses_carried(op, body):
                continue
        except NotEligible:
            continue
        shape = _tile_bytes(op, threads, module)
        if shape is None:
            continue
        out.append((op, *shape))
    return out


def _uses_carried(load: Operation, body) -> bool:
    """Whether the load's operands depend on a loop-carried value (a block argument other than
    the induction variable)."""
    stack, seen = list(load.operands[:2]), set()
    while stack:
        v = stack.pop()
        if v.is_block_arg and v.owner is body:
            if v.index > 0:
                return True
            continue
        d = in_body(v, body)
        if d is not None and id(d) not in seen:
            seen.add(id(d))
            stack.extend(d.operands)
    return False


# -- the rewrite ---------------------------------------------------------------------------------

def _exists(block, anchor, x, loop, loc) -> Value:
    """i1: iteration value ``x`` is one the loop runs (``x < ub``, ``x > ub`` for a negative
    step; the sign is tested at run time unless the step is a constant)."""
    ub, step = loop.operands[1], loop.operands[2]
    lt = block.insert_before(anchor, Operation("cmp", [x, ub], [i1], {"pred": "lt"},
                                               loc=loc)).result
    d = step.defining_op
    if d is not None and d.name == "constant" and isinstance(d.attrs.get("value"), int) \
            and d.attrs["value"] > 0:
        return lt
    zero = _const(block, anchor, 0, step.type, loc)
    up = block.insert_before(anchor, Operation("cmp", [step, zero], [i1], {"pred": "gt"},
                                               loc=loc)).result
    gt = block.insert_before(anchor, Operation("cmp", [x, ub], [i1], {"pred": "gt"},
                                               loc=loc)).result
    return block.insert_before(anchor, Operation("select", [up, lt, gt], [i1],
                                                 loc=loc)).result


def _ahead(block, anchor, base, k, loop, loc) -> Value:
    """``base + k * step`` (``base`` when k is 0)."""
    if k == 0:
        return base
    step = loop.operands[2]
    kk = _const(block, anchor, k, step.type, loc)
    off = block.insert_before(anchor, Operation("mul", [kk, step], [step.type], loc=loc)).result
    return block.insert_before(anchor, Operation("add", [base, off], [base.type],
                                                 loc=loc)).result


def _copies(loads, loop, iv_value, block, anchor, slot, attrs, loc) -> None:
    body = loop.regions[0].block
    valid = _exists(block, anchor, iv_value, loop, loc)
    cache: dict = {}
    for load, _, _, _ in loads:
        ops = [materialize(v, body, {body.args[0]: iv_value}, block, anchor, cache)
               for v in load.operands[:2]]
        block.insert_before(anchor, Operation(COPY_OP, [ops[0], valid, slot] + ops[1:],
                                              [], dict(attrs[id(load)]), loc=load.loc))
    block.insert_before(anchor, Operation(COMMIT_OP, [], [], {}, loc=loc))


def _stream(module, loop: Operation, threads: int, budget: int, buffer: str) -> bool:
    loads = _streamable(loop, threads, module)
    if not loads:
        return False
    per_slot = sum((b + 15) // 16 * 16 for _, b, _, _ in loads)
    distance = int(loop.attrs["num_stages"]) - 1
    while distance > 1 and distance * per_slot > budget:
        distance -= 1
    if distance * per_slot > budget:
        remarks.remark(module, loads[0][0].loc, "load", (
            f"is not prefetched by cp.async in its tl.range(num_stages=...) loop: one stage of "
            f"the loop's loads needs {per_slot} B of shared memory, {max(budget, 0)} B are "
            f"left (a smaller tile or fewer warps' worth of data per iteration fits)"))
        return False
    body = loop.regions[0].block
    iv = body.args[0]
    outer = loop.parent
    loc = loop.loc
    attrs, offset = {}, 0
    for load, slot_bytes, vec, elem_bytes in loads:
        # one ring per loop: each load's tile sits at its offset inside every slot
        attrs[id(load)] = {"slot_bytes": per_slot, "vec": vec, "elem_bytes": elem_bytes,
                           "tile_offset": offset,
                           "private_buffer": buffer, "private_bytes": distance * per_slot}
        offset += (slot_bytes + 15) // 16 * 16

    # prologue: iterations 0..D-1 into slots 0..D-1
    lb = loop.operands[0]
    for s in range(distance):
        x = _ahead(outer, loop, lb, s, loop, loc)
        _copies(loads, loop, x, outer, loop, _const(outer, loop, s, i32, loc), attrs, loc)

    # the read slot j % D is carried
    slot = body.add_arg(i32, "slot")
    loop.add_operand(_const(outer, loop, 0, i32, loc))
    loop.results.append(Value(i32, loop, len(loop.results)))

    first = min(body.ops.index(ld) for ld, _, _, _ in loads)
    body.insert_before(body.ops[first], Operation(WAIT_OP, [], [], {"pending": distance - 1},
                                                  loc=loc))
    for load, _, _, _ in loads:
        read = Operation(READ_OP, [slot] + list(load.operands[1:3]), [load.results[0].type],
                         dict(attrs[id(load)]), loc=load.loc)
        body.insert_before(load, read)
        read.result.name_hint = load.results[0].name_hint
        load.results[0].replace_all_uses_with(read.result)
    # at the end of the body: iteration j + D into the slot just read
    end = body.terminator
    _copies(loads, loop, _ahead(body, end, iv, distance, loop, loc), body, end, slot, attrs,
            loc)
    for load, _, _, _ in loads:
        load.erase()
    one = _const(body, end, 1, i32, loc)
    zero = _const(body, end, 0, i32, loc)
    last = _const(body, end, distance - 1, i32, loc)
    inc = body.insert_before(end, Operation("add", [slot, one], [i32], loc=loc)).result
    wrap = body.insert_before(end, Operation("cmp", [slot, last], [i1], {"pred": "eq"},
                                             loc=loc)).result
    body.terminator.add_operand(
        body.insert_before(end, Operation("select", [wrap, zero, inc], [i32], loc=loc)).result)
    drop_dead(body)
    after = outer.ops[outer.ops.index(loop) + 1]
    outer.insert_before(after, Operation(WAIT_OP, [], [], {"pending": 0}, loc=loc))
    return True
