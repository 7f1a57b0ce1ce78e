"""LLVM lowering of the Hopper warpgroup-MMA ops (:mod:`naiad_nvidia.ir.wgmma_op`), as inline
PTX: LLVM 22 has no ``wgmma.mma_async`` intrinsic, and writing fence, commit and wait as asm
too keeps all of them ordered (side effects, memory clobber) against each other.

``nvidia.wgmma_staged`` first stores its register operands there (the core's vectorised
shared-memory writer on the operand layouts mapped to wgmma's offsets), then multiplies like
``nvidia.wgmma_ring`` at slot 0.

``nvidia.wgmma_ring``: each thread computes two 64-bit matrix descriptors once (the ring slot's
shared-memory address plus its warpgroup's 64-row block of A, see
:mod:`naiad_nvidia.ir.wgmma_smem`) and adds each instruction's constant start offset (``>> 4``;
addresses stay below 2^18, so no carry leaves the 14-bit field). The accumulator registers are
found by coordinate, exactly as mma.sync's are (:func:`naiad_nvidia.lowering.mma_lowering.register_of`),
and passed in and out of the asm tied to the same registers, so no copy of an in-flight
accumulator is ever made. ``wgmma.wait_group`` passes them through as well: a value read after
the wait is the finished one.
"""
from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir

from naiad.backend import DotOperandLayout, linear_of, smem_write, struct_type
from naiad.backend import F32, I32, i32

from ..ir.wgmma_op import PROMOTE_ATTR
from ..ir.wgmma_smem import ALIGN, KIND_K, WgmmaStage
from ..passes.wgmma_operands import a_source_is_resident, resident_tile
from ..passes.wgmma_order import BLOCK_OUTER_ATTR
from .mma_lowering import A_OFFSETS, pack_operands, register_of
from .predicated_memory import MEMORY_CLOBBER, inline_asm

I64 = ir.IntType(64)
#: widest N of one wgmma instruction
MAX_N = 256
#: threads of one warpgroup
WARPGROUP = 128


def _asm(builder, text, ret, args, constraints):
    fty = ir.FunctionType(ret, [a.type for a in args])
    cons = ",".join([c for c in (constraints, MEMORY_CLOBBER) if c])
    return builder.call(inline_asm(fty, text, cons, side_effect=True), list(args),
                        attrs=("nounwind",))


def emit_fence(builder) -> None:
    _asm(builder, "wgmma.fence.sync.aligned;", ir.VoidType(), [], "")


def emit_commit(builder) -> None:
    _asm(builder, "wgmma.commit_group.sync.aligned;", ir.VoidType(), [], "")


def emit_wait(builder, pending: int, values: list) -> list:
    """``wgmma.wait_group pending`` with ``values`` (f32 or i32 accumulators) passed through."""
    if not values:
        _asm(builder, f"wgmma.wait_group.sync.aligned {pending};", ir.VoidType(), [], "")
        return []
    n = len(values)
    ret = struct_type(builder.module, [v.type for v in values])
    cons = ",".join([f"={_constraint(v.type)}" for v in values] + [str(i) for i in range(n)])
    got = _asm(builder, f"wgmma.wait_group.sync.aligned {pending};", ret, values, cons)
    return [builder.extract_value(got, i) for i in range(n)]


def _constraint(ty) -> str:
    return "r" if ty == I32 else "f"


#: 32-bit registers of one warp's A fragment when A comes from registers (m64nNk16, 16-bit)
A_REGISTERS = 4


