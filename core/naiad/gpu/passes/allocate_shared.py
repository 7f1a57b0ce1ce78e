"""Shared-memory allocation: how many bytes of scratch each op needs, and the kernel's total.

Every scratch user (a layout conversion through shared memory, a cross-warp reduction or scan,
the broadcast of an atomic's old values) uses its buffer only while it runs, so all of them
share one buffer at offset 0; the barrier pass separates consecutive users. The op's ``scratch``
attribute records its size; the function's ``shared`` attribute the buffer's size (what the
launcher must provide as dynamic shared memory).
"""
from __future__ import annotations

from ...ir.core import Module
from ..movement import scratch_bytes


def allocate_shared_memory(module: Module, ctx=None) -> None:
    for fn in module.functions.values():
        if fn.attrs.get("kernel", True) is False:
            continue
        total = 0
        for op in fn.walk():
            op.attrs.pop("scratch", None)
            size = scratch_bytes(op)
            if size:
                op.attrs["scratch"] = size
                total = max(total, size)
        fn.attrs["shared"] = total
