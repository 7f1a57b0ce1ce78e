"""GPU-IR pass: compute eligible ``dot`` ops on tensor cores (``nvidia.mma``).

Runs *before* the core's layout assignment, on tile IR: an eligible ``dot(a, b, acc)`` becomes
``nvidia.mma(convert_layout(a), convert_layout(b), convert_layout(acc))`` whose operand and
result types already carry the fragment layouts. The core's assignment keeps layouts fixed
before it and makes them wishes, so a loop-carried accumulator is carried in the ``#nvidia_mma``
layout (its conversion then folds away) while loaded A/B tiles keep their coalesced layouts and
move into the fragments through shared memory.

Eligible (everything else stays on the core's exact FMA path):

* the ``tensor_cores`` option is on (default);
* rank 2; operands f16 or bf16 with an f32 accumulator (f16 operands may also accumulate in
  f16), or f32 operands with ``input_precision == "tf32"`` and an f32 accumulator (``"ieee"``
  stays exact; ``tf32x3`` / ``bf16x3`` / ``bf16x6`` arrive already split into tf32 / bf16 dots,
  :mod:`naiad.language.split_dot`);
* K a multiple of the instruction's K (16; 8 for tf32), M of 16 and N of 8; warps
  ``wm x wn = num_warps`` as :func:`choose_warps` splits them (replicated where the result is
  smaller than the warps' tile).

On sm_90 (option ``wgmma``, default on) a dot that warpgroups can compute -- f16/bf16 (or tf32)
operands, f32 accumulator (int8: i32), ``num_warps`` a multiple of 4, M a multiple of
``16 * num_warps``, N and K multiples of 16 (K of 8 for tf32, 32 for int8) -- gets all warps
along M (``warpsPerCTA = [num_warps, 1]``: each warpgroup owns 64-row blocks, the wgmma
accumulator layout) and the attribute ``wgmma``; the cp.async ring then computes it with
``wgmma.mma_async`` (:mod:`naiad_nvidia.passes.async_copy_pipeline`), or, where the ring does not
pipeline it, ``nvidia.wgmma_staged``. int8 off wgmma runs on mma.sync m16n8k32 (saturating int32 sums, as Triton's).
Every dot left on a slower path gets a performance remark (:mod:`naiad.remarks`) saying why.

float8 (e4m3 / e5m2, both operands one format, f32 accumulator): the frontend widens float8
operands to f16 exactly (``cast``); where warpgroups can compute the dot (as above, K a multiple
of 32), the casts are skipped and wgmma multiplies the float8 tiles themselves (kind ``e4m3`` /
``e5m2``, K steps of 32), at twice the f16 rate and half the shared memory. As with Triton's
default on Hopper (``max_num_imprecise_acc`` unset), the products are summed at the tensor
cores' float8 accumulation precision; with ``max_num_imprecise_acc = n`` (> 0) they are summed
from zero over each n K elements and then added to the f32 accumulator with an ``add.f32``
(Triton's promotion on Hopper; attribute ``max_num_imprecise_acc`` on the mma, the ring and
the staged wgmma). Elsewhere the widened f16 dot runs on mma.sync (exact f32 sums).

``acc + dot(a, b, 0)`` (what ``acc += tl.dot(a, b)`` produces) becomes ``dot(a, b, acc)`` first,
as Triton does, so the tensor cores accumulate in place and a loop can keep its wgmma in flight
(the f32 sums are the same products added in a different order).
"""
from __future__ import annotations

from naiad.backend import DotOperandLayout, remarks
from naiad.ir import Module, Operation, TensorType

from ..ir.mma_layout import K_PER_INSTRUCTION, NvidiaMmaLayout
from ..ir.mma_op import KINDS, MMA_OP
from ..ir.wgmma_smem import KIND_K
from ..ir.wgmma_op import PROMOTE_ATTR

#: float8 element types and their wgmma kind
FLOAT8_KINDS = {"f8e4nv": "e4m3", "f8e5": "e5m2"}


def mma_kind(a: TensorType, b: TensorType, acc: TensorType, precision) -> str | None:
    """``f16``/``bf16``/``tf32`` (``s8``: int8 -> int32) when tensor cores can
    compute this dot exactly as asked."""
    ea, eb, ec = a.element.name, b.element.name, acc.element.name
    if ea != eb or len(a.shape) != 2:
        return None
    if ea == "i8" and ec == "i32":
        return "s8"
    if ea in ("f16", "bf16") and (ec == "f32" or (ec == "f16" and ea == "f16")):
        return ea
    if ea == "f32" and ec == "f32" and precision == "tf32":
        return "tf32"
    return None