def mma_text(kind: str, n: int, a_in_registers: bool = False, b_mn_major: bool = True) -> str:
    """One ``wgmma.mma_async`` m64nNkK with accumulators ``$0..$(n/2-1)``, then A (a
    descriptor, or with ``a_in_registers`` four 32-bit registers of the warp's fragment), the
    B descriptor and scale-d; A K-major, B N-major for 16-bit kinds (``imm-trans-b = 1``),
    K-major for tf32, s8 and float8 (no transpose operands; s8 has no scale operands either)
    and for 16-bit kinds when not ``b_mn_major``. The register-A form has no ``imm-trans-a``."""
    regs = n // 2
    acc = ", ".join(f"${i}" for i in range(regs))
    n_a = A_REGISTERS if a_in_registers else 1
    a = (f"{{{', '.join(f'${regs + i}' for i in range(n_a))}}}" if a_in_registers
         else f"${regs}")
    trans_b = int(b_mn_major)
    tail = {"f16": f", 1, 1, 0, {trans_b}", "bf16": f", 1, 1, 0, {trans_b}",
            "s8": ""}.get(kind, ", 1, 1")
    if a_in_registers:
        tail = f", 1, 1, {trans_b}"
    types = "s32.s8.s8" if kind == "s8" else f"f32.{kind}.{kind}"
    return ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${regs + n_a + 1}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k{KIND_K[kind]}.{types} "
            f"{{{acc}}}, {a}, ${regs + n_a}, p{tail};\n}}")


def emit_mma(builder, kind: str, n: int, acc: list, desc_a, desc_b,
             b_mn_major: bool = True) -> list:
    """One wgmma; ``desc_a`` is A's descriptor (i64) or its fragment (a list of i32)."""
    regs = n // 2
    ty = I32 if kind == "s8" else F32
    ret = struct_type(builder.module, [ty] * regs)
    a_ops = list(desc_a) if isinstance(desc_a, list) else [desc_a]
    a_cons = ["r"] * len(a_ops) if isinstance(desc_a, list) else ["l"]
    cons = ",".join([f"={_constraint(ty)}"] * regs + a_cons + ["l", "r"]
                    + [str(i) for i in range(regs)])
    got = _asm(builder, mma_text(kind, n, isinstance(desc_a, list), b_mn_major), ret,
               a_ops + [desc_b, i32(1)] + list(acc), cons)
    return [builder.extract_value(got, i) for i in range(regs)]


def _descriptor(builder, addr, bits: int):
    field = builder.lshr(builder.and_(addr, i32(0x3FFFF)), i32(4))
    return builder.or_(builder.zext(field, I64), ir.Constant(I64, bits))


class Instr(NamedTuple):
    """One m64nNk16 of warpgroup 0: its A block ``(row0, kk)``, B block ``(kk, n0)``, their
    start bytes in the stage, N, and (for lane 0 of warp 0) each D register's coordinate."""

    row0: int
    kk: int
    n0: int
    a_byte: int
    b_byte: int
    n: int
    coords: tuple


