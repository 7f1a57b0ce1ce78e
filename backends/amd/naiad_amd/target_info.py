"""What the vendor-neutral LLVM lowering asks of AMD GPUs (see ``naiad.plugins.TargetInfo``).

Every method emits llvmlite.ir at the builder's position. Decisions, each for a reason:

* ids come from ``llvm.amdgcn.workitem.id.*`` / ``llvm.amdgcn.workgroup.id.*``;
* ``num_programs`` reads the HSA kernel dispatch packet (``llvm.amdgcn.dispatch.ptr``):
  ``grid_size[axis] / workgroup_size[axis]``. The packet is defined by HSA itself and is filled by
  every loader (HIP, HSA, OpenCL), unlike the code-object-version specific implicit (hidden)
  kernel arguments. Both loads are invariant. The quotient is exact because kernels carry
  ``"uniform-work-group-size"="true"``: the launcher only dispatches whole workgroups, so the grid
  is a multiple of the group size (and LLVM may fold the remainder logic away);
* ``barrier`` is ``fence syncscope("workgroup") release`` / ``llvm.amdgcn.s.barrier`` /
  ``fence syncscope("workgroup") acquire`` -- the sequence HIP's ``__syncthreads`` uses. The
  release fence makes LLVM wait for this wave's outstanding LDS (and global) stores before the
  ``s_barrier``; the acquire fence keeps later loads from being hoisted above it. A bare
  ``s.barrier`` orders execution only, not memory;
* XOR shuffles (the butterfly steps of reductions) use DPP, ``ds_swizzle`` or ``permlanex16``
  as :mod:`naiad_amd.lowering.cross_lane` plans them; shuffles to an arbitrary lane use
  ``llvm.amdgcn.ds.bpermute`` (the source lane as a byte address ``lane * 4``). Values wider
  than 32 bits are moved as 32-bit halves; narrower ones are widened;
* ``lane_id`` is ``llvm.amdgcn.mbcnt.lo`` (+ ``mbcnt.hi`` on wave64): the hardware lane, correct
  even when the workgroup is not laid out as ``tid % wave``;
* atomics use ``syncscope("agent")`` (device-wide).
"""
from __future__ import annotations

from llvmlite import ir

from naiad.plugins import TargetInfo

from .lowering import cross_lane, mathlib
from .archs import TRIPLE, get_arch
from .lowering.irutil import I16, I32, I64, call_intrinsic

#: The AMDGPU data layout of LLVM 22 for ``amdgcn-amd-amdhsa`` (the same for every gfx arch).
#: :class:`naiad_amd.toolchain.Toolchain` checks it against the TargetMachine it creates.
DATA_LAYOUT = (
    "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-"
    "p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-"
    "v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
)

GLOBAL_AS = 1
LDS_AS = 3
CONSTANT_AS = 4

_AXES = "xyz"
# Offsets in hsa_kernel_dispatch_packet_t: workgroup_size_{x,y,z} are u16 from byte 4,
# grid_size_{x,y,z} are u32 from byte 12.
_WG_SIZE_OFFSET = 4
_GRID_SIZE_OFFSET = 12


def _axis(axis: int) -> str:
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1 or 2, not {axis!r}")
    return _AXES[axis]


