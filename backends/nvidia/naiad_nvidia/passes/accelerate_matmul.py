"""GPU-IR pass: compute eligible ``dot`` ops on tensor cores (``nvidia.mma``).

Runs *before* the core's layout assignment, on tile IR: an eligible ``dot(a, b, acc)`` becomes
``nvidia.mma(convert_layout(a), convert_layout(b), convert_layout(acc))`` whose operand and
result types already carry the fragment layouts. The core's assignment keeps layouts fixed
before it and makes them wishes, so a loop-carried accumulator is carried in the ``#nvidia_mma``
layout (its conversion then folds away) while loaded A/B tiles keep their coalesced layouts and
move into the fragments through shared memory.

Eligible (everything else stays on the core's exact FMA path):

* the ``tensor_cores`` option is on (default);
* rank 2; operands f16 or bf16 with an f32 accumulator (f16 operands may also accumulate in
  f16), or f32 operands with ``input_precision == "tf32"`` and an f32 accumulator (``"ieee"``
  and ``"tf32x3"`` stay exact);
* K a multiple of the instruction's K (16; 8 for tf32), and warps ``wm x wn = num_warps`` with
  M a multiple of ``16 * wm`` and N of ``8 * wn``: among those splits the one that gives each
  warp the fewest operand elements (``M / wm + N / wn``; ties: more warps along M).
"""
from __future__ import annotations

from naiad.backend import DotOperandLayout
from naiad.ir import Module, Operation, TensorType

from ..ir.mma_layout import K_PER_INSTRUCTION, NvidiaMmaLayout
from ..ir.mma_op import KINDS, MMA_OP


def mma_kind(a: TensorType, b: TensorType, acc: TensorType, precision) -> str | None:
    """``f16``/``bf16``/``tf32`` when tensor cores can compute this dot exactly as asked."""
    ea, eb, ec = a.element.name, b.element.name, acc.element.name
    if ea != eb or len(a.shape) != 2:
        return None
    if ea in ("f16", "bf16") and (ec == "f32" or (ec == "f16" and ea == "f16")):
        return ea
    if ea == "f32" and ec == "f32" and precision == "tf32":
        return "tf32"
    return None


def choose_warps(m: int, n: int, num_warps: int) -> tuple[int, int] | None:
    """(wm, wn) with ``wm * wn == num_warps`` tiling an MxN result exactly, or None."""
    best = None
    wm = num_warps
    while wm >= 1:
        wn = num_warps // wm
        if m % (16 * wm) == 0 and n % (8 * wn) == 0:
            cost = m // wm + n // wn
            if best is None or cost < best[0]:
                best = (cost, (wm, wn))
        wm //= 2
    return None if best is None else best[1]


def tensor_cores_enabled(options) -> bool:
    if options is None:
        return True
    if isinstance(options, dict):
        return bool(options.get("tensor_cores", True))
    return bool(getattr(options, "tensor_cores", True))


def accelerate_matmul(module: Module, ctx) -> bool:
    """Rewrite eligible dots into ``nvidia.mma``. Runs before layout assignment, so a loop that
    carries the accumulator is typed consistently only once assign_layouts has run."""
    if not tensor_cores_enabled(getattr(ctx, "options", None)):
        return False
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in list(fn.walk()):
            if op.name == "dot":
                changed |= _rewrite(op, ctx.num_warps)
    return changed


accelerate_matmul.leaves_partial_ir = True  # NAIAD_DEBUG verifies after layout assignment


def _rewrite(op: Operation, num_warps: int) -> bool:
    a, b, acc = op.operands
    ta, tb, tc = a.type, b.type, acc.type
    if not all(isinstance(t, TensorType) for t in (ta, tb, tc)):
        return False
    kind = mma_kind(ta, tb, tc, op.attrs.get("input_precision"))
    if kind is None:
        return False
    k_width = KINDS[kind][1]
    (m, k), n = ta.shape, tb.shape[1]
    warps = choose_warps(m, n, num_warps)
    if warps is None or k % K_PER_INSTRUCTION[k_width]:
        return False
    layout = NvidiaMmaLayout(2, warps)
    block = op.parent
    operands = []
    for i, (v, want) in enumerate(((a, DotOperandLayout(0, layout, k_width)),
                                   (b, DotOperandLayout(1, layout, k_width)), (acc, layout))):
        t = v.type
        cvt = Operation("convert_layout", [v], [TensorType(t.shape, t.element, want)], loc=op.loc)
        block.insert_before(op, cvt)
        operands.append(cvt.result)
    mma = Operation(MMA_OP, operands, [TensorType(tc.shape, tc.element, layout)],
                    {"kind": kind}, loc=op.loc)
    block.insert_before(op, mma)
    mma.result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(mma.result)
    op.erase()
    return True
