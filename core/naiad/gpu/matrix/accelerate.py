"""Pass ``accelerate_matmul``: put eligible ``dot`` ops on the backend's matrix instructions.

Runs on tile IR before the core's layout assignment. The table comes from the
``naiad_matrix_instructions(target, options)`` hook (entries in the backend's order of
preference, already filtered by its options such as ``matrix_instr_nonkdim`` / ``kpack``), the
backend's choices about the pass from ``naiad_matrix_policy`` (:class:`.policy.MatrixPolicy`).
Per dot of a kernel:

1. with ``fold_accumulating_add``: ``add(x, dot(a, b, 0))`` becomes ``dot(a, b, x)``;
2. the first entry that serves the dot's element types (and, for f32 operands, its
   ``input_precision``), tiles its shape and has a warp split wins; entries whose
   ``from_widened`` names the operands' type are tried first on the tiles both operands were
   widened from by ``cast`` (their casts then go away);
3. the dot becomes::

    <entry.op>(convert_layout(a), convert_layout(b), convert_layout(acc)) {attributes}

   -- ``matrix_mma {instruction, k_width}`` or the backend op the entry names -- with the
   operands in ``#dot_operand`` layouts of the entry's matrix layout (with
   ``hoist_invariant_operands``, an operand defined outside the dot's loop is converted once,
   before the loop) and the accumulator in that layout; the core's assignment keeps those
   layouts (a loop-carried accumulator stays in it) and :func:`stage_matrix_operands` later
   lets operands that need shared memory go through a swizzled buffer instead;
4. the policy's ``explain`` may attach a performance remark (why the dot is on FMAs or on a
   slower entry).

A dot no entry fits stays on the core's exact FMA lowering.

Warps: the entry's ``warps`` rule, else :func:`choose_warps`: ``wm x wn = num_warps`` along M and
N, preferring splits where every warp has its own tiles, then the fewest operand elements per
warp (``M / wm + N / wn``).
"""
from __future__ import annotations

from ...ir.core import Module, Operation
from ...ir.types import TensorType
from ...remarks import remark
from ..layouts import DotOperandLayout
from .instructions import MatrixInstruction, register_matrix_instructions
from .op import MATRIX_MMA
from .policy import DEFAULT_POLICY, MatrixPolicy


def instruction_table(ctx) -> list[MatrixInstruction]:
    """The entries for this compile: ``ctx.matrix_instructions`` when a test sets it, else the
    answer of the target's backend to ``naiad_matrix_instructions``."""
    table = getattr(ctx, "matrix_instructions", None)
    if table is None:
        pm = getattr(ctx, "plugins", None)
        if pm is None or not hasattr(pm.hook, "naiad_matrix_instructions"):
            return []
        table = pm.hook.naiad_matrix_instructions(target=ctx.target, options=ctx.options)
    table = list(table or ())
    register_matrix_instructions(table)
    return table


def matrix_policy(ctx) -> MatrixPolicy:
    """``ctx.matrix_policy`` when a test sets it, else the backend's ``naiad_matrix_policy``
    answer, else the defaults."""
    policy = getattr(ctx, "matrix_policy", None)
    if policy is None:
        pm = getattr(ctx, "plugins", None)
        if pm is not None and hasattr(pm.hook, "naiad_matrix_policy"):
            policy = pm.hook.naiad_matrix_policy(target=ctx.target, options=ctx.options)
    return policy or DEFAULT_POLICY