class AmdTargetInfo(TargetInfo):
    """TargetInfo of one AMD architecture (``gfx90a``, ``gfx942``: wave64; ``gfx1100``: wave32)."""

    triple = TRIPLE
    data_layout = DATA_LAYOUT
    global_address_space = GLOBAL_AS
    shared_address_space = LDS_AS
    kernel_calling_convention = "amdgpu_kernel"
    #: atomics are ordered GPU-wide (``syncscope("agent")``), as HIP's atomicAdd & co. are; the
    #: default system scope would add host-coherence cache maintenance to every atomic.
    atomic_scope = "agent"
    #: llvmlite's LLVM has no AMDGPU assembly parser, so an object with inline GCN assembly
    #: cannot be emitted (LLVM would abort the process): ``tl.inline_asm_elementwise`` is a
    #: clear error instead. Device printf is not provided either (no hostcall buffer in
    #: naiad's HIP runtime); a failed device assert traps (``s_trap``).
    supports_inline_asm = False

    def __init__(self, arch: str = "gfx942"):
        self.arch = get_arch(arch)
        self.warp_size = self.arch.wave_size
        self.gfx10_plus = int(self.arch.name[3:-2]) >= 10  # RDNA: row_xmask DPP, permlanex16
        self.shared_memory_bytes = self.arch.lds_bytes

    # -- matrix cores ----------------------------------------------------------------------
    def matrix_multiply(self, builder, instruction, a, b, c):
        """One MFMA/WMMA issue (see :mod:`naiad_amd.lowering.matrix`)."""
        from .ir.matrix_table import row_of
        from .lowering.matrix import emit

        return emit(builder, row_of(self.arch.name, instruction.name), a, b, c)

    def register_budget(self, num_warps: int) -> int:
        """32-bit registers per lane the core's stream pipeliner may fill with accumulators and
        prefetched tiles (``naiad.gpu.matrix.stream_pipeline``): wave64 CDNA the ping-pong
        budget (512 unified VGPR/AGPR per SIMD over its waves, less 64); wave32 RDNA 256
        VGPRs per wave (1024 per SIMD on the smallest parts) less 96 -- WMMA's replicated
        operand fragments and the addresses, measured on gfx1100: the unpipelined 128x128x32
        fp16 matmul uses 245 VGPRs for an estimate of 160."""
        waves_per_simd = max(1, -(-num_warps // 4))
        if self.warp_size == 64:
            from .passes.block_ping_pong import register_budget

            return register_budget(num_warps)
        return min(256, 1024 // waves_per_simd) - 96

    def __repr__(self):
        return f"AmdTargetInfo({self.arch.name!r}, wave{self.warp_size})"

    # -- ids -----------------------------------------------------------------------------
    def thread_id(self, builder, axis: int = 0):
        return call_intrinsic(builder, f"llvm.amdgcn.workitem.id.{_axis(axis)}", I32, [])

    def program_id(self, builder, axis: int):
        return call_intrinsic(builder, f"llvm.amdgcn.workgroup.id.{_axis(axis)}", I32, [])

    def num_programs(self, builder, axis: int):
        a = _axis(axis)
        packet = call_intrinsic(builder, "llvm.amdgcn.dispatch.ptr", ir.PointerType(addrspace=CONSTANT_AS), [])
        invariant = builder.module.add_metadata([])
        i8 = ir.IntType(8)
        idx = "xyz".index(a)

        def field(offset, ty, align):
            p = builder.gep(packet, [ir.Constant(I64, offset)], inbounds=True, source_etype=i8)
            v = builder.load(p, typ=ty, align=align)
            v.set_metadata("invariant.load", invariant)
            return v

        group = field(_WG_SIZE_OFFSET + 2 * idx, I16, 2)
        grid = field(_GRID_SIZE_OFFSET + 4 * idx, I32, 4)
        return builder.udiv(grid, builder.zext(group, I32), name=f"num_programs_{a}")

    # -- synchronisation -----------------------------------------------------------------
    def barrier(self, builder) -> None:
        builder.fence("release", "workgroup")
        call_intrinsic(builder, "llvm.amdgcn.s.barrier", ir.VoidType(), [])
        builder.fence("acquire", "workgroup")

    def global_timer_ns(self, builder):
        """s_memrealtime, the GPU's constant 100 MHz clock, in nanoseconds (``tl.atomic_poll``'s
        timeout)."""
        ticks = call_intrinsic(builder, "llvm.amdgcn.s.memrealtime", I64, [])
        return builder.mul(ticks, ir.Constant(I64, 10))

    # -- lanes ---------------------------------------------------------------------------
    def lane_id(self, builder):
        all_lanes = ir.Constant(I32, -1)
        lane = call_intrinsic(builder, "llvm.amdgcn.mbcnt.lo", I32, [all_lanes, ir.Constant(I32, 0)])
        if self.warp_size == 64:
            lane = call_intrinsic(builder, "llvm.amdgcn.mbcnt.hi", I32, [all_lanes, lane])
        return lane

    def shuffle_xor(self, builder, value, lane_mask: int):
        if not 0 <= int(lane_mask) < self.warp_size:
            raise ValueError(f"shuffle_xor lane mask {lane_mask} outside a wave of {self.warp_size}")
        plan = cross_lane.xor_plan(int(lane_mask), self.warp_size, self.gfx10_plus)
        return self._per_word(builder, value,
                              lambda w: cross_lane.emit(builder, w, plan, lambda: self.lane_id(builder)))

    def shuffle_idx(self, builder, value, src_lane):
        if isinstance(src_lane, int):
            src_lane = ir.Constant(I32, src_lane)
        addr = builder.shl(src_lane, ir.Constant(I32, 2))
        return self._per_word(builder, value,
                              lambda w: call_intrinsic(builder, "llvm.amdgcn.ds.bpermute", I32, [addr, w]))

    def _per_word(self, builder, value, move):
        """``value`` moved across lanes by ``move`` (i32 -> i32), one 32-bit word at a time."""
        ty = value.type
        bits = _bit_width(ty)
        if bits == 32:
            if isinstance(ty, ir.PointerType):  # LDS/private pointers are 32-bit
                word = builder.ptrtoint(value, I32)
            else:
                word = value if ty == I32 else builder.bitcast(value, I32)
            out = move(word)
            if isinstance(ty, ir.PointerType):
                return builder.inttoptr(out, ty)
            return out if ty == I32 else builder.bitcast(out, ty)
        if bits < 32:
            as_int = value if isinstance(ty, ir.IntType) else builder.bitcast(value, ir.IntType(bits))
            word = builder.zext(as_int, I32)
            out = builder.trunc(move(word), ir.IntType(bits))
            return out if isinstance(ty, ir.IntType) else builder.bitcast(out, ty)
        if bits == 64:
            as_int = value if ty == I64 else (builder.ptrtoint(value, I64) if isinstance(ty, ir.PointerType)
                                              else builder.bitcast(value, I64))
            lo = builder.trunc(as_int, I32)
            hi = builder.trunc(builder.lshr(as_int, ir.Constant(I64, 32)), I32)
            lo, hi = move(lo), move(hi)
            out = builder.or_(builder.zext(lo, I64), builder.shl(builder.zext(hi, I64), ir.Constant(I64, 32)))
            if ty == I64:
                return out
            if isinstance(ty, ir.PointerType):
                return builder.inttoptr(out, ty)
            return builder.bitcast(out, ty)
        raise ValueError(f"cannot shuffle a value of type {ty} ({bits} bits)")

    # -- buffer instructions ---------------------------------------------------------------
    def buffer_resource(self, builder, base):
        """A raw buffer resource (``ptr addrspace(8)``) over ``base``: no stride, ``num_records``
        2**31 - 2 bytes, the arch's format/out-of-range flags. LLVM keeps it in 4 SGPRs."""
        from .passes.buffer_range import NUM_RECORDS

        if self.arch.buffer_flags is None:
            raise ValueError(f"{self.arch.name} has no buffer resource flags: no buffer ops there")
        return call_intrinsic(builder, "llvm.amdgcn.make.buffer.rsrc.p8.p1", _RSRC,
                              [base, ir.Constant(I16, 0), ir.Constant(I64, NUM_RECORDS),
                               ir.Constant(I32, self.arch.buffer_flags)])

    def buffer_load(self, builder, rsrc, byte_offset, ty):
        """``buffer_load`` of ``ty`` at ``byte_offset``: 0 when the offset is out of range."""
        return call_intrinsic(builder, f"llvm.amdgcn.raw.ptr.buffer.load.{_mangle(ty)}", ty,
                              [rsrc, byte_offset, ir.Constant(I32, 0), ir.Constant(I32, 0)])

    def buffer_store(self, builder, rsrc, byte_offset, value) -> None:
        """``buffer_store`` of ``value`` at ``byte_offset``: dropped when out of range."""
        call_intrinsic(builder, f"llvm.amdgcn.raw.ptr.buffer.store.{_mangle(value.type)}",
                       ir.VoidType(), [value, rsrc, byte_offset, ir.Constant(I32, 0), ir.Constant(I32, 0)])

    # -- backend ops -----------------------------------------------------------------------
    def op_lowering(self, name: str):
        """Lowerings of this backend's own GPU-IR ops (``amd.sched_hint``, buffer ops,
        ``amd.cond_barrier``)."""
        from .lowering import buffer_ops, ping_pong, sched_hints

        return (sched_hints.LOWERINGS.get(name) or buffer_ops.LOWERINGS.get(name)
                or ping_pong.LOWERINGS.get(name))

    def matrix_phase(self, builder, begin: bool) -> None:
        """Open/close the matrix phase of a ping-pong ``matrix_mma_ring``: ``s_setprio``."""
        from .lowering.ping_pong import matrix_phase

        matrix_phase(builder, begin)

    # -- math ----------------------------------------------------------------------------
    def math(self, builder, name: str, args, elem: str):
        return mathlib.emit(builder, name, list(args), elem)


_RSRC = ir.PointerType(addrspace=8)


def _mangle(ty) -> str:
    """LLVM's overload suffix of an integer (vector) type: ``i32``, ``v4i32``."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    return str(ty)


def _bit_width(ty) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    s = str(ty)
    if s in ("half", "bfloat"):
        return 16
    if s == "float":
        return 32
    if s == "double":
        return 64
    if isinstance(ty, ir.PointerType):
        return 64 if ty.addrspace in (0, 1, 4) else 32
    raise ValueError(f"cannot shuffle a value of type {ty}")