def plan(m: int, n: int, k: int, warps_m: int, kind: str = "f16",
         b_k_major: bool = False, block_outer: bool = False) -> list[Instr]:
    """The instructions one warpgroup issues, in order: K steps outermost, or with
    ``block_outer`` every K step of one accumulator block (row0, n0) before the next
    (:mod:`naiad_nvidia.passes.wgmma_order` says when and why)."""
    stage = WgmmaStage(m, n, k, kind, b_k_major)
    n_instr = min(n, MAX_N)
    blocks = [(row0, n0) for row0 in range(0, m, 16 * warps_m) for n0 in range(0, n, n_instr)]
    steps = range(0, k, KIND_K[kind])
    order = ([(kk, blk) for blk in blocks for kk in steps] if block_outer
             else [(kk, blk) for kk in steps for blk in blocks])
    out = []
    for kk, (row0, n0) in order:
        coords = tuple((row0 + 8 * ((i >> 1) & 1), n0 + 8 * (i >> 2) + (i & 1))
                       for i in range(n_instr // 2))
        out.append(Instr(row0, kk, n0, stage.a.start_byte(row0, kk),
                         stage.b_start_byte(kk, n0), n_instr, coords))
    return out


def multiply(kl, op, acc, kind: str, k: int, base, pending: int, a_regs=None,
             b_base=None, b_k_major: bool = False) -> list:
    """``acc`` plus the product of the tiles of a :class:`WgmmaStage` at shared byte offset
    ``base`` (an i32 value); returns the accumulator registers (finished when pending = 0).
    With ``b_base`` B is at that offset instead of the stage's, and A at ``base``; with
    ``a_regs`` (the A operand, a register tensor in the wgmma A-fragment layout) A is read
    from registers. ``pending=None`` issues no wait: the registers returned are in flight until
    a later ``wgmma.wait_group`` retires the group (:mod:`naiad_nvidia.passes.wgmma_async`)."""
    (m, n) = acc.type.shape
    warps_m = acc.type.layout.warps_per_cta[0]
    stage = WgmmaStage(m, n, k, kind, b_k_major)
    b = kl.b
    kl.smem.align = max(kl.smem.align or 0, ALIGN)
    smem_addr = kl.cached("smem_addr", lambda: kl.entry.ptrtoint(kl.smem, I32))
    if b_base is None:
        b_base = b.add(base, i32(stage.b_offset))
    desc_a = a_words = None
    if a_regs is None:
        # warpgroup g owns rows 64 g .. 64 g + 63 of every 16 * warps_m-row block of A
        a_group = kl.cached(("wgmma_a_rows", stage.a.panel), lambda: kl.entry.mul(
            kl.entry.udiv(kl.tid, i32(WARPGROUP)), i32(stage.a.start_byte(64, 0))))
        desc_a = _descriptor(b, b.add(b.add(smem_addr, base), a_group),
                             stage.a.descriptor_bits())
    else:
        a_words = register_a_words(kl, a_regs, kind)
    desc_b = _descriptor(b, b.add(smem_addr, b_base), stage.b.descriptor_bits())

    c_idx = register_of(kl.linear(acc))
    c_vals = list(kl.get(acc))
    instrs = plan(m, n, k, warps_m, kind, b_k_major, bool(op.attrs.get(BLOCK_OUTER_ATTR)))
    every = int(op.attrs.get(PROMOTE_ATTR) or 0)
    if every:
        return _promoted(kl, instrs, every, c_idx, c_vals, lambda ins, vals: _issue(
            kl, ins, vals, c_idx, desc_a, desc_b, a_words, kind, stage))
    if a_words is not None:
        # pack every A fragment first: a register written between two wgmmas of one group
        # makes ptxas fence (WARPGROUP.ARRIVE) before each of them
        for ins in instrs:
            a_words(ins.row0, ins.kk)
    emit_fence(b)
    for ins in instrs:
        _issue(kl, ins, c_vals, c_idx, desc_a, desc_b, a_words, kind, stage)
    emit_commit(b)
    if pending is None:
        return c_vals
    return emit_wait(b, pending, c_vals)


def _issue(kl, ins, c_vals, c_idx, desc_a, desc_b, a_words, kind, stage) -> None:
    """One wgmma of the plan, updating ``c_vals`` in place."""
    b = kl.b
    try:
        regs = [c_idx[c] for c in ins.coords]
    except KeyError:
        raise kl.error("internal: a wgmma accumulator register is missing") from None
    if a_words is None:
        da = b.add(desc_a, ir.Constant(I64, ins.a_byte >> 4))
    else:
        da = a_words(ins.row0, ins.kk)
    db = b.add(desc_b, ir.Constant(I64, ins.b_byte >> 4))
    outs = emit_mma(b, kind, ins.n, [c_vals[r] for r in regs], da, db, stage.b_mn_major)
    for r, v in zip(regs, outs):
        c_vals[r] = v


def _promoted(kl, instrs, every: int, c_idx, c_vals, issue) -> list:
    """Triton's fp8 precision promotion (``max_num_imprecise_acc``): the wgmmas of each
    ``every`` K elements sum into zeroed registers at the tensor cores' fp8 precision; once
    they finish, one f32 ``add`` per register folds them into the accumulator."""
    b = kl.b
    zero = ir.Constant(F32, 0.0)
    chunks: dict[int, list] = {}
    for ins in instrs:
        chunks.setdefault(ins.kk // every, []).append(ins)
    n = len(c_vals)
    for chunk in chunks.values():
        part = [zero] * n
        emit_fence(b)
        for ins in chunk:
            issue(ins, part)
        emit_commit(b)
        # waiting on the accumulator too keeps its reads after any wgmma still writing it
        done = emit_wait(b, 0, part + c_vals)
        part, c_vals = done[:n], done[n:]
        touched = {c_idx[c] for ins in chunk for c in ins.coords}
        c_vals = [b.fadd(c, p) if r in touched else c
                  for r, (c, p) in enumerate(zip(c_vals, part))]
    return c_vals


def register_a_words(kl, a, kind: str):
    """``(row0, kk) -> [4 x i32]``: the A fragment of the m64nNk16 at (row0, kk), packed two
    16-bit elements per register. The register-A fragment of a warp is mma.sync's m16n8k16 A
    fragment for its 16 rows of the warpgroup's 64 (PTX ISA, "Register Fragments" of
    wgmma.mma_async), which is what ``#dot_operand<opIdx = 0, parent = #nvidia_mma<warpsPerCTA
    = [num_warps, 1]>, kWidth = 2>`` holds; registers are found by coordinate as for mma.sync."""
    a_idx = register_of(kl.linear(a))
    vals = kl.get(a)
    b = kl.b
    packed: dict = {}

    def words(row0: int, kk: int) -> list:
        if (row0, kk) not in packed:
            try:
                regs = [a_idx[(row0 + dr, kk + dc)] for dr, dc in A_OFFSETS[2]]
            except KeyError:
                raise kl.error("internal: a wgmma A-fragment register is missing") from None
            out = pack_operands(b, [vals[r] for r in regs], kind)
            packed[(row0, kk)] = [w if w.type == I32 else b.bitcast(w, I32) for w in out]
        return packed[(row0, kk)]

    return words


def a_in_registers_layout(a_type, acc_type) -> bool:
    """A can be read from registers: a 16-bit operand each of whose threads holds exactly its
    wgmma A fragment (the linear layout of ``#dot_operand<opIdx = 0, parent = <the
    accumulator's layout>, kWidth = 2>``, whatever the attribute: the accumulator layout itself
    has the same one for 16-bit elements)."""
    if a_type.element.name not in ("f16", "bf16") or a_type.layout is None:
        return False
    fragment = DotOperandLayout(0, acc_type.layout, 2)
    shape = tuple(a_type.shape)
    want, got = linear_of(fragment, shape), linear_of(a_type.layout, shape)
    if any(list(want.bases.get(d, ())) != list(got.bases.get(d, ())) for d in ("lane", "warp")):
        return False
    return sorted(register_of(want)) == sorted(register_of(got))


def lower_wgmma_ring(kl, op) -> None:
    acc, slot = op.operands[:2]
    base = kl.b.mul(kl.get(slot)[0], i32(int(op.attrs["stage_bytes"])))
    if op.attrs.get("ring_base"):   # a resident ring (naiad_nvidia.passes.tma_persistent)
        base = kl.b.add(base, i32(int(op.attrs["ring_base"])))
    if len(op.operands) == 3:   # B alone in the slot; A in registers or resident
        _lower_b_ring(kl, op, acc, base)
        return
    kl.set(op.results[0], multiply(kl, op, acc, op.attrs["kind"], int(op.attrs["k"]), base,
                                   int(op.attrs["pending"]), b_k_major=bool(op.attrs.get("b_k_major"))))


def _lower_b_ring(kl, op, acc, slot_base) -> None:
    a = op.operands[2]
    kind, k = op.attrs["kind"], int(op.attrs["k"])
    b_base = kl.b.add(slot_base, i32(int(op.attrs["b_offset"])))
    if op.attrs.get("a_regs"):
        if not a_in_registers_layout(a.type, acc.type):
            raise kl.error(f"internal: wgmma A from registers needs the A-fragment layout, got "
                           f"{a.type.layout}")
        a_base, a_regs = i32(0), a
    else:
        resident = a_source_is_resident(a)
        if resident is None:
            raise kl.error("internal: a ring wgmma's A is neither in registers nor resident")
        a_base, a_regs = i32(int(resident.attrs["smem_offset"])), None
    pending = None if op.attrs.get("in_flight") else int(op.attrs["pending"])
    kl.set(op.results[0], multiply(kl, op, acc, kind, k, a_base, pending, a_regs, b_base,
                                   bool(op.attrs.get("b_k_major"))))


def lower_wgmma_staged(kl, op) -> None:
    """Store A and B in wgmma's layout at the start of the scratch buffer, make them visible
    to the async proxy and to every warp, multiply and wait. A from registers (``a_regs``)
    or from its resident buffer (``nvidia.wgmma_resident``) is not stored: B is then at
    byte 0 (:mod:`naiad_nvidia.passes.wgmma_operands`)."""
    a, b, acc = op.operands
    (m, k), n = a.type.shape, b.type.shape[1]
    kind = op.attrs["kind"]
    b_k_major = bool(op.attrs.get("b_k_major"))
    stage = WgmmaStage(m, n, k, kind, b_k_major)
    from_registers = bool(op.attrs.get("a_regs"))
    resident = a_source_is_resident(a)
    if from_registers and not a_in_registers_layout(a.type, acc.type):
        raise kl.error(f"internal: wgmma A from registers needs the A-fragment layout, got "
                       f"{a.type.layout}")
    b_offset = 0 if (from_registers or resident) else stage.b_offset
    if not (from_registers or resident):
        smem_write(kl, kl.get(a), stage.a.offsets(kl.linear(a)), a.type.scalar, base=0)
    smem_write(kl, kl.get(b), stage.b.offsets(kl.linear(b), transposed=not stage.b_mn_major),
               b.type.scalar, base=b_offset)
    lower_fence_async_shared(kl, op)
    kl.ti.barrier(kl.b)
    a_base = i32(int(resident.attrs["smem_offset"])) if resident else i32(0)
    kl.set(op.results[0], multiply(kl, op, acc, kind, k, a_base, 0,
                                   a if from_registers else None, i32(b_offset), b_k_major))


def lower_wgmma_resident(kl, op) -> None:
    """Store the A tile once into the op's own buffer (after a barrier: an enclosing loop's
    previous iteration may still be reading it); the staged wgmma that reads it fences the
    async proxy and waits at its barrier after its own stores, which covers this store."""
    a = op.operands[0]
    vals = kl.get(a)
    kl.smem.align = max(kl.smem.align or 0, ALIGN)
    kl.ti.barrier(kl.b)
    smem_write(kl, vals, resident_tile(op).offsets(kl.linear(a)), a.type.scalar,
               base=int(op.attrs["smem_offset"]))
    kl.set(op.results[0], vals)


def lower_wgmma_wait(kl, op) -> None:
    kl.set(op.results[0], emit_wait(kl.b, int(op.attrs["pending"]), list(kl.get(op.operands[0]))))


def lower_fence_async_shared(kl, op) -> None:
    _asm(kl.b, "fence.proxy.async.shared::cta;", ir.VoidType(), [], "")


LOWERINGS = {"nvidia.wgmma_ring": lower_wgmma_ring, "nvidia.wgmma_staged": lower_wgmma_staged,
             "nvidia.wgmma_resident": lower_wgmma_resident,
             "nvidia.wgmma_wait": lower_wgmma_wait,
             "nvidia.fence_async_shared": lower_fence_async_shared}
