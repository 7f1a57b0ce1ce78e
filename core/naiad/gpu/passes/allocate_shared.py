"""Shared-memory allocation: how many bytes of scratch each op needs, and the kernel's total.

Every scratch user (a layout conversion through shared memory, a cross-warp reduction or scan,
the broadcast of an atomic's old values) uses its buffer only while it runs, so all of them
share one buffer at offset 0; the barrier pass separates consecutive users. The op's ``scratch``
attribute records its size; the function's ``shared`` attribute the buffer's size (what the
launcher must provide as dynamic shared memory).

A *thread-private* buffer -- ops carrying ``private_buffer`` (an id, one per buffer) and
``private_bytes`` (its size), e.g. a ring that each thread fills with asynchronous copies and
reads back itself -- lives for the whole kernel, so it cannot share offset 0: each gets its own
16-byte aligned region above the scratch buffer, recorded on its ops as ``private_offset``.
No thread reads another's part, so the barrier pass ignores these ops.
"""
from __future__ import annotations

from ...ir.core import Module
from ..movement import scratch_bytes


def _aligned(n: int) -> int:
    return (n + 15) // 16 * 16


def allocate_shared_memory(module: Module, ctx=None) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        total = 0
        private: dict = {}   # buffer id -> (bytes, its ops)
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
        if private:
            total = _aligned(total)
            for _, (size, ops) in sorted(private.items()):
                for op in ops:
                    op.attrs["private_offset"] = total
                total += _aligned(size)
        fn.attrs["shared"] = total
