"""LLVM lowering of ``nvidia.mma_staged``: stage A/B in swizzled shared memory, one barrier,
then per K step ``ldmatrix`` (``llvm.nvvm.ldmatrix.sync.aligned.m8n8.{x4,x2}[.trans].b16``,
LLVM 22's names for ``ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16``) and ``mma.sync``.

The instruction sequence and addresses come from :func:`naiad_nvidia.ir.ldmatrix_plan.plan`; a
lane's row address is its lane/warp part (computed once in the entry block) XOR the load's
constant. The stores reuse the core's vectorised shared-memory writer on the source layout
mapped to swizzled offsets (16-byte stores for the usual ``sizePerThread = [1, 8]`` loads).
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import I32, i32, smem_write

from . import mathlib
from ..ir.ldmatrix_plan import plan, to_offsets
from .mma_lowering import A_OFFSETS, C_OFFSETS, HALF2, declare_mma, pack_operands, register_of


def _ldmatrix(builder, load):
    count = 4 if load.x4 else 2
    name = (f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}"
            f"{'.trans' if load.which == 'B' else ''}.b16")
    ret = ir.LiteralStructType([I32] * count)
    return mathlib.declare(builder.module, name, ret, [ir.PointerType(addrspace=3)])


def lower_mma_staged(kl, op) -> None:
    """Stage both tiles, wait for every warp's stores, multiply. With ``a_regs`` A is already
    in its fragment layout in registers: only B is staged (at byte 0) and read with ldmatrix."""
    a, b, acc = op.operands
    kind = op.attrs["kind"]
    layout = op.results[0].type.layout
    (m, k), n = a.type.shape, b.type.shape[1]
    fp = plan(m, n, k, layout.warps_per_cta)
    builder = kl.b
    a_regs = a if op.attrs.get("a_regs") else None
    b_base = 0 if a_regs is not None else fp.b_offset
    if a_regs is None:
        smem_write(kl, kl.get(a), to_offsets(kl.linear(a), fp.a_swizzle), a.type.scalar, base=0)
    smem_write(kl, kl.get(b), to_offsets(kl.linear(b), fp.b_swizzle), b.type.scalar,
               base=b_base)
    kl.ti.barrier(builder)
    kl.set(op.results[0], multiply_from_shared(kl, fp, kind, acc, i32(b_base - fp.b_offset)
                                               if a_regs is not None else i32(0), a_regs))


def lower_mma_ring(kl, op) -> None:
    """``nvidia.mma_ring(acc, slot)``: the tiles are already in ring slot ``slot`` (written by
    ``nvidia.cp_async``, made visible by the wait and barrier before it)."""
    acc, slot = op.operands
    (m, n), k = acc.type.shape, int(op.attrs["k"])
    fp = plan(m, n, k, op.results[0].type.layout.warps_per_cta)
    base = kl.b.mul(kl.get(slot)[0], i32(int(op.attrs["stage_bytes"])))
    kl.set(op.results[0], multiply_from_shared(kl, fp, op.attrs["kind"], acc, base))


def _register_fragments(kl, a, kind):
    """``((row0, k0), word) -> `` the word of the m16n8k16 A fragment at (row0, k0), packed
    from ``a``'s registers (found by coordinate, see :mod:`.mma_lowering`)."""
    index = register_of(kl.linear(a))
    vals = kl.get(a)
    cache: dict = {}

    def word(key):
        (row0, k0), w = key
        if (row0, k0) not in cache:
            regs = [index[(row0 + dr, k0 + dc)] for dr, dc in A_OFFSETS[2]]
            cache[(row0, k0)] = pack_operands(kl.b, [vals[r] for r in regs], kind)
        return cache[(row0, k0)][w]

    return word


def multiply_from_shared(kl, fp, kind, acc, base, a_regs=None) -> list:
    """``acc`` plus the product of the tiles at byte ``base`` (an i32 value) of the scratch
    buffer, laid out as ``fp`` says; returns the accumulator registers. With ``a_regs`` (a
    register tensor in the A-fragment layout) A's fragments come from its registers."""
    builder = kl.b
    a_words = _register_fragments(kl, a_regs, kind) if a_regs is not None else None
    lane_part = {"A": (kl.thread_flat(fp.a_lanes), base),
                 "B": (kl.thread_flat(fp.b_lanes), builder.add(base, i32(fp.b_offset)))}
    c_idx = register_of(kl.linear(acc))
    c_vals = list(kl.get(acc))
    f16_acc = acc.type.element.name == "f16"
    intrinsic = declare_mma(builder.module, kind, f16_acc)
    for loads, mmas in fp.steps:
        words: dict = {}
        for load in loads:
            if load.which == "A" and a_words is not None:
                for key in load.registers:
                    words[("A",) + key] = a_words(key)
                continue
            part, base = lane_part[load.which]
            elem = builder.xor(part, i32(load.const))
            addr = kl.smem_ptr(builder.add(builder.shl(elem, i32(1)), base))
            got = builder.call(_ldmatrix(builder, load), [addr])
            for j, key in enumerate(load.registers):
                word = builder.extract_value(got, j)
                words[(load.which,) + key] = (builder.bitcast(word, HALF2) if kind == "f16"
                                              else word)
        for mma in mmas:
            c_regs = [c_idx[(mma.c[0] + dr, mma.c[1] + dc)] for dr, dc in C_OFFSETS]
            c_in = [c_vals[r] for r in c_regs]
            if f16_acc:
                c_in = pack_operands(builder, c_in, "f16")
            a_in = [words[("A", mma.a, w)] for w in range(4)]
            b_in = [words[("B", mma.b, w)] for w in range(2)]
            d = builder.call(intrinsic, a_in + b_in + c_in)
            if f16_acc:
                pairs = [builder.extract_value(d, j) for j in range(2)]
                outs = [builder.extract_element(pairs[i >> 1], i32(i & 1)) for i in range(4)]
            else:
                outs = [builder.extract_value(d, i) for i in range(4)]
            for r, v in zip(c_regs, outs):
                c_vals[r] = v
    return c_vals
