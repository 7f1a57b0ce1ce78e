""":class:`MatrixPolicy`: how a backend wants ``accelerate_matmul`` to treat dots, beyond its table.

A backend answers the ``naiad_matrix_policy(target, options)`` hook with one (no answer: the
defaults). Kept apart from the instruction table because these are choices about the pass, not
facts about instructions:

* ``fold_accumulating_add`` -- ``add(x, dot(a, b, 0))`` (what ``acc += tl.dot(a, b)`` produces)
  becomes ``dot(a, b, x)`` first, for every dot of a kernel, so matrix units accumulate in place
  and a loop can keep an asynchronous MMA in flight (the same products, summed in another order);
* ``hoist_invariant_operands`` -- an operand defined outside the dot's loop is converted to its
  fragments once, before the loop (see ``accelerate._outermost_after``); a backend whose later
  passes stage operands themselves turns it off;
* ``explain(dot, entry, num_warps) -> str | None`` -- a performance remark for a dot: called with
  the entry chosen (None when the dot stays on FMAs); the text is reported at the dot's source
  line (``naiad.remarks``), e.g. why a faster entry did not fit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class MatrixPolicy:
    fold_accumulating_add: bool = False
    hoist_invariant_operands: bool = True
    explain: Callable | None = None


DEFAULT_POLICY = MatrixPolicy()