def choose_warps(m: int, n: int, tile: tuple[int, int], num_warps: int) -> tuple[int, int]:
    best = None
    wm = num_warps
    while wm >= 1:
        wn = num_warps // wm
        copies = max(1, tile[0] * wm // m) * max(1, tile[1] * wn // n)
        cost = (copies, m // min(wm, m) + n // min(wn, n), -wm)
        if best is None or cost < best[0]:
            best = (cost, (wm, wn))
        wm //= 2
    return best[1]


def pick_instruction(op: Operation, table, num_warps: int = 4):
    """``(entry, warps, operands)`` for the dot ``op`` -- ``operands`` are its A and B, or the
    tiles they were widened from when a ``from_widened`` entry takes those -- or None."""
    a, b, acc = op.operands
    if not all(isinstance(v.type, TensorType) and len(v.type.shape) == 2 for v in (a, b, acc)):
        return None
    narrow = _widened_sources(a, b)
    wide = a.type.element.name
    for operands, entries in ((narrow, [e for e in table if wide in e.from_widened]),
                              ((a, b), table)):
        if operands is None:
            continue
        for entry in entries:
            warps = _fits(entry, op, *operands, num_warps)
            if warps is not None:
                return entry, warps, operands
    return None


def _fits(entry: MatrixInstruction, op: Operation, a, b, num_warps: int):
    """The warp split ``entry`` computes the dot with (operands ``a`` and ``b``), or None."""
    ta, tb, acc = a.type, b.type, op.operands[2].type
    (m, k), n = ta.shape, tb.shape[1]
    im, in_, _ = entry.shape
    if not entry.serves(ta.element.name, tb.element.name, acc.element.name,
                        op.attrs.get("input_precision")) or m % im or n % in_ or k % entry.k_step:
        return None
    if entry.warps is not None:
        return entry.warps(m, n, num_warps)
    return choose_warps(m, n, entry.shape[:2], num_warps)


def _widened_sources(a, b):
    """The tiles ``a`` and ``b`` were widened from (both by ``cast``, from one element type)."""
    casts = [v.defining_op for v in (a, b)]
    if any(c is None or c.name != "cast" for c in casts):
        return None
    srcs = tuple(c.operands[0] for c in casts)
    return srcs if srcs[0].type.element == srcs[1].type.element else None


def accelerate_matmul(module: Module, ctx) -> bool:
    table = instruction_table(ctx)
    policy = matrix_policy(ctx)
    if not table and policy.explain is None:
        return False
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in list(fn.walk()):
            if op.name != "dot":
                continue
            if table and policy.fold_accumulating_add:
                changed |= fold_accumulating_add(op)
            picked = pick_instruction(op, table, ctx.num_warps)
            if policy.explain is not None:
                message = policy.explain(op, picked and picked[0], ctx.num_warps)
                if message:
                    remark(module, op.loc, "dot", message)
            if picked is not None:
                _rewrite(op, *picked, policy.hoist_invariant_operands)
                changed = True
    return changed


accelerate_matmul.leaves_partial_ir = True  # NAIAD_DEBUG verifies after layout assignment


def _rewrite(op: Operation, entry: MatrixInstruction, warps, ab, hoist_invariant: bool) -> None:
    (a, b), acc = ab, op.operands[2]
    layout = entry.make_layout(warps)
    block = op.parent
    operands = []
    for v, want in ((a, DotOperandLayout(0, layout, entry.k_width)),
                    (b, DotOperandLayout(1, layout, entry.k_width)), (acc, layout)):
        t = v.type
        cvt = Operation("convert_layout", [v], [TensorType(t.shape, t.element, want)], loc=op.loc)
        hoist = hoist_invariant and v is not acc and \
            not _replicated(entry.a_map if v is a else entry.b_map)
        anchor = _outermost_after(v, op) if hoist else op
        anchor.parent.insert_before(anchor, cvt)
        operands.append(cvt.result)
    attrs = {"instruction": entry.name, "k_width": entry.k_width} if entry.core_op \
        else dict(entry.op_attrs)
    attrs.update((name, op.attrs[name]) for name in entry.carried_attrs if op.attrs.get(name))
    mma = Operation(entry.op, operands, [TensorType(acc.type.shape, acc.type.element, layout)],
                    attrs, loc=op.loc)
    block.insert_before(op, mma)
    mma.result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(mma.result)
    widened = dict.fromkeys(v.defining_op for v in op.operands[:2]) \
        if ab[0] is not op.operands[0] else {}
    op.erase()
    for cast in widened:  # the wide copies of narrow tiles the entry took instead
        if not cast.results[0].uses:
            cast.erase()


def _is_zero(v) -> bool:
    d = v.defining_op
    return (d is not None and d.name == "constant" and not isinstance(d.attrs.get("value"), bool)
            and d.attrs.get("value") == 0)


def _available_at(v, op: Operation) -> bool:
    """``v`` is defined before ``op`` in its block or in a block enclosing it."""
    anchor = op
    while isinstance(anchor, Operation):
        block = anchor.parent
        if v.is_block_arg and v.owner is block:
            return True
        d = v.defining_op
        if d is not None and d.parent is block:
            return block.ops.index(d) < block.ops.index(anchor)
        region = getattr(block, "parent", None)
        anchor = getattr(region, "parent", None)
    return False


def fold_accumulating_add(dot: Operation) -> bool:
    """``add(x, dot(a, b, 0))`` -> ``dot(a, b, x)`` when the dot's only user is that add."""
    if not _is_zero(dot.operands[2]) or len(dot.results[0].uses) != 1:
        return False
    add, idx = dot.results[0].uses[0]
    if add.name != "add" or add.parent is not dot.parent:
        return False
    other = add.operands[1 - idx]
    if other.type != dot.results[0].type or not _available_at(other, dot):
        return False
    dot.set_operand(2, other)
    dot.results[0].name_hint = add.results[0].name_hint
    add.results[0].replace_all_uses_with(dot.results[0])
    add.erase()
    return True


def _replicated(lane_map) -> bool:
    """Several lanes hold copies of one operand element (e.g. an instruction whose upper
    half-wave repeats the lower one's operand): holding such fragments across a loop would cost
    more registers than the operand itself."""
    return bool(lane_map.free_masks(("register", "lane")).get("lane"))


def _outermost_after(v, op: Operation) -> Operation:
    """The op (``op`` or a loop/branch enclosing it) before which ``v``'s conversion goes: the
    outermost one still inside the block that defines ``v``. An operand defined outside a loop
    (attention's ``q``) is then converted to its fragments once, before the loop, and held in
    registers instead of being staged through shared memory every iteration -- unless its
    fragments replicate elements across lanes (:func:`_replicated`)."""
    home = v.owner.parent if v.defining_op is not None else v.owner
    anchor = op
    while anchor.parent is not home and anchor.parent_op is not None:
        anchor = anchor.parent_op
    return anchor if anchor.parent is home else op


def stage_matrix_operands(module: Module, ctx=None) -> bool:
    """After layout assignment: an operand that reaches its fragment layout through shared
    memory (a ``convert_layout`` feeding only this ``matrix_mma``) is handed over unconverted,
    and the op stages it through a swizzled buffer (:mod:`.staging`)."""
    from ..movement import gather_views, relabel_map

    changed = False
    for fn in module.functions.values():
        for op in list(fn.walk()):
            if op.name != MATRIX_MMA:
                continue
            for i in (0, 1):
                cvt = op.operands[i].defining_op
                if cvt is None or cvt.name != "convert_layout" or len(cvt.results[0].uses) != 1 \
                        or cvt.parent is not op.parent:  # hoisted out of a loop: keep it
                    continue
                [(_, src, view)] = gather_views(cvt)
                if relabel_map(src, view) is not None or not cvt.operands[0].type.layout.distributed:
                    continue
                op.set_operand(i, cvt.operands[0])
                cvt.erase()
                changed = True
    return changed
