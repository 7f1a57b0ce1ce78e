"""Drop the lowered kernel's unused side-effect-free instructions before it is printed.

The lowering emits every register of a tensor, but a vectorised access reads only the first
register of each vector (a 128x128 store with 8-wide vectors uses 16 of its 128 pointers), and
a gather keeps some registers only (a loop-carried pointer tile keeps 1 register in 8 alive
through the loop's phis). LLVM's optimiser would delete the rest; deleting them here first
saves printing, parsing, verifying and optimising them. The instructions that a side effect
(a call, a memory operation, a branch, a return) needs stay, through operands and phi inputs;
of the rest, only instructions that do not touch memory go (no calls, loads or stores), so
the module means what it meant before, and the instructions that stay keep their order.
Integer divisions go too when nothing needs them: division by zero is undefined behaviour in
LLVM IR, not a trap the module must keep, and LLVM deletes an unused one as well.
"""
from __future__ import annotations

from llvmlite import ir

#: opnames of instructions that do not touch memory: unneeded, they mean nothing
PURE = frozenset({
    "add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr",
    "sdiv", "udiv", "srem", "urem",
    "fadd", "fsub", "fmul", "fdiv", "fneg",
    "icmp", "fcmp", "select", "phi", "getelementptr",
    "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
    "ptrtoint", "inttoptr", "bitcast", "addrspacecast",
    "extractelement", "insertelement", "shufflevector", "extractvalue", "insertvalue",
})


def _operands(instr):
    if isinstance(instr, ir.PhiInstr):
        return [v for v, _ in instr.incomings]
    return instr.operands


def drop_unused(fn: ir.Function) -> int:
    """Remove ``fn``'s pure instructions whose results no side effect needs (transitively,
    dead phi cycles included: a loop-carried pointer tile whose vectorised loads read one
    register in eight); returns how many went."""
    live: set[int] = set()
    work = [i for blk in fn.blocks for i in blk.instructions if i.opname not in PURE]
    while work:
        instr = work.pop()
        if id(instr) in live:
            continue
        live.add(id(instr))
        for v in _operands(instr):
            if isinstance(v, ir.Instruction) and id(v) not in live:
                work.append(v)
    dead = 0
    for block in fn.blocks:
        kept = [i for i in block.instructions if id(i) in live]
        dead += len(block.instructions) - len(kept)
        block.instructions = kept
    return dead
