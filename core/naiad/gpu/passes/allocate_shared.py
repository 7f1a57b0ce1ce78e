"""Shared-memory allocation: how many bytes of scratch each op needs, and the kernel's total.

Every scratch user (a layout conversion through shared memory, a cross-warp reduction or scan,
the broadcast of an atomic's old values) uses its buffer only while it runs, so all of them
share one buffer at offset 0; the barrier pass separates consecutive users. The op's ``scratch``
attribute records its size; the function's ``shared`` attribute the buffer's size (what the
launcher must provide as dynamic shared memory).

Two kinds of buffers live for the whole kernel, so they cannot share offset 0; each gets its
own region above the scratch buffer:

A *thread-private* buffer -- ops carrying ``private_buffer`` (an id, one per buffer) and
``private_bytes`` (its size), e.g. a ring that each thread fills with asynchronous copies and
reads back itself -- lives for the whole kernel, so it cannot share offset 0: each gets its own
16-byte aligned region above the scratch buffer, recorded on its ops as ``private_offset``.
No thread reads another's part, so the barrier pass ignores these ops.

A layout conversion (any gather through shared memory) whose tile would be the largest user
of the common buffer runs in passes instead where its layouts allow (``scratch_slices``, see
:func:`naiad.gpu.movement.gather_slice_bits`): each pass moves a slice of the tile, and the
slices are made just small enough that the buffer is no larger than the kernel's largest other
user (a matmul's copy ring, say). Why: the buffer sets the kernel's shared memory and with it
how many programs share an SM -- a 128x256 fp32 accumulator converted for its store needs
128 KiB at once, one program per SM where the 96 KiB ring before it allows two. A kernel
whose only user is the conversion keeps the one pass.

A backend op registered with ``register_resident_scratch`` instead gets a buffer of its own
after the common one (attribute ``smem_offset``, 1024-byte aligned for swizzled matrix
tiles, which repeat every 1024 bytes), for the whole kernel: its contents outlive the other
users, so it takes no part in their sharing (nor in the barrier pass).
"""
from __future__ import annotations

from ...ir.core import Module
from ..movement import SLICE_ATTR, gather_slice_bits, resident_scratch_bytes, scratch_bytes

#: alignment of resident buffers
RESIDENT_ALIGN = 1024


def _aligned(n: int) -> int:
    return (n + 15) // 16 * 16


def allocate_shared_memory(module: Module, ctx=None) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        total = 0
        private: dict = {}   # buffer id -> (bytes, its ops)
        resident = []
        users = []
        for op in fn.walk():
            op.attrs.pop("scratch", None)
            op.attrs.pop(SLICE_ATTR, None)
            size = scratch_bytes(op)
            if size:
                users.append((op, size))
            if "private_buffer" in op.attrs:
                size, ops = private.setdefault(op.attrs["private_buffer"], (0, []))
                private[op.attrs["private_buffer"]] = (max(size, int(op.attrs["private_bytes"])),
                                                       ops + [op])
            own = resident_scratch_bytes(op)
            if own:
                resident.append((op, own))
        for op, size in _slice_large_gathers(users):
            op.attrs["scratch"] = size
            total = max(total, size)
        if private:
            total = _aligned(total)
            for _, (size, ops) in sorted(private.items()):
                for op in ops:
                    op.attrs["private_offset"] = total
                total += _aligned(size)
        for op, size in resident:
            total = -(-total // RESIDENT_ALIGN) * RESIDENT_ALIGN
            op.attrs["smem_offset"] = total
            total += size
        fn.attrs["shared"] = total


def _slice_large_gathers(users: list) -> list:
    """(op, bytes) of every scratch user, a gather over the largest other user cut into the
    fewest passes that bring its buffer down to that size (as far as its layouts allow)."""
    bits = {op: gather_slice_bits(op) for op, _ in users}
    others = max((size for op, size in users if not bits[op]), default=0)
    out = []
    for op, size in users:
        n = 0
        while others and size > others and n < len(bits[op]):
            n += 1
            op.attrs[SLICE_ATTR] = n
            size = scratch_bytes(op)
        out.append((op, size))
    return out