def choose_warps(m: int, n: int, num_warps: int) -> tuple[int, int] | None:
    """(wm, wn) with ``wm * wn == num_warps`` for an MxN result of 16x8 tiles, or None.

    Prefers splits where every warp owns distinct tiles (``M % 16 wm == 0``, ``N % 8 wn == 0``);
    among those, the fewest operand elements per warp (``M / wm + N / wn``; ties: more warps
    along M). A result smaller than the warps' tile (16x16 with 4 warps) still runs on tensor
    cores, as Triton's does: the surplus warps replicate (the layout broadcasts them, so they
    compute the same tiles), and the split maximises the warps doing distinct work."""
    if m % 16 or n % 8:
        return None
    best = None
    wm = num_warps
    while wm >= 1:
        wn = num_warps // wm
        um, un = min(wm, m // 16), min(wn, n // 8)      # warps with distinct rows / columns
        key = (-um * un, m // um + n // un)
        if best is None or key < best[0]:
            best = (key, (wm, wn))
        wm //= 2
    return best[1]


def _option(options, name: str, default):
    if options is None:
        return default
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def tensor_cores_enabled(options) -> bool:
    return bool(_option(options, "tensor_cores", True))


def fma_reason(a: TensorType, b: TensorType, acc: TensorType, precision) -> str:
    """Why :func:`mma_kind` refused a dot."""
    ea, eb, ec = a.element.name, b.element.name, acc.element.name
    if ea != eb:
        return f"its operands have different types ({ea} and {eb})"
    if len(a.shape) != 2:
        return "it is not rank 2"
    if ea == "f32":
        return (f"input_precision={precision!r} asks for exact f32 products"
                if precision != "tf32" else f"a {ec} accumulator is not supported")
    if ea in ("f16", "bf16"):
        return f"a {ec} accumulator is not supported with {ea} operands"
    return f"{ea} operands are not supported on tensor cores yet"


def wgmma_blocker(kind: str, acc: str, m: int, n: int, k: int, num_warps: int,
                  options) -> str | None:
    """Why warpgroups cannot compute this tensor-core dot on sm_90, or None."""
    if not bool(_option(options, "wgmma", True)):
        return "option wgmma is off"
    if kind not in KIND_K:
        return f"{kind} operands are not implemented on the wgmma path yet"
    if acc != ("i32" if kind == "s8" else "f32"):
        return f"an {acc} accumulator is not implemented on the wgmma path yet"
    if num_warps % 4:
        return f"num_warps={num_warps} is not a multiple of 4 (one warpgroup)"
    if m % (16 * num_warps):
        return (f"M={m} is not a multiple of {16 * num_warps} (64 rows per warpgroup, "
                f"{num_warps // 4} warpgroup(s))")
    k_step = KIND_K[kind]
    if n % 16 or k % k_step:
        return f"N={n} must be a multiple of 16 and K={k} of {k_step}"
    return None


def accelerate_matmul(module: Module, ctx) -> bool:
    """Rewrite eligible dots into ``nvidia.mma``. Runs before layout assignment, so a loop that
    carries the accumulator is typed consistently only once assign_layouts has run."""
    if not tensor_cores_enabled(getattr(ctx, "options", None)):
        for fn in module.functions.values():
            for op in fn.walk():
                if op.name == "dot":
                    remarks.remark(module, op.loc, "dot", "uses FMA instead of tensor cores: "
                                   "option tensor_cores is off")
        return False
    target = getattr(ctx, "target", None)
    hopper = getattr(target, "arch", None) == "sm_90"
    options = getattr(ctx, "options", None)
    changed = False
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        for op in list(fn.walk()):
            if op.name == "dot":
                changed |= fold_accumulating_add(op)
                changed |= _rewrite(op, ctx.num_warps, module, hopper, options)
    return changed


accelerate_matmul.leaves_partial_ir = True  # NAIAD_DEBUG verifies after layout assignment


def _is_zero(v) -> bool:
    d = v.defining_op
    return (d is not None and d.name == "constant" and not isinstance(d.attrs.get("value"), bool)
            and d.attrs.get("value") == 0)


def _available_at(v, op: Operation) -> bool:
    """``v`` is defined before ``op`` in its block or in a block enclosing it."""
    anchor = op
    while isinstance(anchor, Operation):
        block = anchor.parent
        if v.is_block_arg and v.owner is block:
            return True
        d = v.defining_op
        if d is not None and d.parent is block:
            return block.ops.index(d) < block.ops.index(anchor)
        region = getattr(block, "parent", None)
        anchor = getattr(region, "parent", None)
    return False


def fold_accumulating_add(dot: Operation) -> bool:
    """``add(x, dot(a, b, 0))`` -> ``dot(a, b, x)`` when the dot's only user is that add."""
    if not _is_zero(dot.operands[2]) or len(dot.results[0].uses) != 1:
        return False
    add, idx = dot.results[0].uses[0]
    if add.name != "add" or add.parent is not dot.parent:
        return False
    other = add.operands[1 - idx]
    if other.type != dot.results[0].type or not _available_at(other, dot):
        return False
    dot.set_operand(2, other)
    dot.results[0].name_hint = add.results[0].name_hint
    add.results[0].replace_all_uses_with(dot.results[0])
    add.erase()
    return True


def float8_sources(op: Operation, num_warps: int, options) -> tuple | None:
    """(a8, b8, kind) when ``op``'s operands are float8 tiles widened to f16 by ``cast`` (one
    format for both) and warpgroups can multiply them as float8; else None."""
    a, b, acc = op.operands
    casts = [v.defining_op for v in (a, b)]
    if any(c is None or c.name != "cast" for c in casts) or acc.type.element.name != "f32":
        return None
    a8, b8 = (c.operands[0] for c in casts)
    kind = FLOAT8_KINDS.get(a8.type.element.name)
    if kind is None or b8.type.element.name != a8.type.element.name:
        return None
    (m, k), n = a.type.shape, b.type.shape[1]
    if wgmma_blocker(kind, "f32", m, n, k, num_warps, options) is not None:
        return None
    return a8, b8, kind


def _rewrite(op: Operation, num_warps: int, module=None, hopper: bool = False,
             options=None) -> bool:
    a, b, acc = op.operands
    ta, tb, tc = a.type, b.type, acc.type
    if not all(isinstance(t, TensorType) for t in (ta, tb, tc)):
        return False
    precision = op.attrs.get("input_precision")
    kind = mma_kind(ta, tb, tc, precision)
    fp8 = float8_sources(op, num_warps, options) if hopper and kind == "f16" else None
    if fp8 is not None:
        a, b, kind = fp8
        ta, tb = a.type, b.type
    if kind is None:
        _remark(module, op, "uses FMA instead of tensor cores: "
                + fma_reason(ta, tb, tc, precision))
        return False
    k_width = KINDS[kind][1]
    (m, k), n = ta.shape, tb.shape[1]
    blocker = wgmma_blocker(kind, tc.element.name, m, n, k, num_warps, options) \
        if hopper else "not sm_90"
    warps = (num_warps, 1) if blocker is None else choose_warps(m, n, num_warps)
    if warps is None or k % K_PER_INSTRUCTION[k_width]:
        _remark(module, op, f"uses FMA instead of tensor cores: {m}x{n}x{k} is not tiled "
                f"exactly by {num_warps} warps of {16}x{8}x{K_PER_INSTRUCTION[k_width]} "
                f"mma.sync instructions")
        return False
    if hopper and blocker is not None:
        _remark(module, op, f"uses mma.sync instead of wgmma: {blocker}")
    layout = NvidiaMmaLayout(2, warps)
    block = op.parent
    operands = []
    for i, (v, want) in enumerate(((a, DotOperandLayout(0, layout, k_width)),
                                   (b, DotOperandLayout(1, layout, k_width)), (acc, layout))):
        t = v.type
        cvt = Operation("convert_layout", [v], [TensorType(t.shape, t.element, want)], loc=op.loc)
        block.insert_before(op, cvt)
        operands.append(cvt.result)
    attrs = {"kind": kind}
    if hopper and blocker is None:
        attrs["wgmma"] = True
    if fp8 is not None and op.attrs.get("max_num_imprecise_acc"):
        attrs[PROMOTE_ATTR] = int(op.attrs["max_num_imprecise_acc"])
    mma = Operation(MMA_OP, operands, [TensorType(tc.shape, tc.element, layout)], attrs,
                    loc=op.loc)
    block.insert_before(op, mma)
    mma.result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(mma.result)
    widened = dict.fromkeys(v.defining_op for v in op.operands[:2]) if fp8 is not None else {}
    op.erase()
    for cast in widened:  # the f16 copies of float8 tiles, now unused
        if not cast.results[0].uses:
            cast.erase()
    return True


def _remark(module, op: Operation, message: str) -> None:
    if module is not None:
        remarks.remark(module, op.loc, "dot", message)
