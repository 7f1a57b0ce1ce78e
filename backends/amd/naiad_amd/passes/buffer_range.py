"""When a buffer instruction may replace a global one: the numbers and checks that
``canonicalize_pointers`` and ``convert_to_buffer_ops`` share.

A raw buffer access at byte offset ``o`` (unsigned 32 bits) from the descriptor's base is done
only when ``o + size <= NUM_RECORDS``; elsewhere loads return 0 and stores are dropped. So a
global access may become a buffer access only when every element's byte offset provably lies in
``[0, NUM_RECORDS - size]`` -- then the range check never hides a real element, and a masked-off
lane can be sent to ``OUT_OF_RANGE`` instead of branching.
"""
from __future__ import annotations

from naiad.ir import PointerType

#: the descriptor's ``num_records`` (bytes): 2**31 - 2, so that the masked-lane offset 2**31 is
#: out of range for every access width
NUM_RECORDS = (1 << 31) - 2
#: the offset a masked-off lane gets
OUT_OF_RANGE = 1 << 31
#: attributes asking for a cache behaviour the buffer lowering does not reproduce
CACHE_HINTS = ("cache_modifier", "eviction_policy", "volatile")


def element_bytes(ptr_type) -> int | None:
    """Bytes per element of a scalar pointer type's pointee; None for pointers to pointers (a
    buffer access moves integers and floats only)."""
    if not isinstance(ptr_type, PointerType) or isinstance(ptr_type.pointee, PointerType):
        return None
    return getattr(ptr_type.pointee, "itemsize", None)


def has_cache_hints(op) -> bool:
    return any(op.attrs.get(h) for h in CACHE_HINTS)


def bytes_in_range(lo: int, hi: int, size: int) -> bool:
    """Element offsets in ``[lo, hi]`` are byte offsets inside ``[0, NUM_RECORDS)``."""
    return lo >= 0 and (hi + 1) * size <= NUM_RECORDS


def sum_range(ranges, terms):
    """The range of ``sum(terms)`` from each term's range (None if one is unbounded or the i32
    sum could wrap)."""
    lo = hi = 0
    for t in terms:
        r = ranges(t)
        if r is None:
            return None
        lo, hi = lo + r[0], hi + r[1]
    if lo < -(1 << 31) or hi > (1 << 31) - 1:
        return None
    return lo, hi
