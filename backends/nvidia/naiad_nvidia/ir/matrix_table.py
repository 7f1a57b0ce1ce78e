"""The NVIDIA matrix instruction table: mma.sync and wgmma as entries of the core's
``accelerate_matmul`` (``naiad.gpu.matrix``).

Entries, in order of preference, for one compile (:func:`instruction_table`):

* on sm_90 with the ``wgmma`` option (default on): warpgroup MMAs ``wgmma.mma_async.m64nNkK``
  -- float8 e4m3 / e5m2 (k32, ``from_widened``: they take the float8 tiles the frontend widened
  to f16), f16 and bf16 (k16), tf32 (k8, ``input_precision="tf32"``) with an f32 accumulator,
  int8 (k32) with an i32 one. Warp rule: all warps along M (``warpsPerCTA = [num_warps, 1]``),
  ``num_warps`` a multiple of 4 and M of ``16 * num_warps`` (64 rows per warpgroup);
* everywhere (sm_80 and later): ``mma.sync.m16n8k16`` f16 (f32 or f16 accumulator) and bf16,
  ``mma.sync.m16n8k8`` tf32, ``mma.sync.m16n8k32`` int8 (int32 accumulator, ``.satfinite``). Warp rule: :func:`naiad_nvidia.passes.accelerate_matmul.choose_warps`
  (the split must tile the result exactly).

The float8 wgmma entries carry the dot's ``max_num_imprecise_acc`` to their op (Triton's
promotion of the float8 sums into the f32 accumulator every n K elements).
The ``tensor_cores`` option off empties the table.

Every entry names the backend's own op ``nvidia.mma`` (attribute ``kind``, plus ``wgmma`` for
the warpgroup entries), which this plugin's passes stage, pipeline and lower, and the layout
``#nvidia_mma``. Its lane maps are read off that layout (one instruction tile, warps of one
warpgroup folded into the lanes for wgmma), so the table and the layout cannot disagree.
"""
from __future__ import annotations

from functools import lru_cache

from naiad.backend import LinearLayout, MatrixInstruction, register_matrix_instructions

from .mma_layout import K_PER_INSTRUCTION, NvidiaMmaLayout
from .mma_op import KINDS, MMA_OP
from .wgmma_op import PROMOTE_ATTR
from .wgmma_smem import KIND_K

#: the wgmma entries' kinds, preferred first, and their accumulator (K: ``KIND_K``)
WGMMA_KINDS = {"e4m3": "f32", "e5m2": "f32", "f16": "f32", "bf16": "f32", "tf32": "f32",
               "s8": "i32"}
#: (kind, accumulator) of the mma.sync entries
MMA_SYNC_KINDS = (("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("tf32", "f32"), ("s8", "i32"))
#: wgmma entries' N granule (the tile must be a multiple of it)
WGMMA_N = 16


def _lane_maps(warps: tuple[int, int], shape: tuple[int, int, int], k_width: int):
    """(A, B, C) maps of one instruction tile read off ``#nvidia_mma``: (register, lane) ->
    coordinates, the layout's warps (one warpgroup for wgmma) folded into the lanes."""
    layout = NvidiaMmaLayout(2, warps)
    m, n, k = shape

    def fold(ll, out):
        return LinearLayout({"register": list(ll.bases.get("register", ())),
                             "lane": list(ll.bases["lane"]) + list(ll.bases.get("warp", ()))},
                            out)

    return (fold(layout.dot_operand_linear(0, (m, k), k_width), (m, k)),
            fold(layout.dot_operand_linear(1, (k, n), k_width), (k, n)),
            fold(layout.to_linear((m, n)), (m, n)))


def _make_layout(warps) -> NvidiaMmaLayout:
    return NvidiaMmaLayout(2, warps)


def _wgmma_warps(m: int, n: int, num_warps: int):
    """All warps along M; each warpgroup owns 64-row blocks."""
    if num_warps % 4 or m % (16 * num_warps) or n % WGMMA_N:
        return None
    return num_warps, 1


def _mma_sync_warps(m: int, n: int, num_warps: int):
    from ..passes.accelerate_matmul import choose_warps

    return choose_warps(m, n, num_warps)


@lru_cache(maxsize=None)
def wgmma_entries() -> tuple[MatrixInstruction, ...]:
    out = []
    for kind, acc in WGMMA_KINDS.items():
        elem, k_width = KINDS[kind]
        shape = (64, WGMMA_N, KIND_K[kind])
        a, b, c = _lane_maps((4, 1), shape, k_width)
        out.append(MatrixInstruction(
            f"wgmma.mma_async.m64n{WGMMA_N}k{shape[2]}.{acc}.{kind}", shape, elem, elem, acc, 128,
            a, b, c, k_width=k_width, precisions=("tf32",) if kind == "tf32" else (),
            operands_from_shared=True, make_layout=_make_layout, op=MMA_OP,
            op_attrs=(("kind", kind), ("wgmma", True)), warps=_wgmma_warps,
            from_widened=("f16",) if kind in ("e4m3", "e5m2") else (),
            carried_attrs=(PROMOTE_ATTR,) if kind in ("e4m3", "e5m2") else ()))
    return tuple(out)


@lru_cache(maxsize=None)
def mma_sync_entries() -> tuple[MatrixInstruction, ...]:
    out = []
    for kind, acc in MMA_SYNC_KINDS:
        elem, k_width = KINDS[kind]
        shape = (16, 8, K_PER_INSTRUCTION[k_width])
        a, b, c = _lane_maps((1, 1), shape, k_width)
        out.append(MatrixInstruction(
            f"mma.sync.m16n8k{shape[2]}.{acc}.{kind}", shape, elem, elem, acc, 32, a, b, c,
            k_width=k_width, precisions=("tf32",) if kind == "tf32" else (),
            make_layout=_make_layout, op=MMA_OP, op_attrs=(("kind", kind),),
            warps=_mma_sync_warps))
    return tuple(out)


def _option(options, name: str, default):
    if options is None:
        return default
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def instruction_table(target, options) -> list[MatrixInstruction]:
    """The entries usable for one compile, in order of preference (module doc)."""
    if not _option(options, "tensor_cores", True):
        return []
    hopper = getattr(target, "arch", None) == "sm_90"
    table = list(wgmma_entries()) if hopper and _option(options, "wgmma", True) else []
    table += mma_sync_entries()
    register_matrix_instructions(table)
    return table
