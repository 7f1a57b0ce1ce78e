"""NVIDIA's policy for the core's ``accelerate_matmul`` (``naiad.gpu.matrix``): warp rules and
the performance remarks of dots on tensor cores.

The selection itself is the core's: :mod:`naiad_nvidia.ir.matrix_table` answers
``naiad_matrix_instructions`` with the wgmma and mma.sync entries and :func:`matrix_policy`
answers ``naiad_matrix_policy``. What that gives, per ``dot`` (everything else stays on the
core's exact FMA path):

* the ``tensor_cores`` option is on (default);
* rank 2; operands f16 or bf16 with an f32 accumulator (f16 operands may also accumulate in
  f16), or f32 operands with ``input_precision == "tf32"`` and an f32 accumulator (``"ieee"``
  stays exact; ``tf32x3`` / ``bf16x3`` / ``bf16x6`` arrive already split into tf32 / bf16 dots,
  :mod:`naiad.language.split_dot`); int8 with an int32 accumulator;
* ``nvidia.mma`` on mma.sync: K a multiple of the instruction's K (16; 8 for tf32, 32 for int8),
  M of 16 and N of 8; warps ``wm x wn = num_warps`` as :func:`choose_warps` splits them
  (replicated where the result is smaller than the warps' tile).

On sm_90 (option ``wgmma``, default on) a dot that warpgroups can compute -- f16/bf16 (or tf32)
operands, f32 accumulator (int8: i32), ``num_warps`` a multiple of 4, M a multiple of
``16 * num_warps``, N and K multiples of 16 (K of 8 for tf32, 32 for int8) -- gets all warps
along M (``warpsPerCTA = [num_warps, 1]``: each warpgroup owns 64-row blocks, the wgmma
accumulator layout) and the attribute ``wgmma``; the cp.async ring then computes it with
``wgmma.mma_async`` (:mod:`naiad_nvidia.passes.async_copy_pipeline`), or, where the ring does not
pipeline it, ``nvidia.wgmma_staged``. int8 off wgmma runs on mma.sync m16n8k32 (saturating int32
sums, as Triton's).
Every dot left on a slower path gets a performance remark (:mod:`naiad.remarks`) saying why
(:func:`explain`).

float8 (e4m3 / e5m2, both operands one format, f32 accumulator): the frontend widens float8
operands to f16 exactly (``cast``); where warpgroups can compute the dot (as above, K a multiple
of 32), the float8 entries (``from_widened``) take the float8 tiles themselves (kind ``e4m3`` /
``e5m2``, K steps of 32), at twice the f16 rate and half the shared memory. As with Triton's
default on Hopper (``max_num_imprecise_acc`` unset), the products are summed at the tensor
cores' float8 accumulation precision. Elsewhere the widened f16 dot runs on mma.sync.

``acc + dot(a, b, 0)`` (what ``acc += tl.dot(a, b)`` produces) becomes ``dot(a, b, acc)`` first
(the policy's ``fold_accumulating_add``), as Triton does, so the tensor cores accumulate in place
and a loop can keep its wgmma in flight. Operands are converted right before their mma
(``hoist_invariant_operands`` off): this plugin's staging and ring passes find them there.
"""
from __future__ import annotations

import functools

from naiad.backend import MatrixPolicy, accelerate_matmul  # noqa: F401 -- the pass, by its name
from naiad.ir import TensorType

from ..ir.mma_layout import K_PER_INSTRUCTION
from ..ir.matrix_table import _option
from ..ir.mma_op import KINDS
from ..ir.wgmma_smem import KIND_K

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


def matrix_policy(target, options) -> MatrixPolicy:
    """The answer to ``naiad_matrix_policy`` for an NVIDIA target."""
    return MatrixPolicy(fold_accumulating_add=True, hoist_invariant_operands=False,
                        explain=functools.partial(explain, getattr(target, "arch", None)
                                                  == "sm_90", options))


def explain(hopper: bool, options, dot, entry, num_warps: int) -> str | None:
    """The remark for ``dot`` computed on ``entry`` (None: on FMAs), or None when it is on the
    fastest path this target has."""
    ta, tb, tc = (v.type for v in dot.operands)
    precision = dot.attrs.get("input_precision")
    if entry is not None:
        if not hopper or dict(entry.op_attrs).get("wgmma"):
            return None
        (m, k), n = ta.shape, tb.shape[1]
        return "uses mma.sync instead of wgmma: " + wgmma_blocker(
            mma_kind(ta, tb, tc, precision), tc.element.name, m, n, k, num_warps, options)
    if not tensor_cores_enabled(options):
        return "uses FMA instead of tensor cores: option tensor_cores is off"
    if not all(isinstance(t, TensorType) for t in (ta, tb, tc)):
        return None
    kind = mma_kind(ta, tb, tc, precision)
    if kind is None:
        return "uses FMA instead of tensor cores: " + fma_reason(ta, tb, tc, precision)
    (m, k), n = ta.shape, tb.shape[1]
    return (f"uses FMA instead of tensor cores: {m}x{n}x{k} is not tiled exactly by "
            f"{num_warps} warps of 16x8x{K_PER_INSTRUCTION[KINDS[kind][1]]} mma.sync "
            f"instructions")
