"""LLVM lowering of ``matrix_mma``: the issues of :func:`.plan.issue_plan`, each emitted by the
backend's ``TargetInfo.matrix_multiply(builder, instruction, a, b, c) -> d``.

``a``, ``b`` and ``c`` are the LLVM values of one issue's fragments in the instruction's element
order (as the table's lane maps number them); the backend packs them into its intrinsic's
operands and returns the new accumulator values in the same order. Staged operands
(:mod:`.staging`) are written to their swizzled buffer once, then read a vector at a time just
before the first issue that uses them -- or, with ``one_buffer`` (A and B through one buffer),
all of A's fragments right after A's write, then B written over it.
"""
from __future__ import annotations

from ..lower.context import KernelLowering, lowers
from ..lower.dot import SharedOperand
from ..lower.shared import smem_write
from ..movement import relabel_map
from .instructions import matrix_instruction
from .op import MATRIX_MMA
from .plan import issue_plan
from .staging import offset_view, operand_views, staging_scratch


@lowers(MATRIX_MMA)
def lower_matrix_mma(kl: KernelLowering, op) -> None:
    a, b, acc = op.operands
    instr = matrix_instruction(op.attrs["instruction"])
    multiply = getattr(kl.ti, "matrix_multiply", None)
    if multiply is None:
        raise kl.error(f"the target has no matrix_multiply for {instr.name}")
    views = operand_views(op)
    swapped = acc.type.layout.transposed
    plan = issue_plan(instr.transposed() if swapped else instr, views[0][1], views[1][1],
                      kl.linear(acc))
    offsets, _ = staging_scratch(op)
    one_buffer = bool(op.attrs.get("one_buffer"))
    operands = []
    staged_before = False
    for i, (v, (src, want, swizzle), base) in enumerate(zip((a, b), views, offsets)):
        vals = kl.get(v)
        if swizzle is None:
            operands.append([vals[r] for r in relabel_map(src, want)])
            continue
        if one_buffer and staged_before:
            kl.ti.barrier(kl.b)  # every wave has read the previous operand's fragments
        smem_write(kl, vals, offset_view(src, swizzle), v.type.scalar, base=base)
        operands.append(SharedOperand(kl, offset_view(want, swizzle), v.type.scalar, base))
        if one_buffer:
            kl.ti.barrier(kl.b)
            if i == 0:  # all of A's fragments, before B reuses the buffer
                for issue in plan:
                    for r in issue[0]:
                        operands[0][r]
        staged_before = True
    if staged_before and not one_buffer:
        kl.ti.barrier(kl.b)
    c_vals = list(kl.get(acc))
    for a_regs, b_regs, c_regs in plan:
        a_frag = [operands[0][r] for r in a_regs]
        b_frag = [operands[1][r] for r in b_regs]
        if swapped:  # the hardware computes C^T = B^T A^T
            a_frag, b_frag = b_frag, a_frag
        d = multiply(kl.b, instr, a_frag, b_frag, [c_vals[r] for r in c_regs])
        for r, value in zip(c_regs, d):
            c_vals[r] = value
    kl.set(op.results[0], c_vals)
