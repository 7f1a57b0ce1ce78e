"""Pass ``accelerate_matmul``: put eligible ``dot`` ops on the backend's matrix instructions.

Runs on tile IR before the core's layout assignment. The table comes from the
``naiad_matrix_instructions(target, options)`` hook (entries in the backend's order of
preference, already filtered by its options such as ``matrix_instr_nonkdim`` / ``kpack``); the
first entry that serves the dot's element types (and, for f32 operands, its
``input_precision``) and tiles its shape is used. The dot becomes::

    matrix_mma(convert_layout(a), convert_layout(b), convert_layout(acc)) {instruction, k_width}

with the operands in ``#dot_operand`` layouts of the entry's matrix layout (an operand defined
outside the dot's loop is converted once, before the loop) and the accumulator in that layout; the core's assignment keeps those layouts (a loop-carried
accumulator stays in it) and :func:`stage_matrix_operands` later lets operands that need shared
memory go through a swizzled buffer instead. A dot no entry fits stays on the core's exact FMA
lowering.

Warps: ``wm x wn = num_warps`` along M and N, preferring splits where every warp has its own
tiles, then the fewest operand elements per warp (``M / wm + N / wn``).
"""
from __future__ import annotations

from ...ir.core import Module, Operation
from ...ir.types import TensorType
from ..layouts import DotOperandLayout
from .instructions import MatrixInstruction, register_matrix_instructions
from .op import MATRIX_MMA


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


def pick_instruction(op: Operation, table) -> MatrixInstruction | None:
    a, b, acc = (v.type for v in op.operands)
    if not all(isinstance(t, TensorType) and len(t.shape) == 2 for t in (a, b, acc)):
        return None
    (m, k), n = a.shape, b.shape[1]
    precision = op.attrs.get("input_precision")
    for entry in table:
        im, in_, _ = entry.shape
        if entry.serves(a.element.name, b.element.name, acc.element.name, precision) and \
                m % im == 0 and n % in_ == 0 and k % entry.k_step == 0:
            return entry
    return None


def accelerate_matmul(module: Module, ctx) -> bool:
    table = instruction_table(ctx)
    if not table:
        return False
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in list(fn.walk()):
            if op.name == "dot":
                entry = pick_instruction(op, table)
                if entry is not None:
                    _rewrite(op, entry, ctx.num_warps)
                    changed = True
    return changed


accelerate_matmul.leaves_partial_ir = True  # NAIAD_DEBUG verifies after layout assignment


def _rewrite(op: Operation, entry: MatrixInstruction, num_warps: int) -> None:
    a, b, acc = op.operands
    m, n = acc.type.shape
    layout = entry.make_layout(choose_warps(m, n, entry.shape[:2], num_warps))
    block = op.parent
    operands = []
    for v, want in ((a, DotOperandLayout(0, layout, entry.k_width)),
                    (b, DotOperandLayout(1, layout, entry.k_width)), (acc, layout)):
        t = v.type
        cvt = Operation("convert_layout", [v], [TensorType(t.shape, t.element, want)], loc=op.loc)
        hoist = v is not acc and not _replicated(entry.a_map if v is a else entry.b_map)
        anchor = _outermost_after(v, op) if hoist else op
        anchor.parent.insert_before(anchor, cvt)
        operands.append(cvt.result)
    mma = Operation(MATRIX_MMA, operands, [TensorType(acc.type.shape, acc.type.element, layout)],
                    {"instruction": entry.name, "k_width": entry.k_width}, loc=op.loc)
    block.insert_before(op, mma)
    mma.result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(mma.result)
    op.erase()


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
