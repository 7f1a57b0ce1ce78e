"""The core lowering emits each distinct register computation once and drops the unused pure
instructions before printing: less LLVM IR to print, parse and optimise in a cold compile,
meaning the same (the SIMT suite runs what it emits)."""
from __future__ import annotations

import re

from llvmlite import ir

import naiad
import naiad.language as tl
from naiad.gpu.llvm import parse_verified
from naiad.gpu.lower.prune import drop_unused

I32 = ir.IntType(32)


def test_drop_unused_removes_dead_pure_chains_only():
    mod = ir.Module(name="m")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(), I32, I32]), "k")
    side = ir.Function(mod, ir.FunctionType(I32, []), "side")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    p, x, y = fn.args
    b.mul(b.add(x, y), y)                 # dead, and the add is used only by it
    b.store(b.xor(x, y), p)               # used
    b.sdiv(x, y)                          # unused, but may trap: stays
    b.call(side, [])                      # unused result, but a call: stays
    b.ret_void()
    assert drop_unused(fn) == 2
    kept = [i.opname for i in fn.blocks[0].instructions]
    assert kept[:-1] == ["xor", "store", "sdiv", "call"] and kept[-1].startswith("ret")
    parse_verified(str(mod))


def test_drop_unused_keeps_loop_carried_phis_and_their_inputs():
    mod = ir.Module(name="m")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(), I32]), "k")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    p, n = fn.args
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32)
    unused = b.phi(I32)                   # nothing reads it: goes, with its update
    nxt = b.add(i, ir.Constant(I32, 1))
    bump = b.add(unused, ir.Constant(I32, 2))
    i.add_incoming(ir.Constant(I32, 0), entry)
    i.add_incoming(nxt, loop)
    unused.add_incoming(ir.Constant(I32, 0), entry)
    unused.add_incoming(bump, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.store(nxt, p)
    b.ret_void()
    drop_unused(fn)
    kept = [ins.opname for ins in loop.instructions]
    assert kept.count("phi") == 2 and kept.count("add") == 2   # a phi cycle is not "unused"
    parse_verified(str(mod))


@naiad.jit
def broadcast_kernel(p, q, N, n, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    cols = tl.broadcast_to(rn[None, :], (BM, BN)) * N    # a thread's registers: one column
    tl.store(p + rm[:, None] * BN + rn[None, :], cols)
    qs = q + rn
    for _ in range(n):
        tl.store(qs, rn)
        qs += 8                                           # a constant pointer offset


def _llir(target):
    return naiad.compile(broadcast_kernel,
                         signature={"p": "*i32", "q": "*i32", "N": "i32", "n": "i32"},
                         constexprs={"BM": 64, "BN": 64}, target=target,
                         options={"num_warps": 4}).asm["llir"]


def test_elementwise_op_runs_once_per_distinct_operand_registers():
    for target in ("nvidia:sm_90", "amd:gfx942"):
        text = _llir(target)
        # 64x64 over 4 warps: 16 or 32 registers per thread, all in one column (the layout puts
        # the lanes along N), so ``column * N`` is one multiply, not one per register
        muls = re.findall(r'= mul i32 (?:%"N", %\S+|%\S+, %"N")$', text, re.M)
        assert len(muls) == 1, (target, muls)


def test_constant_pointer_offsets_fold_at_build_time():
    for target in ("nvidia:sm_90", "amd:gfx942"):
        text = _llir(target)
        assert not re.search(r"= sext i32 -?\d+ to i64", text), target
        assert re.search(r"getelementptr i32, ptr addrspace\(1\) %\S+, i64 8$", text, re.M), \
            target
