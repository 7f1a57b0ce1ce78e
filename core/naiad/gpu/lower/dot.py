"""``dot`` by fused multiply-adds on a distributed accumulator layout.

The FMA loop needs each operand in the ``dot_operand`` layout of the accumulator's layout: a
thread holds the whole K extent of the rows of A and the columns of B its accumulators need, so
each accumulator register runs ``acc = a[m, k] * b[k, n] + acc`` for k = 0 .. K-1 without
communication. An operand already laid out that way is used from registers. Any other operand
(see :mod:`naiad.gpu.passes.dot_operands`) is written to shared memory once, and the loop --
K outermost -- loads each run of consecutive K (or N) values just before its first use, so only
a slice of the operands is live at a time.

Inputs are widened to the accumulator type first (f16/bf16 -> f32, i8 -> i32 by signedness);
floats use ``llvm.fmuladd``; integers multiply and add (wrapping). A 16-bit float accumulator
(``out_dtype=float16`` / bf16) is carried in f32 and rounded once at the end: rounding after each
of K steps would lose ~sqrt(K)/2 ulps (Triton's tensor cores round once per k16 instruction, and
its test_dot3d holds naiad's FMA dot to that accuracy).
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.types import ScalarType
from ..linear_layout import LinearLayout
from ..movement import dot_operand_views, dot_scratch_layout, relabel_map, smem_itemsize
from .context import KernelLowering, lowers
from .elementwise import emit_cast
from .shared import _Addresses, _from_memory, smem_write
from .types import bf16_to_f32, call_intrinsic, f32_to_bf16, float_suffix, i32


class SharedOperand:
    """Registers of ``ll`` read from shared memory on first use, a vector at a time: the
    registers whose elements are consecutive in memory (:func:`vector_bits`), wherever their
    bits sit among the register bits (B's N run follows its K bits in the dot_operand
    layout)."""

    def __init__(self, kl: KernelLowering, ll: LinearLayout, elem, base):
        self.kl, self.ll, self.elem, self.base = kl, ll, elem, base
        self.size = smem_itemsize(elem)
        self.bits = vector_bits(ll, self.size)
        self.values: dict[int, object] = {}
        self.address = None   # made at the first read, in the dot's block

    def __getitem__(self, reg: int):
        if reg not in self.values:
            kl, b = self.kl, self.kl.b
            members = [reg & ~sum(1 << j for j in self.bits)]
            for j in self.bits:
                members += [r | 1 << j for r in members]
            if self.address is None:
                self.address = _Addresses(kl, self.ll, self.size, self.base)
            addr = self.address(self.ll.apply_flat(register=members[0]))
            mt, lt = kl.mtype(self.elem), kl.ltype(self.elem)
            run = len(members)
            if run == 1:
                self.values[reg] = _from_memory(kl, b.load(addr, typ=mt, align=self.size), lt)
            else:
                vec = b.load(addr, typ=ir.VectorType(mt, run), align=self.size * run)
                for i, r in enumerate(members):
                    self.values[r] = _from_memory(kl, b.extract_element(vec, i32(i)), lt)
        return self.values[reg]


def vector_bits(ll: LinearLayout, size: int) -> list[int]:
    """Register bits ``j0, j1, ...`` whose bases step the row-major index by 1, 2, 4, ...
    while no lane/warp basis touches those low index bits: the registers that differ only
    in them hold consecutive elements (at most 16 bytes)."""
    regs = list(ll.flat_bases("register"))
    thread = 0
    for dim in ("lane", "warp"):
        for v in ll.flat_bases(dim):
            thread |= v
    bits: list[int] = []
    while (2 << len(bits)) * size <= 16:
        step = 1 << len(bits)
        if thread & step or step not in regs:
            break
        bits.append(regs.index(step))
    # every other register must keep the run's low index bits clear (aligned vectors)
    while bits and any(v & ((1 << len(bits)) - 1) for j, v in enumerate(regs)
                       if j not in bits):
        bits.pop()
    return bits


@lowers("dot")
def lower_dot(kl: KernelLowering, op) -> None:
    a, bv, acc = op.operands
    builder = kl.b
    views = dot_operand_views(op)
    offsets, _ = dot_scratch_layout(op)
    regs = []
    for v, (src, want), base in zip((a, bv), views, offsets):
        if base is None:
            vals = kl.get(v)
            regs.append([vals[i] for i in relabel_map(src, want)])
        else:
            smem_write(kl, kl.get(v), src, v.type.scalar, base=base)
            regs.append(SharedOperand(kl, want, v.type.scalar, base))
    if any(base is not None for base in offsets):
        kl.ti.barrier(builder)
    kl.set(op.results[0], fma_accumulate(kl, acc, regs, (views[0][1], views[1][1]),
                                         a.type.scalar, a.type.shape[-1]))


def fma_dot_from_shared(kl: KernelLowering, acc, elem, k_size: int, a_base, b_base) -> list:
    """``acc + A @ B`` by FMAs, for A ``[..., M, K]`` and B ``[..., K, N]`` of element type
    ``elem`` already in shared memory, row-major at byte ``a_base`` / ``b_base`` (ints or i32
    values): e.g. a ring slot a backend filled with asynchronous copies. Returns the
    accumulator registers (``acc``'s layout)."""
    from ..layouts import DotOperandLayout

    shape = acc.type.shape
    lls = (DotOperandLayout(0, acc.type.layout).to_linear(shape[:-1] + (k_size,)),
           DotOperandLayout(1, acc.type.layout).to_linear(shape[:-2] + (k_size, shape[-1])))
    regs = [SharedOperand(kl, ll, elem, base) for ll, base in zip(lls, (a_base, b_base))]
    return fma_accumulate(kl, acc, regs, lls, elem, k_size)


def fma_accumulate(kl: KernelLowering, acc, regs, lls, in_t, k_size: int) -> list:
    """The FMA loop: ``acc``'s registers plus the product of the operands whose registers
    ``regs`` (lists, or :class:`SharedOperand`) holds in the dot_operand layouts ``lls``."""
    builder = kl.b
    c_ll = kl.linear(acc)
    a_ll, b_ll = lls
    _check_thread_parts(kl, a_ll, b_ll, c_ll)

    rank = c_ll.rank
    acc_regs = list(kl.get(acc))
    acc_t = acc.type.scalar
    a_index = _register_index(a_ll)
    b_index = _register_index(b_ll)

    compute_t = acc_t
    if acc_t.name in ("bf16", "f16"):
        compute_t = ScalarType("f32")
        acc_regs = [bf16_to_f32(builder, x) if acc_t.name == "bf16"
                    else emit_cast(kl, acc_t, compute_t, x) for x in acc_regs]

    widened: dict[tuple[int, int], object] = {}

    def operand(which: int, reg: int):
        key = (which, reg)
        if key not in widened:
            raw = regs[which][reg]
            widened[key] = emit_cast(kl, in_t, compute_t, raw) if in_t != compute_t else raw
        return widened[key]

    coords = [kl.reg_coords(c_ll, r) for r in range(len(acc_regs))]
    for k in range(k_size):
        for r, c in enumerate(coords):
            batch, m, n = c[:rank - 2], c[rank - 2], c[rank - 1]
            ar = a_index.get(batch + (m, k))
            br = b_index.get(batch + (k, n))
            if ar is None or br is None:
                raise kl.error(f"internal: dot operand registers missing for {c}, k={k}")
            x, y = operand(0, ar), operand(1, br)
            if compute_t.is_float:
                lt = x.type
                acc_regs[r] = call_intrinsic(builder, f"llvm.fmuladd.{float_suffix(lt)}", lt,
                                             [x, y, acc_regs[r]])
            else:
                acc_regs[r] = builder.add(builder.mul(x, y), acc_regs[r])
    if acc_t.name == "bf16":
        acc_regs = [f32_to_bf16(builder, x) for x in acc_regs]
    elif acc_t.name == "f16":
        acc_regs = [emit_cast(kl, compute_t, acc_t, x) for x in acc_regs]
    return acc_regs


def _register_index(ll) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for r in range(ll.in_size("register")):
        out.setdefault(ll.unflatten(ll.apply_flat(register=r)), r)
    return out


def _check_thread_parts(kl, a_ll, b_ll, c_ll) -> None:
    """Lanes/warps must hold A's rows and B's columns of the accumulators they compute."""
    rank = c_ll.rank
    for dim in ("lane", "warp"):
        for va, vb, vc in zip(a_ll.bases.get(dim, ()), b_ll.bases.get(dim, ()),
                              c_ll.bases.get(dim, ())):
            want_a = vc[:rank - 1] + (0,)
            want_b = vc[:rank - 2] + (0, vc[rank - 1])
            if va != want_a or vb != want_b:
                raise kl.error(f"internal: dot operand layouts do not match the accumulator's "
                               f"{dim} bases ({va}, {vb} vs {vc})")
