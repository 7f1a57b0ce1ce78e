"""``nvidia.mma_staged``: an f16/bf16 ``nvidia.mma`` that takes A and B as loaded (any
register layout) and reads its fragments from shared memory with ``ldmatrix``.

A float8 (``e4m3``/``e5m2``) or tf32 mma marked ``wgmma`` takes this form too, for a moment:
the cp.async ring (or the register prefetch) pipelines it like an f16 one, and
``place_staged_wgmma`` turns what the ring left into ``nvidia.wgmma_staged`` -- it never
reaches the ldmatrix lowering.

``nvidia.mma_staged(a, b, acc) {kind} : tensor<MxN, acc, #nvidia_mma>``. Its lowering stores
both tiles into one scratch buffer (A, then B at a 128-byte boundary; swizzled, see
:mod:`naiad_nvidia.ir.ldmatrix_plan`), waits at one barrier, then per K step of 16 loads that
step's fragments and issues its mmas -- so only one K step's fragments are live at a time.

Two passes place it, both in the backend's GPU pipeline:

* :func:`stage_mma_operands` (after the core's layout assignment and conversion cleanup, before
  shared-memory allocation) replaces ``nvidia.mma(convert_layout(a), convert_layout(b), acc)``
  by ``nvidia.mma_staged(a, b, acc)`` when both conversions feed only that mma;
* :func:`staging_bytes`, registered as the op's scratch size, lets the core's shared-memory
  allocation give each such op its ``scratch`` bytes, so the core's barrier pass separates it
  from the other shared-memory users exactly as it does theirs.
"""
from __future__ import annotations

from naiad.backend import OpDef, PURE, register_op, register_scratch, register_verifier, remarks
from naiad.ir import Module, Operation

from ..ir.ldmatrix_plan import plan
from ..ir.mma_op import KINDS, MMA_OP, check_mma_types
from ..ir.wgmma_op import PROMOTE_ATTR, WGMMA_KINDS, WGMMA_STAGED_OP
from .wgmma_operands import a_from_registers, a_source_is_resident, b_runs_along_k, resident_a

STAGED_OP = "nvidia.mma_staged"
#: kinds whose fragments ldmatrix can read (16-bit elements)
STAGED_KINDS = ("f16", "bf16")
#: kinds a wgmma dot is staged as, for the cp.async ring to pipeline (s8 is not: a one-byte B
#: that is not K-contiguous could only be copied in 4-byte pieces, which span four K rows)
RING_WGMMA_KINDS = WGMMA_KINDS + ("tf32",)

register_op(OpDef(STAGED_OP, 3, 1, 0, ("kind",), frozenset({PURE}),
                  "acc + a @ b by mma.sync, operands staged in shared memory and read with "
                  "ldmatrix; attr kind f16|bf16"))


def _staged_kinds(op) -> tuple:
    """f16/bf16; with ``wgmma`` also the float8 and tf32 kinds that the wgmma ring copies."""
    return RING_WGMMA_KINDS if op.attrs.get("wgmma") else STAGED_KINDS


def _verify(op):
    problem = check_mma_types(op, _staged_kinds(op))
    if problem:
        return problem
    (m, k), n = op.operands[0].type.shape, op.operands[1].type.shape[1]
    layout = op.results[0].type.layout
    wm, wn = layout.warps_per_cta
    if m % (16 * wm) or n % (8 * wn) or k % 16:
        return f"{m}x{n}x{k} is not tiled exactly by {layout}"
    return None


register_verifier(STAGED_OP, _verify)


def staging_bytes(op: Operation) -> int:
    """The swizzled A and B tiles' shared memory (the core's allocator asks, see below); B's
    alone when A comes from registers (``a_regs``)."""
    (m, k), n = op.operands[0].type.shape, op.operands[1].type.shape[1]
    if op.attrs.get("a_regs"):
        return k * n * 2
    if op.attrs.get("kind") not in STAGED_KINDS:
        return wgmma_staging_bytes(op)
    return plan(m, n, k, op.results[0].type.layout.warps_per_cta).scratch


register_scratch(STAGED_OP, staging_bytes)


def _kernels(module: Module):
    return [fn for fn in module.functions.values() if fn.attrs.get("kernel", True) is not False]


