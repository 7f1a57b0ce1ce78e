"""GPU-IR pass ``convert_to_buffer_ops``: tensor loads/stores with canonical addresses become
``amd.buffer_load`` / ``amd.buffer_store`` where a 32-bit offset provably reaches every element.

Why: a ``global_load`` needs a 64-bit address per lane (two VGPRs and a 64-bit add) and a masked
one branches around the access (``s_and_saveexec`` ... ``s_cbranch_execz``). A buffer instruction
takes the base from SGPRs (a buffer resource descriptor, once per wave) and a 32-bit offset per
lane, and a lane whose offset is past the descriptor's ``num_records`` reads 0 / writes nothing:
the mask becomes a ``v_cndmask`` on the offset (see :mod:`naiad_amd.lowering.buffer_ops`).

When it is legal: the address must be ``addptr(splat(base), offsets)``
(:mod:`naiad_amd.passes.canonicalize_pointers` makes it so) and the byte offsets of every element
must lie in ``[0, NUM_RECORDS)`` (:mod:`naiad_amd.passes.buffer_range`) -- otherwise the
hardware would return 0 for a real element. This pass proves it from the offsets' value range (:mod:`naiad_amd.passes.offset_range`), so it holds
for any tensor size: ``arange``-based offsets from a uniform row/block base (softmax, layer-norm,
elementwise kernels) qualify; offsets scaled by a runtime stride do not (Triton also accepts
those when the launcher saw every tensor below 2 GiB -- its ``tt.pointer_range = 32``
specialisation; naiad does not specialise on tensor size yet, so such accesses stay ``global_*``:
slower, never wrong). Loads/stores with cache or eviction hints, volatile loads and non-tensor
accesses are left alone.
"""
from __future__ import annotations

from naiad.ir import Module, Operation, TensorType

from ..ir.buffer_ops import BUFFER_LOAD, BUFFER_STORE
from .buffer_range import NUM_RECORDS, OUT_OF_RANGE, bytes_in_range, element_bytes, has_cache_hints
from .canonicalize_pointers import canonical_parts, erase_dead, is_canonical
from .offset_range import RangeAnalysis

#: the range-check constants are re-exported: tests and the simulator read them from here
__all__ = ["convert_to_buffer_ops", "NUM_RECORDS", "OUT_OF_RANGE"]


def _convertible(op: Operation, ranges: RangeAnalysis):
    """(base, offsets) when ``op`` may become a buffer op, else None."""
    if has_cache_hints(op):
        return None
    ptr = op.operands[0]
    if not isinstance(ptr.type, TensorType) or not is_canonical(ptr):
        return None
    base, offsets = canonical_parts(ptr)
    size = element_bytes(base.type)
    r = ranges(offsets)
    if size is None or r is None or not bytes_in_range(r[0], r[1], size):
        return None
    return base, offsets


def convert_to_buffer_ops(module: Module, ctx=None) -> bool:
    """Replace eligible ``load``/``store`` ops by ``amd.buffer_load``/``amd.buffer_store``."""
    changed = False
    for fn in module.functions.values():
        ranges = RangeAnalysis(fn)
        for op in [o for o in fn.walk() if o.name in ("load", "store")]:
            parts = _convertible(op, ranges)
            if parts is None:
                continue
            base, offsets = parts
            rest = list(op.operands[1:])
            attrs = {"vec": op.attrs["vec"]} if "vec" in op.attrs else {}
            if op.name == "load":
                new = Operation(BUFFER_LOAD, [base, offsets] + rest, [op.results[0].type], attrs,
                                loc=op.loc)
            else:
                new = Operation(BUFFER_STORE, [base, offsets] + rest, [], attrs, loc=op.loc)
            op.parent.insert_before(op, new)
            if op.results:
                new.results[0].name_hint = op.results[0].name_hint
                op.results[0].replace_all_uses_with(new.results[0])
            ptr = op.operands[0]
            op.erase()
            erase_dead([ptr])
            changed = True
    return changed
