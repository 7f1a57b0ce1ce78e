"""Cross-lane moves of 32-bit words for AMD waves: DPP, ``ds_swizzle`` and ``permlanex16`` where a
fixed XOR pattern allows, ``ds_bpermute`` only for arbitrary lanes.

Why: ``ds_bpermute`` goes through the LDS unit (an address computation, the LDS queue and an
``s_waitcnt``) for every step of a butterfly reduction. DPP moves are plain VALU modifiers (LLVM
folds them into the combining instruction, ``v_add_f32_dpp``: every pattern below reads a valid
lane of the same row, so the moves set ``bound_ctrl``, which the combiner requires with an
undefined ``old``), ``ds_swizzle`` needs no address, and
``v_permlanex16`` (GFX10+) swaps the two 16-lane rows of a 32-lane half. What each XOR mask
becomes (:func:`xor_plan`):

=========  ===================================  =====================================
mask       GFX9 (CDNA, wave64)                  GFX10+ (RDNA, wave32)
=========  ===================================  =====================================
1, 2, 3    DPP ``quad_perm``                    DPP ``quad_perm``
4          DPP ``quad_perm [3,2,1,0]`` then     DPP ``row_xmask:4``
           ``row_half_mirror`` (i ^ 3, 7 - i)
8          DPP ``row_ror:8``                    DPP ``row_xmask:8``
other < 16 ``ds_swizzle`` (bit mode, xor mask)  DPP ``row_xmask``
16         ``ds_swizzle`` xor 16                ``v_permlanex16`` (identity select)
other < 32 ``ds_swizzle``                       ``ds_swizzle``
32         ``ds_bpermute``                      --
=========  ===================================  =====================================

Every step is a list of ``(kind, control)`` moves; :func:`model` executes them on a list of lane
values exactly as the ISA documents the instruction, so the encodings are tested on the host
(``backends/amd/tests/test_amd_cross_lane.py``) without a GPU.
"""
from __future__ import annotations

from llvmlite import ir

from .irutil import I1, I32, call_intrinsic

# DPP control words (the ``dpp_ctrl`` operand of llvm.amdgcn.update.dpp).
ROW_ROR = 0x120          # + n: rotate right by n within each row of 16 lanes
ROW_MIRROR = 0x140       # lane i of a row reads lane 15 - i
ROW_HALF_MIRROR = 0x141  # lane i of each 8-lane half-row reads lane 7 - i
ROW_XMASK = 0x160        # + m (GFX10+): lane i of a row reads lane i ^ m

#: the identity select of v_permlanex16: lane i reads lane i of the other row.
PERMLANEX16_SEL = (0x76543210, 0xFEDCBA98)


def quad_perm(*lanes: int) -> int:
    """The DPP control of ``quad_perm:[a,b,c,d]``: lane i of each quad reads quad lane lanes[i]."""
    return sum((src & 3) << (2 * i) for i, src in enumerate(lanes))


def swizzle_xor(mask: int) -> int:
    """The ``ds_swizzle`` offset of bit mode with and-mask 0x1F, or-mask 0 and ``mask`` as xor-mask."""
    return 0x1F | (mask & 0x1F) << 10


def xor_plan(mask: int, wave_size: int, gfx10_plus: bool) -> list[tuple[str, int]]:
    """The moves that give each lane the value of lane ``lane ^ mask``."""
    if not 0 < mask < wave_size:
        raise ValueError(f"xor mask {mask} outside a wave of {wave_size}")
    if mask < 4:
        return [("dpp", quad_perm(*(i ^ mask for i in range(4))))]
    if gfx10_plus and mask < 16:
        return [("dpp", ROW_XMASK + mask)]
    if mask == 4:
        return [("dpp", quad_perm(3, 2, 1, 0)), ("dpp", ROW_HALF_MIRROR)]
    if mask == 8:
        return [("dpp", ROW_ROR + 8)]
    if gfx10_plus and mask == 16:
        return [("permlanex16", 0)]
    if mask < 32:
        return [("swizzle", swizzle_xor(mask))]
    return [("bpermute", mask)]


def emit(builder: ir.IRBuilder, word, plan, lane_id) -> ir.Value:
    """Apply ``plan`` to the i32 ``word``; ``lane_id()`` emits the lane index (bpermute only)."""
    for kind, ctrl in plan:
        if kind == "dpp":
            word = call_intrinsic(builder, "llvm.amdgcn.update.dpp.i32", I32, [
                ir.Constant(I32, ir.Undefined), word, ir.Constant(I32, ctrl),
                ir.Constant(I32, 0xF), ir.Constant(I32, 0xF), ir.Constant(I1, 1)])
        elif kind == "swizzle":
            word = call_intrinsic(builder, "llvm.amdgcn.ds.swizzle", I32, [word, ir.Constant(I32, ctrl)])
        elif kind == "permlanex16":
            lo, hi = PERMLANEX16_SEL
            word = call_intrinsic(builder, "llvm.amdgcn.permlanex16.i32", I32, [
                ir.Constant(I32, ir.Undefined), word, ir.Constant(I32, lo), ir.Constant(I32, hi),
                ir.Constant(I1, 0), ir.Constant(I1, 0)])
        elif kind == "bpermute":
            src = builder.xor(lane_id(), ir.Constant(I32, ctrl))
            word = call_intrinsic(builder, "llvm.amdgcn.ds.bpermute", I32,
                                  [builder.shl(src, ir.Constant(I32, 2)), word])
        else:
            raise ValueError(f"unknown cross-lane move {kind!r}")
    return word


def model(plan, values: list) -> list:
    """Execute ``plan`` on one wave's ``values`` (lane i holds values[i]) as the ISA defines each move."""
    n = len(values)
    for kind, ctrl in plan:
        if kind == "dpp":
            values = [values[_dpp_source(ctrl, i)] for i in range(n)]
        elif kind == "swizzle":
            assert not ctrl & 0x8000, "only bit mode is modelled"
            and_m, or_m, xor_m = ctrl & 0x1F, (ctrl >> 5) & 0x1F, (ctrl >> 10) & 0x1F
            values = [values[(i & ~31) | (((i & and_m) | or_m) ^ xor_m)] for i in range(n)]
        elif kind == "permlanex16":
            lo, hi = PERMLANEX16_SEL
            sel = [(lo >> (4 * j)) & 0xF for j in range(8)] + [(hi >> (4 * j)) & 0xF for j in range(8)]
            values = [values[((i & ~31) | ((i & 16) ^ 16)) + sel[i & 15]] for i in range(n)]
        elif kind == "bpermute":
            values = [values[i ^ ctrl] for i in range(n)]
        else:
            raise ValueError(kind)
    return values


def _dpp_source(ctrl: int, i: int) -> int:
    row, r = i & ~15, i & 15
    if ctrl <= 0xFF:
        return (i & ~3) | ((ctrl >> (2 * (i & 3))) & 3)
    if ROW_ROR < ctrl <= ROW_ROR + 15:
        return row | ((r - (ctrl - ROW_ROR)) & 15)
    if ctrl == ROW_MIRROR:
        return row | (15 - r)
    if ctrl == ROW_HALF_MIRROR:
        return row | (r & 8) | (7 - (r & 7))
    if ROW_XMASK <= ctrl <= ROW_XMASK + 15:
        return row | (r ^ (ctrl - ROW_XMASK))
    raise ValueError(f"DPP control {ctrl:#x} is not modelled")
