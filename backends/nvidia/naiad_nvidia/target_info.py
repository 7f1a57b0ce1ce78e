"""What the vendor-neutral LLVM lowering asks of NVIDIA GPUs: ids, barrier, shuffles, math and
predicated masked loads/stores.

Why: core lowers tile IR to LLVM IR without knowing any vendor; every NVIDIA-specific intrinsic
name, address space and calling convention lives here. Intrinsic spellings are the ones LLVM 22
accepts natively (``llvm.nvvm.barrier0`` is only auto-upgraded to
``llvm.nvvm.barrier.cta.sync.aligned.all``, so we emit the latter directly).
"""
from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from naiad.backend import I32
from naiad.errors import CodegenError
from naiad.plugins import TargetInfo

from .lowering import atomics, device_io, mathlib, predicated_memory

FULL_MASK = ir.Constant(I32, 0xFFFFFFFF)
#: shfl.sync "c" operand for a full 32-lane segment: clamp = 31, segment mask = 0.
SHFL_CLAMP = ir.Constant(I32, 0x1F)

#: NVPTX's data layout in LLVM 22 (checked against the TargetMachine in the tests).
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
NVPTX_TRIPLE = "nvptx64-nvidia-cuda"


class NvidiaTargetInfo(TargetInfo):
    """TargetInfo for NVIDIA GPUs (sm_80 and newer): warp 32, global addrspace 1, shared 3."""

    triple = NVPTX_TRIPLE
    data_layout = NVPTX_DATA_LAYOUT
    warp_size = 32
    global_address_space = 1
    shared_address_space = 3
    kernel_calling_convention = "ptx_kernel"
    #: NVPTX syncscopes are singlethread, "" (system), block, cluster and device; "device" is
    #: the whole GPU (PTX ``.gpu``). NB: LLVM 22 lowers the ordering of ``atomicrmw`` to a
    #: relaxed ``atom`` (only cmpxchg keeps ``.acq_rel``); acquire/release needs explicit fences
    #: -- or one PTX ``atom`` with its own order (``atomic_instruction``).
    atomic_scope = "device"
    #: Triton memory scope -> NVPTX syncscope (None: LLVM's system scope, PTX ``.sys``)
    _SYNCSCOPES = {"cta": "block", "gpu": "device", "sys": None}

    def __init__(self, arch: str = "sm_90", primitives: mathlib.Primitives | None = None):
        self.arch = arch
        self._prim = primitives or mathlib.Primitives()

    # -- special registers -------------------------------------------------------------------
    @staticmethod
    def _sreg(builder: ir.IRBuilder, reg: str, axis: int):
        if axis not in (0, 1, 2):
            raise CodegenError(f"axis must be 0, 1 or 2, got {axis!r}")
        name = f"llvm.nvvm.read.ptx.sreg.{reg}.{'xyz'[axis]}"
        return builder.call(mathlib.declare(builder.module, name, I32, []), [])

    def thread_id(self, builder, axis: int = 0):
        return self._sreg(builder, "tid", axis)

    def program_id(self, builder, axis: int):
        return self._sreg(builder, "ctaid", axis)

    def num_programs(self, builder, axis: int):
        return self._sreg(builder, "nctaid", axis)

    def lane_id(self, builder):
        return builder.and_(self.thread_id(builder, 0), ir.Constant(I32, self.warp_size - 1))

    # -- synchronisation -----------------------------------------------------------------------
    def barrier(self, builder) -> None:
        # bar.sync 0: every thread of the CTA, and orders shared/global memory within it.
        fn = mathlib.declare(builder.module, "llvm.nvvm.barrier.cta.sync.aligned.all",
                             ir.VoidType(), [I32])
        builder.call(fn, [ir.Constant(I32, 0)])

    def global_timer_ns(self, builder):
        """%globaltimer: nanoseconds, shared by the GPU (``tl.atomic_poll``'s timeout)."""
        fn = mathlib.declare(builder.module, "llvm.nvvm.read.ptx.sreg.globaltimer",
                             ir.IntType(64), [])
        return builder.call(fn, [])

    # -- atomics -------------------------------------------------------------------------------
    def syncscope(self, scope: str) -> str | None:
        return self._SYNCSCOPES.get(scope, self.atomic_scope)

    def atomic_instruction(self, op: str, elem: str, address_space: int):
        """One PTX ``atom`` with its sem and scope, spelled as Triton spells it
        (:mod:`naiad_nvidia.lowering.atomics`)."""
        return atomics.atomic_instruction(op, elem, address_space, self.arch)

    # -- warp shuffles -----------------------------------------------------------------------
    def shuffle_xor(self, builder, value, lane_mask: int):
        return self._shuffle(builder, "bfly", value, ir.Constant(I32, int(lane_mask)))

    def shuffle_idx(self, builder, value, src_lane):
        if isinstance(src_lane, int):
            src_lane = ir.Constant(I32, src_lane)
        return self._shuffle(builder, "idx", value, src_lane)

    def _shuffle(self, builder, mode: str, value, lane):
        """shfl.sync on 32-bit words; other scalar types are moved through i32 words."""
        ty = value.type
        if isinstance(ty, ir.FloatType) or ty == I32:
            sfx = "f32" if isinstance(ty, ir.FloatType) else "i32"
            fn = mathlib.declare(builder.module, f"llvm.nvvm.shfl.sync.{mode}.{sfx}", ty,
                                 [I32, ty, I32, I32])
            return builder.call(fn, [FULL_MASK, value, lane, SHFL_CLAMP])
        if isinstance(ty, ir.PointerType):
            as_int = builder.ptrtoint(value, ir.IntType(64))
            return builder.inttoptr(self._shuffle(builder, mode, as_int, lane), ty)
        bits = _bit_width(ty)
        if bits is None:
            raise CodegenError(f"cannot shuffle a value of LLVM type {ty}")
        int_ty = ir.IntType(bits)
        raw = value if isinstance(ty, ir.IntType) else builder.bitcast(value, int_ty)
        if bits <= 32:
            word = builder.zext(raw, I32) if bits < 32 else raw
            out = builder.trunc(self._shuffle(builder, mode, word, lane), int_ty) \
                if bits < 32 else self._shuffle(builder, mode, word, lane)
        else:
            words = []
            for k in range(bits // 32):
                part = builder.trunc(builder.lshr(raw, ir.Constant(int_ty, 32 * k)), I32)
                words.append(self._shuffle(builder, mode, part, lane))
            out = ir.Constant(int_ty, 0)
            for k, w in enumerate(words):
                out = builder.or_(out, builder.shl(builder.zext(w, int_ty),
                                                   ir.Constant(int_ty, 32 * k)))
        return out if isinstance(ty, ir.IntType) else builder.bitcast(out, ty)

    # -- masked memory access ----------------------------------------------------------------
    def masked_load(self, builder, ptr, ty, pred, align: int):
        """One predicated ``@p ld.global`` (no branch) where
        :mod:`naiad_nvidia.lowering.predicated_memory` covers the shape; the core's branch otherwise."""
        value = predicated_memory.predicated_load(builder, ptr, ty, pred, align)
        if value is None:
            value = super().masked_load(builder, ptr, ty, pred, align)
        return value

    def masked_store(self, builder, ptr, value, pred, align: int) -> None:
        """One predicated ``@p st.global`` where covered; the core's branch otherwise."""
        if not predicated_memory.predicated_store(builder, ptr, value, pred, align):
            super().masked_store(builder, ptr, value, pred, align)

    def cached_load(self, builder, ptr, ty, pred, align: int, cache_modifier: str):
        """``ld.global.ca/.cg/.cs/.cv`` (Triton's cache modifiers are PTX cache operators)."""
        return predicated_memory.predicated_load(builder, ptr, ty, pred, align, cache_modifier)

    def cached_store(self, builder, ptr, value, pred, align: int, cache_modifier: str) -> bool:
        """``st.global.wb/.cg/.cs/.wt``."""
        return predicated_memory.predicated_store(builder, ptr, value, pred, align,
                                                  cache_modifier)

    # -- backend ops ------------------------------------------------------------------------
    def op_lowering(self, name: str):
        """Lowerings of this backend's own GPU-IR ops (``nvidia.mma``, ``nvidia.mma_staged``,
        ``nvidia.wgmma_ring``: tensor cores; the cp.async and TMA rings; ``nvidia.fma_ring``:
        the FMA dot on a cp.async ring)."""
        from .lowering.async_copy_lowering import LOWERINGS as COPIES
        from .lowering.stream_lowering import LOWERINGS as STREAMS
        from .lowering.tma import LOWERINGS as TMA
        from .lowering.device_tensor_map import LOWERINGS as MAPS
        from .lowering.fma_ring_lowering import LOWERINGS as FMA
        from .lowering.wgmma import LOWERINGS as WGMMA
        from .lowering.mma_lowering import LOWERINGS
        from .lowering.mma_staged_lowering import lower_mma_ring, lower_mma_staged

        if name == "nvidia.mma_staged":
            return lower_mma_staged
        if name == "nvidia.mma_ring":
            return lower_mma_ring
        return (LOWERINGS.get(name) or COPIES.get(name) or WGMMA.get(name)
                or STREAMS.get(name) or TMA.get(name) or MAPS.get(name) or FMA.get(name))

    # -- math -------------------------------------------------------------------------------
    def printf(self, builder, fmt: str, args: Sequence) -> None:
        device_io.vprintf(builder, fmt, args)

    def assert_fail(self, builder, message: str) -> None:
        device_io.assert_fail(builder, message)

    def math(self, builder, name: str, args: Sequence, elem: str):
        """See :mod:`naiad_nvidia.lowering.mathlib` for the algorithms and their accuracy."""
        try:
            return mathlib.emit(builder, name, list(args), elem, prim=self._prim)
        except KeyError:
            raise CodegenError(
                f"math function {name!r} is not supported for element type {elem!r} on "
                f"nvidia:{self.arch}") from None

    def fast_math(self, builder, name: str, args: Sequence, elem: str):
        """Triton's div.full.f32 for ``/`` and ex2.approx for ``tl.exp`` (f32/f16; bounds in
        :func:`naiad_nvidia.lowering.mathlib.emit_fast` and docs/language.md)."""
        return mathlib.emit_fast(builder, name, list(args), elem, prim=self._prim)


def _bit_width(ty) -> int | None:
    if isinstance(ty, ir.IntType):
        return ty.width if ty.width in (1, 8, 16, 32, 64) else None
    if isinstance(ty, ir.DoubleType):
        return 64
    if isinstance(ty, ir.HalfType) or str(ty) == "bfloat":
        return 16
    return None
