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
    b.sdiv(x, y)                          # unused: UB on zero in LLVM IR, not a trap: goes
    b.call(side, [])                      # unused result, but a call: stays
    b.load(p, typ=I32)                    # unused, but reads memory: stays
    b.ret_void()
    assert drop_unused(fn) == 3
    kept = [i.opname for i in fn.blocks[0].instructions]
    assert kept[:-1] == ["xor", "store", "call", "load"] and kept[-1].startswith("ret")
    parse_verified(str(mod))


def test_drop_unused_removes_dead_phi_cycles_and_keeps_live_ones():
    mod = ir.Module(name="m")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(), I32]), "k")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    p, n = fn.args
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32)
    unused = b.phi(I32)                   # only its own update reads it: the cycle goes
    stored = b.phi(I32)                   # a cycle that a store reads: stays
    nxt = b.add(i, ir.Constant(I32, 1))
    bump = b.add(unused, ir.Constant(I32, 2))
    step = b.xor(stored, nxt)
    i.add_incoming(ir.Constant(I32, 0), entry)
    i.add_incoming(nxt, loop)
    unused.add_incoming(ir.Constant(I32, 0), entry)
    unused.add_incoming(bump, loop)
    stored.add_incoming(n, entry)
    stored.add_incoming(step, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.store(stored, p)
    b.ret_void()
    assert drop_unused(fn) == 2
    kept = [ins for ins in loop.instructions]
    assert unused not in kept and bump not in kept
    assert [ins.opname for ins in kept].count("phi") == 2
    assert i in kept and stored in kept and nxt in kept and step in kept
    parse_verified(str(mod))


def test_pack_vector_reuses_a_vector_read_back_in_order():
    from naiad.gpu.lower.types import pack_vector

    mod = ir.Module(name="m")
    v8 = ir.VectorType(ir.HalfType(), 8)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType(), ir.PointerType()]),
                     "k")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    src, dst = fn.args
    vec = b.load(src, typ=v8)
    other = b.load(src, typ=v8)
    lanes = [b.extract_element(vec, ir.Constant(I32, i)) for i in range(8)]
    assert pack_vector(b, lanes, v8) is vec
    # anything else is packed lane by lane: another order, a lane of another vector, too few
    swapped = [lanes[1], lanes[0], *lanes[2:]]
    mixed = [*lanes[:7], b.extract_element(other, ir.Constant(I32, 7))]
    for values in (swapped, mixed):
        packed = pack_vector(b, values, v8)
        assert packed is not vec and packed.opname == "insertelement"
        b.store(packed, dst)
    four = pack_vector(b, lanes[:4], ir.VectorType(ir.HalfType(), 4))
    assert four.opname == "insertelement"
    b.store(four, dst)
    b.ret_void()
    parse_verified(str(mod))


def test_thread_index_bits_are_built_once_per_kernel():
    """Tutorial-03-like kernels have several layouts over the same lanes: each lane/warp bit
    is extracted once, not once per layout."""
    text = _llir("nvidia:sm_90")
    shifts = re.findall(r"= lshr i32 (%\S+), (\d+)$", text, re.M)
    assert shifts and len(shifts) == len(set(shifts)), shifts


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
