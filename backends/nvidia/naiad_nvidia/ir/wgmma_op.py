"""GPU-IR ops of the Hopper warpgroup MMA path (placed by
:mod:`naiad_nvidia.passes.async_copy_pipeline`, lowered by :mod:`naiad_nvidia.lowering.wgmma`).

* ``nvidia.wgmma_ring(acc, slot) {kind, k, stage_bytes, pending}``: ``acc + A @ B`` where A
  and B are ring slot ``slot``'s tiles, stored as :class:`~naiad_nvidia.ir.wgmma_smem.WgmmaStage`
  says. Issues ``wgmma.fence``, one ``wgmma.mma_async`` per 64-row block and K step of 16,
  ``wgmma.commit_group`` and ``wgmma.wait_group pending``: with ``pending = 1`` the result is
  still being computed when the op "returns" and may only flow, untouched, into the next
  ``wgmma_ring`` or a ``nvidia.wgmma_wait``. With a third operand ``a`` (the multi-dot ring,
  :mod:`naiad_nvidia.passes.multi_dot_ring`) the slot holds only B, at byte ``b_offset``
  (``b_k_major``: stored K-major); A is ``a`` in registers (``a_regs``, wgmma's A fragment)
  or ``a``'s resident buffer (``nvidia.wgmma_resident``). With ``in_flight`` the op issues no
  wait at all: its result is read only through a later ``nvidia.wgmma_wait`` (or flows into the
  same dot of the next iteration), :mod:`naiad_nvidia.passes.wgmma_async`.
* ``nvidia.wgmma_staged(a, b, acc) {kind}``: the same product with A and B given as register
  tensors (any layout): its lowering stores them into its scratch buffer in wgmma's layout,
  fences, waits at a barrier and multiplies (``pending = 0``). Placed by
  :func:`naiad_nvidia.passes.async_copy_pipeline.place_staged_wgmma` for marked dots the ring does not
  pipeline.
* ``nvidia.wgmma_wait(acc) {pending}``: ``wgmma.wait_group pending``; returns ``acc``, now
  readable.
* ``nvidia.fence_async_shared``: ``fence.proxy.async.shared::cta`` -- shared memory written
  by ordinary (generic-proxy) stores, ``cp.async`` included, becomes visible to the async
  proxy that wgmma reads through.

The accumulator is an ``#nvidia_mma`` tensor with ``warpsPerCTA = [num_warps, 1]``: warp ``w``
of warpgroup ``g`` holds rows ``16 w`` .. of the 64-row block, in exactly the fragment order of
mma.sync's 16x8 C tile repeated along N -- which is the wgmma accumulator fragment of the PTX
ISA ("Matrix Fragments for wgmma.mma_async.m64nNk16", register ``d_i`` at row
``g + 8 ((i / 2) % 2)``, column ``8 (i / 4) + 2 t + i % 2``).
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op
from naiad.backend import register_verifier

from .mma_layout import NvidiaMmaLayout
from .wgmma_smem import KIND_K

WGMMA_RING_OP = "nvidia.wgmma_ring"
WGMMA_WAIT_OP = "nvidia.wgmma_wait"
WGMMA_STAGED_OP = "nvidia.wgmma_staged"
FENCE_ASYNC_OP = "nvidia.fence_async_shared"
#: attribute of an fp8 wgmma (the mma, ring and staged ops): the tensor cores sum this many K
#: elements from zero, then one add.f32 per register folds them into the accumulator
PROMOTE_ATTR = "max_num_imprecise_acc"
#: operand kinds of the ring (B N-major for 16-bit types; float8 B K-major, copied from a
#: K-contiguous B) and of the staged op (tf32, s8: B K-major, transposed from registers)
WGMMA_KINDS = ("f16", "bf16", "e4m3", "e5m2")
STAGED_WGMMA_KINDS = ("f16", "bf16", "tf32", "s8", "e4m3", "e5m2")
#: operand element type per kind
KIND_ELEMENT = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "s8": "i8", "e4m3": "f8e4nv",
                "e5m2": "f8e5"}

register_op(OpDef(WGMMA_RING_OP, (2, 3), 1, 0, ("kind", "k", "stage_bytes", "pending"),
                  frozenset(), "acc + A @ B by wgmma from ring slot `slot`: (acc, slot i32"
                  "[, a]); with `a`, only B is in the slot (at `b_offset`)"))
register_op(OpDef(WGMMA_STAGED_OP, 3, 1, 0, ("kind",), frozenset(),
                  "acc + a @ b by wgmma, a and b stored to shared memory first"))
register_op(OpDef(WGMMA_WAIT_OP, 1, 1, 0, ("pending",), frozenset(),
                  "wgmma.wait_group pending; returns its operand"))
register_op(OpDef(FENCE_ASYNC_OP, 0, 0, 0, (), frozenset(),
                  "fence.proxy.async.shared::cta"))


def warpgroup_layout_ok(layout) -> bool:
    """True when ``layout`` puts whole warpgroups on 64-row blocks (all warps along M)."""
    return (isinstance(layout, NvidiaMmaLayout) and layout.warps_per_cta[1] == 1
            and layout.warps_per_cta[0] % 4 == 0)


def _verify_ring(op, kinds=WGMMA_KINDS):
    acc = op.operands[0].type
    if op.results[0].type != acc:
        return f"result must have the accumulator's type {acc}"
    if not warpgroup_layout_ok(acc.layout):
        return f"accumulator layout {acc.layout} does not give each warpgroup 64 rows"
    want_acc = "i32" if op.attrs.get("kind") == "s8" else "f32"
    if acc.element.name != want_acc:
        return f"accumulator must be {want_acc}, got {acc.element}"
    kind = op.attrs.get("kind")
    if kind not in kinds:
        return f"kind must be one of {', '.join(kinds)}, got {kind!r}"
    m, n = acc.shape
    k_step = KIND_K[kind]
    if m % (16 * acc.layout.warps_per_cta[0]) or n % 16 or int(op.attrs["k"]) % k_step:
        return f"{m}x{n}x{op.attrs['k']} is not tiled by warpgroups and k{k_step} steps"
    return None


def _verify_staged(op):
    a, b, acc = (v.type for v in op.operands)
    kind = op.attrs.get("kind")
    want = KIND_ELEMENT.get(kind)
    if want is None or a.element.name != want or b.element.name != want:
        return (f"kind {kind!r} must be one of {', '.join(STAGED_WGMMA_KINDS)} and match the "
                f"operands ({a.element}, {b.element})")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or acc.shape != (m, n):
        return f"shapes do not match: {a.shape} @ {b.shape} -> {acc.shape}"
    return _verify_ring(_RingView(op, k), STAGED_WGMMA_KINDS)


class _RingView:
    """The checks shared with ``wgmma_ring``: accumulator, result, kind and tiling."""

    def __init__(self, op, k):
        self.operands = [op.operands[2]]
        self.results = op.results
        self.attrs = {"kind": op.attrs.get("kind"), "k": k}


def _verify_wait(op):
    if op.results[0].type != op.operands[0].type:
        return "result must have the operand's type"
    return None


register_verifier(WGMMA_RING_OP, _verify_ring)
register_verifier(WGMMA_WAIT_OP, _verify_wait)
register_verifier(WGMMA_STAGED_OP, _verify_staged)
