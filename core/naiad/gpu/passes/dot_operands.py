"""Let ``dot`` read operands that need shared memory straight from shared memory.

A ``convert_layout`` to a ``dot_operand`` layout that has to go through shared memory would
load every element of the operand into registers before the first multiply (for a 64x64x32
tile, hundreds of registers per thread). When such a conversion feeds only the dot, the dot
takes the unconverted operand instead; its lowering writes both operands to shared memory once
and reads each K-slice just before using it (see :mod:`naiad.gpu.lower.dot`).
"""
from __future__ import annotations

from ...ir.core import Module
from ..movement import gather_views, relabel_map, smem_itemsize


def fuse_dot_operand_conversions(module: Module, ctx=None) -> bool:
    limit = getattr(getattr(ctx, "target_info", None), "shared_memory_bytes", None)
    changed = False
    for fn in module.functions.values():
        for op in list(fn.walk()):
            if op.name != "dot":
                continue
            fusable = []
            for i in (0, 1):
                cvt = op.operands[i].defining_op
                if cvt is None or cvt.name != "convert_layout" or len(cvt.results[0].uses) != 1:
                    continue
                [(_, src, view)] = gather_views(cvt)
                if relabel_map(src, view) is not None:
                    continue  # a register relabelling: nothing to save
                t = cvt.results[0].type
                fusable.append((t.numel * smem_itemsize(t.scalar), i, cvt))
            # both operands staged at once must fit the target's shared memory; else only the
            # smaller one is (the other converts on its own, reusing the same buffer)
            total = 0
            for size, i, cvt in sorted(fusable, key=lambda f: f[0]):
                total += size
                if limit and total > limit:
                    break
                op.set_operand(i, cvt.operands[0])
                cvt.erase()
                changed = True
    return changed
