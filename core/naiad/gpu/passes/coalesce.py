"""The layout of a memory access: coalesced along the most contiguous dimension.

Each thread takes ``vec`` consecutive elements of the pointer's most contiguous dimension, where
``vec`` is as large as axis info allows: at most the contiguity (consecutive addresses), at
most the alignment (divisibility of the address in bytes / item size), at most 16 bytes, and at
most the elements each thread has to take. The pointer's facts are its *address* facts
(:meth:`naiad.gpu.axis.AxisFacts.address_facts`: index values taken to be non-negative, as in
Triton); a mask's constancy is the proven one. Lanes then cover that dimension first, so a warp
touches consecutive memory.
"""
from __future__ import annotations

from ..axis import AxisFacts
from ..layouts import BlockedLayout, blocked_for


def _pow2_floor(n: int) -> int:
    n = max(int(n), 1)
    return 1 << (n.bit_length() - 1)


def _largest_pow2_dividing(n: int) -> int:
    n = int(n)
    if n <= 0:
        return 1 << 30  # divisible by everything (e.g. an address known to be 0)
    return n & -n


def memory_itemsize(elem) -> int:
    """Bytes per element in memory (i1 is stored as one byte)."""
    return max(getattr(elem, "bitwidth", 64) // 8, 1)


def access_order(facts, rank: int) -> list[int]:
    """Dims sorted by contiguity, most contiguous first; ties keep the row-major preference."""
    dims = list(range(rank - 1, -1, -1))
    return sorted(dims, key=lambda d: -facts.contiguity[d])


def vector_width(ptr, facts, order, max_per_thread: int) -> int:
    """Elements per vector access along ``order[0]`` proven contiguous and aligned."""
    elem = ptr.type.scalar.pointee
    size = memory_itemsize(elem)
    d = order[0]
    contig = _pow2_floor(facts.contiguity[d])
    # axis info counts pointer divisibility in elements of the pointee
    align_elems = max(_largest_pow2_dividing(facts.divisibility[d]), 1)
    vec = min(contig, align_elems, max(16 // size, 1), _pow2_floor(max_per_thread))
    return max(vec, 1)


def coalesced_layout(ptr, axis: AxisFacts, num_warps: int, warp_size: int, mask=None,
                     facts=None):
    """(layout, vec) for an access through the tensor of pointers ``ptr``.

    With a mask, ``vec`` is also limited by the mask's constancy: a thread taking several
    consecutive elements only pays off when it moves them with one vector instruction;
    otherwise neighbouring lanes taking neighbouring elements coalesces best. ``facts``: the
    pointer's facts when not its address facts (see :func:`sign_remark`)."""
    shape = ptr.type.shape
    facts = facts or axis.address_facts(ptr)
    order = access_order(facts, len(shape))
    numel = 1
    for s in shape:
        numel *= s
    per_thread = max(numel // (num_warps * warp_size), 1)
    vec = vector_width(ptr, facts, order, per_thread)
    vec = min(vec, mask_vector_width(mask, order[0], axis))
    spt = [1] * len(shape)
    spt[order[0]] = min(vec, shape[order[0]])
    layout: BlockedLayout = blocked_for(shape, num_warps, warp_size, order, spt)
    return layout, spt[order[0]]


def mask_vector_width(mask, order0: int, axis: AxisFacts) -> int:
    """How many consecutive elements along ``order0`` share one mask value."""
    if mask is None:
        return 1 << 30
    return _pow2_floor(axis.facts(mask).constancy[order0])


def sign_remark(ptr, axis: AxisFacts, num_warps: int, warp_size: int, mask, vec: int):
    """Why an access through ``ptr`` moves ``vec`` elements at a time when its index arithmetic
    would give it more were every integer value non-negative: a ``%`` or ``//`` of a value not
    known to be non-negative keeps no runs of consecutive values (``-16 % 16 == 0`` but
    ``-15 % 16 == -15``). None when the sign is not what limits it."""
    size = memory_itemsize(ptr.type.scalar.pointee)
    if vec * size >= 16:
        return None
    _, wider = coalesced_layout(ptr, axis, num_warps, warp_size, mask,
                                facts=axis.unsigned_facts(ptr))
    if wider <= vec:
        return None
    return (f"moves {vec * size}-byte vectors, not {wider * size}-byte ones: its index is not "
            f"known to be non-negative (a `%` or `//` of a possibly negative value keeps no runs "
            f"of consecutive values); `tl.assume(x >= 0)` on the index or the program id it "
            f"comes from lets it vectorize")
