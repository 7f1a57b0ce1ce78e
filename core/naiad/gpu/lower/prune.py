"""Drop the lowered kernel's unused side-effect-free instructions before it is printed.

The lowering emits every register of a tensor, but a vectorised access reads only the first
register of each vector (a 128x128 store with 8-wide vectors uses 16 of its 128 pointers), and
a gather keeps some registers only. LLVM's optimiser would delete the rest; deleting them here
first saves printing, parsing, verifying and optimising them. Only instructions without side
effects and that cannot trap go (no calls, memory operations or integer divisions), so the
module means exactly what it meant before; the instructions that stay keep their order.
"""
from __future__ import annotations

from llvmlite import ir

#: opnames of instructions that neither write memory nor trap: unused, they mean nothing
PURE = frozenset({
    "add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr",
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
    """Remove ``fn``'s pure instructions whose results nothing uses (transitively); returns
    how many went."""
    uses: dict[int, int] = {}
    for block in fn.blocks:
        for instr in block.instructions:
            for v in _operands(instr):
                if isinstance(v, ir.Instruction):
                    uses[id(v)] = uses.get(id(v), 0) + 1
    dead: set[int] = set()
    work = [i for blk in fn.blocks for i in blk.instructions
            if i.opname in PURE and not uses.get(id(i))]
    while work:
        instr = work.pop()
        if id(instr) in dead:
            continue
        dead.add(id(instr))
        for v in _operands(instr):
            if isinstance(v, ir.Instruction):
                uses[id(v)] -= 1
                if not uses[id(v)] and v.opname in PURE:
                    work.append(v)
    if dead:
        for block in fn.blocks:
            block.instructions = [i for i in block.instructions if id(i) not in dead]
    return len(dead)
