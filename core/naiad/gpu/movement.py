"""Where data has to move, and how much shared memory that takes.

Shape ops and layout conversions are all *gathers*: every element a thread must hold in the
result comes from some element of the source. Described as a *view* (the result's linear layout
with its coordinates mapped back into the source tensor), a gather is a pure register relabelling
when each thread already holds what it needs -- the view's lane and warp bases equal the
source's -- and goes through shared memory otherwise.

The allocation pass and the lowering both ask here, so the scratch sizes the pass reserves are
exactly what the lowering uses.
"""
from __future__ import annotations

from ..errors import IRError
from ..ir.core import Operation
from ..ir.types import PointerType, ScalarType, TensorType
from .layouts import linear_of
from .linear_layout import LinearLayout, log2


def smem_itemsize(elem) -> int:
    """Bytes an element takes in shared memory (i1 as a byte, pointers as 8 bytes)."""
    if isinstance(elem, PointerType):
        return 8
    if isinstance(elem, ScalarType):
        return max(elem.bitwidth // 8, 1)
    raise IRError(f"no shared-memory size for {elem}")


def relabel_map(src: LinearLayout, view: LinearLayout) -> list[int] | None:
    """For each register of ``view``, the source register holding the same element in the same
    thread; None when some thread would need another thread's data."""
    for dim in ("lane", "warp"):
        if list(src.bases.get(dim, ())) != list(view.bases.get(dim, ())):
            return None
    index: dict[int, int] = {}
    for r, flat in enumerate(src.flat_values("register")):
        index.setdefault(flat, r)
    out = []
    for flat in view.flat_values("register"):
        src_r = index.get(flat)
        if src_r is None:
            return None
        out.append(src_r)
    return out


# -- gathers in passes ---------------------------------------------------------------------------
#: op attribute set by the shared-memory allocation: a gather through shared memory runs in
#: ``2 ** n`` passes over slices of its tile (``n`` bits of :func:`gather_slice_bits`), each
#: through a buffer ``2 ** n`` times smaller than the whole tile
SLICE_ATTR = "scratch_slices"

#: the ops lowered as gathers (naiad.gpu.lower.shape), the only ones that run in passes
GATHER_OPS = ("convert_layout", "broadcast", "expand_dims", "trans", "reshape")


def slice_bits(src: LinearLayout, view: LinearLayout, size: int) -> list[int]:
    """Row-major index bits (highest first) along which a gather from ``src`` to ``view``
    through shared memory can run in passes: no lane or warp basis of either side sets them
    (so which slice an element is in depends on its register alone, in both layouts), and
    no vector of either side spans them (a vector stays inside one slice)."""
    from .lower.shared import run_length

    n = src.numel
    if n & (n - 1):
        return []
    threads = 0
    for ll in (src, view):
        for dim in ("lane", "warp"):
            for v in ll.flat_bases(dim):
                threads |= v
    low = log2(max(run_length(src, size), run_length(view, size)))
    return [b for b in reversed(range(low, log2(n))) if not threads >> b & 1]


def slice_of(flat: int, bits: list[int]) -> tuple[int, ...]:
    """Which slice a row-major index is in: its values of ``bits``."""
    return tuple(flat >> b & 1 for b in bits)


def without_bits(ll: LinearLayout, bits: list[int]) -> LinearLayout:
    """``ll`` as a map to positions inside one slice: the index with ``bits`` deleted (a
    one-dimensional layout over ``numel >> len(bits)`` positions; deleting bits is linear)."""
    def squeeze(v: int) -> int:
        for b in sorted(bits, reverse=True):
            v = (v & ((1 << b) - 1)) | (v >> (b + 1) << b)
        return v

    return LinearLayout({d: [(squeeze(v),) for v in ll.flat_bases(d)] for d in ll.bases},
                        (ll.numel >> len(bits),))


def gather_slice_bits(op: Operation) -> list[int]:
    """:func:`slice_bits` of a gather op that goes through shared memory ([] for any other
    op, and for gathers that stay in registers)."""
    if op.name not in GATHER_OPS:
        return []
    [(_, src, view)] = gather_views(op)
    if relabel_map(src, view) is not None:
        return []
    return slice_bits(src, view, smem_itemsize(op.results[0].type.scalar))


# -- views of the shape ops --------------------------------------------------------------------

def _zero_dims(dims):
    return lambda v: tuple(0 if d in dims else c for d, c in enumerate(v))


def gather_views(op: Operation) -> list[tuple[int, LinearLayout, LinearLayout]]:
    """For a data-movement op: (operand index, source layout, view) per result (in order).

    The view is the result's linear layout with coordinates mapped into the operand's tensor.
    """
    res = op.results[0].type
    name = op.name
    if name in ("convert_layout", "hint"):
        src = op.operands[0].type
        return [(0, linear_of(src.layout, src.shape), linear_of(res.layout, res.shape))]
    if name == "broadcast":
        src = op.operands[0].type
        grown = {d for d, (a, b) in enumerate(zip(src.shape, res.shape)) if a != b}
        view = linear_of(res.layout, res.shape).map_coords(_zero_dims(grown), src.shape)
        return [(0, linear_of(src.layout, src.shape), view)]
    if name == "expand_dims":
        src = op.operands[0].type
        view = linear_of(res.layout, res.shape).drop_out_dim(op.attrs["axis"])
        return [(0, linear_of(src.layout, src.shape), view)]
    if name == "trans":
        src = op.operands[0].type
        order = list(op.attrs["order"])
        inverse = [order.index(d) for d in range(len(order))]
        view = linear_of(res.layout, res.shape).permute(inverse)
        return [(0, linear_of(src.layout, src.shape), view)]
    if name == "reshape":
        src = op.operands[0].type
        view = linear_of(res.layout, res.shape).reshape(src.shape)
        return [(0, linear_of(src.layout, src.shape), view)]
    if name == "split":
        src = op.operands[0].type
        out = []
        for r in op.results:
            rl = linear_of(r.type.layout, r.type.shape)
            # result k's element c is source element (c, k): the view maps c to (c, 0) and
            # the lowering adds k (the lowest bit of the source's row-major index)
            view = LinearLayout(rl.insert_out_dim(rl.rank).bases, src.shape)
            out.append((0, linear_of(src.layout, src.shape), view))
        return out
    raise IRError(f"{name} is not a data-movement op")


def split_relabel(src: LinearLayout, view: LinearLayout, k: int) -> list[int] | None:
    """Registers of split result ``k``: source registers holding (c, k)."""
    for dim in ("lane", "warp"):
        if list(src.bases.get(dim, ())) != list(view.bases.get(dim, ())):
            return None
    index = {}
    for r, flat in enumerate(src.flat_values("register")):
        index.setdefault(flat, r)
    out = []
    for flat in view.flat_values("register"):
        src_r = index.get(flat ^ k)
        if src_r is None:
            return None
        out.append(src_r)
    return out


def join_relabel(a: LinearLayout, res: LinearLayout) -> list[tuple[int, int]] | None:
    """For each result register, (input 0/1, its register) holding the element; None when a
    thread would need another thread's data."""
    for dim in ("lane", "warp"):
        mine = [v[:-1] for v in res.bases.get(dim, ())]
        if any(v[-1] for v in res.bases.get(dim, ())) or mine != list(a.bases.get(dim, ())):
            return None
    index = {}
    for r in range(a.in_size("register")):
        index.setdefault(a.apply_flat(register=r), r)
    out = []
    for r in range(res.in_size("register")):
        c = res.unflatten(res.apply_flat(register=r))
        src_r = index.get(a.flatten(c[:-1]))
        if src_r is None:
            return None
        out.append((c[-1], src_r))
    return out


# -- reductions and scans ----------------------------------------------------------------------

def reduce_warp_bits(ll: LinearLayout, axis: int) -> list[int]:
    """Warp bits whose bases move along ``axis`` independently of earlier bases: partial
    results of those warps must be combined through shared memory."""
    from .linear_layout import Echelon

    ech = Echelon()
    for dim in ("register", "lane"):
        for v in ll.bases.get(dim, ()):
            if v[axis] and not any(c for d, c in enumerate(v) if d != axis):
                ech.add(v[axis])
    bits = []
    for i, v in enumerate(ll.bases.get("warp", ())):
        if v[axis] and not any(c for d, c in enumerate(v) if d != axis) and ech.add(v[axis]):
            bits.append(i)
    return bits


def scan_sources(ll: LinearLayout, axis: int) -> list[tuple[str, int]]:
    """For each bit of the axis coordinate (low first), the (input dim, bit) that sets it."""
    n = log2(ll.out_shape[axis])
    sources: list[tuple[str, int] | None] = [None] * n
    for dim in ("register", "lane", "warp"):
        for i, v in enumerate(ll.bases.get(dim, ())):
            if v[axis]:
                j = log2(v[axis])
                if sources[j] is not None:
                    raise IRError(f"scan layout has two sources for axis bit {j}")
                sources[j] = (dim, i)
    if any(s is None for s in sources):
        raise IRError("scan layout does not cover the axis")
    return sources  # type: ignore[return-value]


def _region_itemsizes(op: Operation) -> list[int]:
    return [smem_itemsize(v.type.scalar) for v in op.operands]


def _aligned(n: int, a: int = 16) -> int:
    return (n + a - 1) // a * a


def reduce_scratch_layout(op: Operation) -> tuple[list[int], int]:
    """(byte offset of each operand's partials, total bytes) for a cross-warp reduction."""
    t = op.operands[0].type
    ll = linear_of(t.layout, t.shape)
    axis = op.attrs["axis"]
    parts = 1 << len(reduce_warp_bits(ll, axis))
    if parts == 1:
        return [], 0
    out_numel = t.numel // t.shape[axis]
    offsets, total = [], 0
    for size in _region_itemsizes(op):
        offsets.append(total)
        total = _aligned(total + out_numel * parts * size)
    return offsets, total


def scan_scratch_layout(op: Operation) -> tuple[list[int], int]:
    t = op.operands[0].type
    ll = linear_of(t.layout, t.shape)
    if not any(dim == "warp" for dim, _ in scan_sources(ll, op.attrs["axis"])):
        return [], 0
    offsets, total = [], 0
    for size in _region_itemsizes(op):
        offsets.append(total)
        total = _aligned(total + t.numel * size)
    return offsets, total


def dot_operand_views(op: Operation) -> list[tuple[LinearLayout, LinearLayout]]:
    """(operand's layout, the dot_operand layout the FMA loop reads) for A and B."""
    from .layouts import DotOperandLayout

    acc = op.operands[2].type
    out = []
    for i in (0, 1):
        t = op.operands[i].type
        want = DotOperandLayout(i, acc.layout).to_linear(t.shape)
        out.append((linear_of(t.layout, t.shape), want))
    return out


def dot_scratch_layout(op: Operation) -> tuple[list[int | None], int]:
    """Byte offset of each operand that the dot reads through shared memory (None when its
    registers already hold what the FMA loop needs), and the total."""
    offsets: list[int | None] = []
    total = 0
    for i, (src, want) in enumerate(dot_operand_views(op)):
        if relabel_map(src, want) is not None:
            offsets.append(None)
            continue
        offsets.append(total)
        t = op.operands[i].type
        total = _aligned(total + t.numel * smem_itemsize(t.scalar))
    return offsets, total


def atomic_needs_broadcast(op: Operation) -> bool:
    """An atomic's old values are wanted by threads that did not perform it."""
    if not op.results[0].uses:
        return False
    t = op.operands[0].type
    if not isinstance(t, TensorType):
        return True  # one thread performs a scalar atomic
    masks = linear_of(t.layout, t.shape).free_masks(("register", "lane", "warp"))
    return bool(masks.get("lane") or masks.get("warp"))


#: op name -> ``fn(op) -> bytes`` for ops the core does not know (a backend's, registered with
#: :func:`register_scratch`), so the core's shared-memory allocation sizes them too.
_BACKEND_SCRATCH: dict = {}


def register_scratch(op_name: str, size) -> None:
    """Tell the core's shared-memory allocator how much scratch a backend op needs:
    ``size(op) -> int`` bytes (0 for none). The allocator then gives it a buffer and the barrier
    pass separates it from the other shared-memory users, as for any core op."""
    _BACKEND_SCRATCH[op_name] = size


_RESIDENT_SCRATCH: dict = {}


def register_resident_scratch(op_name: str, size) -> None:
    """A backend op whose shared memory must outlive other users (e.g. a loop-invariant
    matrix operand stored once before a loop and read in every iteration): ``size(op)``
    bytes of its own, placed after the common scratch buffer (``smem_offset`` attribute,
    1024-byte aligned) and never reused by the kernel's other shared-memory users."""
    _RESIDENT_SCRATCH[op_name] = size


def resident_scratch_bytes(op: Operation) -> int:
    size = _RESIDENT_SCRATCH.get(op.name)
    return int(size(op)) if size is not None else 0


def scratch_bytes(op: Operation) -> int:
    """Shared memory ``op``'s lowering needs (0 when it stays in registers)."""
    name = op.name
    backend_size = _BACKEND_SCRATCH.get(name)
    if backend_size is not None:
        return int(backend_size(op))
    if name in GATHER_OPS:
        total = 0
        for _, src, view in gather_views(op):
            if relabel_map(src, view) is None:
                total = max(total, src.numel * smem_itemsize(op.results[0].type.scalar))
        return _aligned(total >> int(op.attrs.get(SLICE_ATTR, 0))) if total else 0
    if name == "split":
        src = op.operands[0].type
        for k, (_, s, view) in enumerate(gather_views(op)):
            if split_relabel(s, view, k) is None:
                return _aligned(s.numel * smem_itemsize(src.scalar))
        return 0
    if name == "join":
        a = op.operands[0].type
        res = op.results[0].type
        if join_relabel(linear_of(a.layout, a.shape), linear_of(res.layout, res.shape)) is None:
            return _aligned(res.numel * smem_itemsize(a.scalar))
        return 0
    if name == "reduce":
        return reduce_scratch_layout(op)[1]
    if name == "scan":
        return scan_scratch_layout(op)[1]
    if name == "dot":
        return dot_scratch_layout(op)[1]
    if name == "gather":   # the whole source, row-major
        src = op.operands[0].type
        return _aligned(src.numel * smem_itemsize(src.scalar))
    if name == "histogram":   # one i32 counter per bin
        return _aligned(4 * int(op.attrs["num_bins"]))
    if name == "matrix_mma":
        from .matrix.staging import staging_scratch

        return staging_scratch(op)[1]
    if name in ("atomic_rmw", "atomic_cas"):
        if atomic_needs_broadcast(op):
            t = op.results[0].type
            n = t.numel if isinstance(t, TensorType) else 1
            return _aligned(n * smem_itemsize(t.scalar))
        return 0
    return 0
