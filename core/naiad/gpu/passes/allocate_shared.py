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

A backend op registered with ``register_resident_scratch`` instead gets a buffer of its own
after the common one (attribute ``smem_offset``, 1024-byte aligned for swizzled matrix
tiles, which repeat every 1024 bytes), for the whole kernel: its contents outlive the other
users, so it takes no part in their sharing (nor in the barrier pass).
"""
from __future__ import annotations

from ...ir.core import Module
from ..movement import resident_scratch_bytes, scratch_bytes

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
        for op in fn.walk():
            op.attrs.pop("scratch", None)
            size = scratch_bytes(op)
            if size:
                op.attrs["scratch"] = size
                total = max(total, size)
            if "private_buffer" in op.attrs:
                size, ops = private.setdefault(op.attrs["private_buffer"], (0, []))
                private[op.attrs["private_buffer"]] = (max(size, int(op.attrs["private_bytes"])),
                                                       ops + [op])
            own = resident_scratch_bytes(op)
            if own:
                resident.append((op, own))
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