def stage_mma_operands(module: Module, ctx=None) -> bool:
    changed = False
    for fn in _kernels(module):
        for op in list(fn.walk()):
            if op.name != MMA_OP:
                continue
            if op.attrs.get("wgmma") and op.attrs.get("kind") not in _staged_kinds(op):
                if _in_loop(op):
                    remarks.remark(module, op.loc, "dot", "does not pipeline its A/B tiles "
                                   f"through a cp.async ring: wgmma reads a {op.attrs['kind']} B "
                                   "only K-major, so B is stored transposed from registers "
                                   "each iteration")
                stage_for_wgmma(op)  # s8: only nvidia.wgmma_staged takes it
                changed = True
                continue
            if op.attrs.get("kind") not in _staged_kinds(op) or _warps_replicate(op):
                continue
            if op.attrs.get("wgmma") and a_from_registers(op.operands[0], op.operands[2],
                                                          op.attrs["kind"]):
                continue   # wgmma reads this A from registers (place_staged_wgmma)
            a_regs = a_from_registers(op.operands[0], op.operands[2], op.attrs["kind"])
            cvts = [op.operands[i].defining_op for i in ((1,) if a_regs else (0, 1))]
            if any(c is None or c.name != "convert_layout" or len(c.results[0].uses) != 1
                   for c in cvts):
                continue
            attrs = dict(op.attrs)
            if a_regs:   # A computed in registers stays in its fragment; only B is staged
                attrs["a_regs"] = True
            a = op.operands[0] if a_regs else cvts[0].operands[0]
            staged = Operation(STAGED_OP, [a, cvts[-1].operands[0], op.operands[2]],
                               [op.results[0].type], attrs, loc=op.loc)
            op.parent.insert_before(op, staged)
            staged.result.name_hint = op.results[0].name_hint
            op.results[0].replace_all_uses_with(staged.result)
            op.erase()
            for c in cvts:
                c.erase()
            changed = True
    return changed


def _warps_replicate(op: Operation) -> bool:
    """The result is smaller than the warps' tile (a small dot): the ldmatrix plan tiles
    exactly, so such an mma keeps reading its fragments through ``convert_layout``."""
    (m, n), (tm, tn) = op.results[0].type.shape, op.results[0].type.layout.tile
    return m < tm or n < tn


def _in_loop(op: Operation) -> bool:
    parent = op.parent_op
    while isinstance(parent, Operation):
        if parent.name in ("for", "while"):
            return True
        parent = parent.parent_op
    return False


def stage_for_wgmma(op: Operation) -> Operation:
    """Replace a marked ``nvidia.mma`` or ``nvidia.mma_staged`` by ``nvidia.wgmma_staged``,
    which takes A and B in any layout: the sources of their fragment conversions. A computed
    in registers stays there, a loop-invariant A is stored once before the loop
    (:mod:`naiad_nvidia.passes.wgmma_operands`)."""
    kind = op.attrs["kind"]
    a_regs = op.name == MMA_OP and a_from_registers(op.operands[0], op.operands[2], kind)
    operands = []
    for i, v in enumerate(op.operands[:2]):
        d = v.defining_op
        unwrap = (d is not None and d.name == "convert_layout" and op.name == MMA_OP
                  and not (i == 0 and a_regs))
        operands.append(d.operands[0] if unwrap else v)
    attrs = {k: v for k, v in op.attrs.items() if k in ("kind", PROMOTE_ATTR)}
    if a_regs:
        attrs["a_regs"] = True
    else:
        operands[0] = resident_a(op, operands[0], kind) or operands[0]
    if b_runs_along_k(operands[1], kind):
        attrs["b_k_major"] = True
    staged = Operation(WGMMA_STAGED_OP, operands + [op.operands[2]], [op.results[0].type],
                       attrs, loc=op.loc)
    op.parent.insert_before(op, staged)
    staged.result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(staged.result)
    cvts = [v.defining_op for v in op.operands[:2]] if op.name == MMA_OP else []
    op.erase()
    for c in cvts:
        if c is not None and c.name == "convert_layout" and not c.results[0].uses:
            c.erase()
    return staged


def wgmma_staging_bytes(op: Operation) -> int:
    """Shared memory a ``nvidia.wgmma_staged`` stores its A and B tiles to (only B when A
    comes from registers or from its own resident buffer)."""
    from ..ir.wgmma_smem import WgmmaStage, align

    (m, k), n = op.operands[0].type.shape, op.operands[1].type.shape[1]
    stage = WgmmaStage(m, n, k, op.attrs["kind"])
    if op.attrs.get("a_regs") or a_source_is_resident(op.operands[0]):
        return align(stage.b.bytes)
    return stage.bytes


register_scratch(WGMMA_STAGED_OP, wgmma_staging_bytes)
