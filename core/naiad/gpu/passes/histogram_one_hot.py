"""``expand_histogram``: each ``histogram`` op rewritten as a one-hot compare-and-sum of
existing tile-IR ops, for a target whose LLVM cannot do atomics on shared memory.

The core lowers ``histogram`` with one shared-memory atomic per element. A backend whose
``TargetInfo.shared_atomics`` is False gets a clear error for it instead, unless it selects this
pass by name, before layout assignment::

    insert_passes(default_lowering_passes(target, options), [expand_histogram],
                  before="assign_layouts")

The one-hot form compares every element with every bin (a tensor one dimension larger) and sums
it away in int32, exactly; where that tensor would be large the input is split in halves so a
thread's share stays in registers. Its code still grows with elements x bins (1024 x 128
compiled in 198 s for one GPU and spilled 31 KB), which is why no backend gets it silently.
"""
from __future__ import annotations

from ...ir.builder import Builder
from ...ir.core import Module, Operation

#: largest one-hot intermediate (elements) before the work is split in halves
ONE_HOT_LIMIT = 1 << 14


def expand_histogram(module: Module, ctx=None) -> None:
    for fn in module.functions.values():
        for op in [o for o in fn.walk() if o.name == "histogram"]:
            _expand(op)


def _expand(op: Operation) -> None:
    from ...language.core import tensor
    from ...language.semantics import Semantic

    builder = Builder(op.parent, before=op)
    builder.loc = op.loc
    s = Semantic(builder)
    x = tensor(op.operands[0])
    mask = tensor(op.operands[1]) if len(op.operands) > 1 else None
    counts = one_hot_counts(s, x, int(op.attrs["num_bins"]), mask)
    op.results[0].replace_all_uses_with(counts.handle)
    op.erase()


def one_hot_counts(s, x, num_bins: int, mask=None):
    """int32[num_bins] counts of ``x``'s values (1-D) where ``mask`` holds, from compares and a
    sum (the language's type promotion widens the narrower of ``x`` and the bin indices)."""
    from ...language.creation import arange
    from ...language.ordering import _halves
    from ...language.reduction import sum as _sum
    from ...language.shape import reshape
    from ...ir import types as irt

    n = x.shape[0]
    if n > 1 and n * num_bins > ONE_HOT_LIMIT:
        lo, hi, _ = _halves(s, reshape(x, [2, n // 2], _semantic=s), 0)
        mlo = mhi = None
        if mask is not None:
            mlo, mhi, _ = _halves(s, reshape(mask, [2, n // 2], _semantic=s), 0)
        return s.binary("add", one_hot_counts(s, lo, num_bins, mlo),
                        one_hot_counts(s, hi, num_bins, mhi))
    bins = reshape(arange(0, num_bins, _semantic=s), [1, num_bins], _semantic=s)
    hit = s.compare("eq", s.expand_dims(x, 1), bins)
    if mask is not None:
        hit = s.logical("and", hit, s.expand_dims(mask, 1))
    return _sum(s.cast(hit, irt.i32), 0, _semantic=s)
