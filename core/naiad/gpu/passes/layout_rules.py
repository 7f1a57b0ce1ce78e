"""Small facts about values and layouts that the layout passes share."""
from __future__ import annotations

from ...errors import IRError
from ...ir.core import Operation, Value
from ...ir.ops import ELEMENTWISE, OPS
from ...ir.types import TensorType
from ..layouts import Layout
from ..linear_layout import LinearLayout

MEMORY_OPS = ("load", "store", "atomic_rmw", "atomic_cas", "atomic_poll")
#: ops whose result layout follows the operand's (data stays in registers)
FOLLOW_OPS = ("hint",)


def is_tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def layout_of(v: Value) -> Layout | None:
    return v.type.layout if isinstance(v.type, TensorType) else None


def set_layout(v: Value, layout: Layout) -> None:
    t = v.type
    v.type = TensorType(t.shape, t.element, layout)


def is_elementwise(op: Operation) -> bool:
    d = OPS.get(op.name)
    return d is not None and d.has(ELEMENTWISE)


def _axis_kind(vec, axis: int) -> str:
    """'zero', 'axis' (only the axis component), 'other' (no axis component) or 'mixed'."""
    on_axis = vec[axis] != 0
    off_axis = any(c for d, c in enumerate(vec) if d != axis)
    if on_axis and off_axis:
        return "mixed"
    if on_axis:
        return "axis"
    return "other" if off_axis else "zero"


def reducible(ll: LinearLayout, axis: int) -> bool:
    """Reductions need every basis to move along the axis only, or not along it at all."""
    return all(_axis_kind(v, axis) != "mixed" for vs in ll.bases.values() for v in vs)


def scannable(ll: LinearLayout, axis: int) -> bool:
    """Scans need reducible bases whose axis components are single bits."""
    if not reducible(ll, axis):
        return False
    return all(v[axis] & (v[axis] - 1) == 0 for vs in ll.bases.values() for v in vs)


def scan_ordered(ll: LinearLayout, axis: int) -> bool:
    """A scannable layout whose axis bits come from registers, then lanes, then warps (low to
    high): each step of the scan then moves data at most once per level."""
    if not scannable(ll, axis):
        return False
    from ..movement import scan_sources

    try:
        dims = [dim for dim, _ in scan_sources(ll, axis)]
    except IRError:
        return False
    rank = {"register": 0, "lane": 1, "warp": 2}
    return all(rank[a] <= rank[b] for a, b in zip(dims, dims[1:]))


def store_friendly(ll: LinearLayout, dim: int, vec: int) -> bool:
    """Each thread's leading registers hold ``vec`` consecutive elements along ``dim`` and
    neighbouring lanes hold the next ``vec``: stores from this layout are vectorized and
    coalesced as well as from the access's own coalesced layout."""
    regs = ll.bases.get("register", ())
    lanes = ll.bases.get("lane", ())
    k = vec.bit_length() - 1

    def unit(value):
        return tuple(value if i == dim else 0 for i in range(ll.rank))

    if len(regs) < k or any(regs[i] != unit(1 << i) for i in range(k)):
        return False
    if ll.out_shape[dim] <= vec:
        return True
    return bool(lanes) and lanes[0] == unit(vec)


def split_register(ll: LinearLayout) -> int | None:
    """Index of the register basis that alone selects the minor (size-2) dim, or None."""
    unit = tuple([0] * (ll.rank - 1) + [1])
    found = None
    for dim, vs in ll.bases.items():
        for j, v in enumerate(vs):
            if v[-1]:
                if dim != "register" or v != unit or found is not None:
                    return None
                found = j
    return found
