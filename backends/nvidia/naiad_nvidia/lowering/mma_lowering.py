"""LLVM lowering of ``nvidia.mma``: one ``mma.sync`` per 16x8 result tile and K step per warp.

Each warp runs, for every K step (outermost) and every 16x8 tile it owns, the LLVM 22 NVVM
intrinsic of the kind (names and operand packing checked against LLVM's NVPTX backend):

* f16 -> f32: ``llvm.nvvm.mma.m16n8k16.row.col.f32.f32`` (A 4 x <2 x half>, B 2 x <2 x half>,
  C/D 4 x float) -> ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``;
* f16 -> f16: ``llvm.nvvm.mma.m16n8k16.row.col.f16.f16`` (C/D 2 x <2 x half>);
* bf16: ``llvm.nvvm.mma.m16n8k16.row.col.bf16`` (A 4 x i32, B 2 x i32, two bf16 per i32, the
  lower-indexed element in the low half);
* s8: ``llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8`` (A 4 x i32, B 2 x i32 of four int8 each,
  the lowest-indexed in the low byte; C/D 4 x i32) -> ``mma.sync.aligned.m16n8k32.row.col.
  satfinite.s32.s8.s8.s32`` (sums saturate at the int32 range, as Triton's);
* tf32: ``llvm.nvvm.mma.m16n8k8.row.col.tf32`` (A 4 x i32, B 2 x i32: each f32 rounded to
  tf32 with ``llvm.nvvm.f2tf32.rna``, i.e. ``cvt.rna.tf32.f32``).

Registers are found by coordinate: for lane 0 of warp 0 the register holding element i of the
tile at (row0, col0) is the one whose register-bit coordinate is (row0, col0) plus the element's
offset in the fragment (:mod:`naiad_nvidia.ir.mma_layout`); other lanes and warps add their own
bits, which the layout keeps apart from the register bits.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import F16, F32, I32

from . import mathlib
from ..ir.mma_layout import K_PER_INSTRUCTION

#: element offsets (row, col) of fragment entries, by operand and kWidth (PTX element order)
A_OFFSETS = {2: [(8 * ((i >> 1) & 1), (i & 1) + 8 * (i >> 2)) for i in range(8)],
             1: [(8 * (i & 1), 4 * (i >> 1)) for i in range(4)],
             4: [(8 * ((i >> 2) & 1), (i & 3) + 16 * (i >> 3)) for i in range(16)]}
B_OFFSETS = {2: [((i & 1) + 8 * (i >> 1), 0) for i in range(4)],
             1: [(4 * i, 0) for i in range(2)],
             4: [((i & 3) + 16 * (i >> 2), 0) for i in range(8)]}
C_OFFSETS = [(8 * (i >> 1), i & 1) for i in range(4)]

HALF2 = ir.VectorType(F16, 2)


def register_of(ll):
    """Coordinate (register bits only) -> register index."""
    out = {}
    for r in range(ll.in_size("register")):
        out.setdefault(ll.unflatten(ll.apply_flat(register=r)), r)
    return out


def mma_plan(a_ll, b_ll, c_ll, k_width: int, warps):
    """The instructions one warp issues, in order: (A, B, C register lists) per instruction,
    each list in PTX fragment-element order. Shared by the lowering and its tests."""
    wm, wn = warps
    (m, k), n = a_ll.out_shape, b_ll.out_shape[1]
    kstep = K_PER_INSTRUCTION[k_width]
    a_idx, b_idx, c_idx = register_of(a_ll), register_of(b_ll), register_of(c_ll)

    def regs(index, base, offsets):
        return [index[(base[0] + dr, base[1] + dc)] for dr, dc in offsets]

    plan = []
    for kk in range(0, k, kstep):
        for tm in range(0, m, 16 * wm):
            a_regs = regs(a_idx, (tm, kk), A_OFFSETS[k_width])
            for tn in range(0, n, 8 * wn):
                plan.append((a_regs, regs(b_idx, (kk, tn), B_OFFSETS[k_width]),
                             regs(c_idx, (tm, tn), C_OFFSETS)))
    return plan


def lower_mma(kl, op) -> None:
    a, b, acc = op.operands
    kind = op.attrs["kind"]
    if kind not in ("f16", "bf16", "tf32", "s8"):
        raise kl.error(f"internal: an nvidia.mma of kind {kind} reached mma.sync lowering")
    layout = op.results[0].type.layout
    try:
        plan = mma_plan(kl.linear(a), kl.linear(b), kl.linear(acc), a.type.layout.k_width,
                        layout.warps_per_cta)
    except KeyError:
        raise kl.error("internal: an mma fragment register is missing") from None
    a_vals, b_vals = kl.get(a), kl.get(b)
    c_vals = list(kl.get(acc))
    f16_acc = acc.type.element.name == "f16"
    builder = kl.b
    intrinsic = declare_mma(builder.module, kind, f16_acc)
    packed: dict = {}

    def words(vals, regs):
        key = (id(vals), tuple(regs))
        if key not in packed:
            packed[key] = pack_operands(builder, [vals[r] for r in regs], kind)
        return packed[key]

    for a_regs, b_regs, c_regs in plan:
        c_in = [c_vals[r] for r in c_regs]
        if f16_acc:
            c_in = pack_operands(builder, c_in, "f16")
        d = builder.call(intrinsic, words(a_vals, a_regs) + words(b_vals, b_regs) + c_in)
        if f16_acc:
            pairs = [builder.extract_value(d, j) for j in range(2)]
            outs = [builder.extract_element(pairs[i >> 1], ir.Constant(I32, i & 1))
                    for i in range(4)]
        else:
            outs = [builder.extract_value(d, i) for i in range(4)]
        for r, v in zip(c_regs, outs):
            c_vals[r] = v
    kl.set(op.results[0], c_vals)


def pack_operands(builder, vals, kind) -> list:
    """Fragment elements -> the intrinsic's 32-bit operands."""
    if kind == "tf32":  # round to nearest (cvt.rna.tf32.f32) rather than drop 13 bits
        cvt = mathlib.declare(builder.module, "llvm.nvvm.f2tf32.rna", I32, [F32])
        return [builder.call(cvt, [v]) for v in vals]
    if kind == "s8":  # four bytes per register, the first in the low byte
        words = []
        for j in range(0, len(vals), 4):
            word = ir.Constant(I32, 0)
            for i, v in enumerate(vals[j:j + 4]):
                byte = builder.zext(v, I32)
                word = builder.or_(word, builder.shl(byte, ir.Constant(I32, 8 * i)) if i else byte)
            words.append(word)
        return words
    out = []
    for lo, hi in zip(vals[0::2], vals[1::2]):
        if kind == "f16":
            vec = builder.insert_element(ir.Constant(HALF2, None), lo, ir.Constant(I32, 0))
            out.append(builder.insert_element(vec, hi, ir.Constant(I32, 1)))
        else:  # bf16 registers are i16 bit patterns
            low = builder.zext(lo, I32)
            high = builder.shl(builder.zext(hi, I32), ir.Constant(I32, 16))
            out.append(builder.or_(low, high))
    return out


def declare_mma(module, kind, f16_acc):
    if kind == "f16" and f16_acc:
        ret = ir.LiteralStructType([HALF2, HALF2])
        return mathlib.declare(module, "llvm.nvvm.mma.m16n8k16.row.col.f16.f16", ret,
                               [HALF2] * 8)
    if kind == "s8":
        return mathlib.declare(module, "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8",
                               ir.LiteralStructType([I32] * 4), [I32] * 10)
    ret = ir.LiteralStructType([F32] * 4)
    if kind == "f16":
        return mathlib.declare(module, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", ret,
                               [HALF2] * 6 + [F32] * 4)
    name = {"bf16": "llvm.nvvm.mma.m16n8k16.row.col.bf16",
            "tf32": "llvm.nvvm.mma.m16n8k8.row.col.tf32"}[kind]
    return mathlib.declare(module, name, ret, [I32] * 6 + [F32] * 4)


LOWERINGS = {"nvidia.mma": lower_mma}
