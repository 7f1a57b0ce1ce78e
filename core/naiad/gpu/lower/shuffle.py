"""Warp shuffles of any element type, built on the TargetInfo's 32-bit shuffles.

Narrower values are widened to i32 and truncated back; 64-bit values (i64, f64, pointers) move
as two i32 halves.
"""
from __future__ import annotations

from llvmlite import ir

from .context import KernelLowering
from .types import I32, I64


def _apply(kl: KernelLowering, v, move):
    b = kl.b
    t = v.type
    if t == I32:
        return move(v)
    if isinstance(t, ir.FloatType):
        return b.bitcast(move(b.bitcast(v, I32)), t)
    if isinstance(t, ir.PointerType):
        return b.inttoptr(_apply(kl, b.ptrtoint(v, I64), move), t)
    if isinstance(t, ir.DoubleType):
        return b.bitcast(_apply(kl, b.bitcast(v, I64), move), t)
    if isinstance(t, ir.HalfType):
        return b.bitcast(_apply(kl, b.bitcast(v, ir.IntType(16)), move), t)
    if isinstance(t, ir.IntType) and t.width < 32:
        return b.trunc(move(b.zext(v, I32)), t)
    if isinstance(t, ir.IntType) and t.width == 64:
        lo = move(b.trunc(v, I32))
        hi = move(b.trunc(b.lshr(v, ir.Constant(I64, 32)), I32))
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    raise TypeError(f"cannot shuffle a value of type {t}")


def shuffle_xor(kl: KernelLowering, v, lane_mask: int):
    """``v`` as held by lane ``lane ^ lane_mask``."""
    return _apply(kl, v, lambda x: kl.ti.shuffle_xor(kl.b, x, lane_mask))


def shuffle_idx(kl: KernelLowering, v, src_lane):
    """``v`` as held by lane ``src_lane`` (an i32 value)."""
    return _apply(kl, v, lambda x: kl.ti.shuffle_idx(kl.b, x, src_lane))
