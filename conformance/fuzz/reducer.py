"""Shrink a failing program while it still fails the same way.

Greedy passes until nothing changes: replace each statement by constants of its dtypes and drop
what becomes dead; drop outputs; shrink the grid, the tile and the loop-trip argument ``k``. A
candidate is kept when it fails with the same :meth:`Outcome.signature` (same status, same first
field of the message: the buffer that differs, or the exception type).
"""
from __future__ import annotations

from .program import Program
from .runner import Outcome, run_case


def reduce_program(p: Program, peer: str, failure: Outcome, budget: int = 200) -> Program:
    want = failure.signature()
    tries = [0]

    def still_fails(q: Program) -> bool:
        if tries[0] >= budget:
            return False
        tries[0] += 1
        out = run_case(q, peer)
        return out.failed and _same(out.signature(), want)

    best = p
    changed = True
    while changed and tries[0] < budget:
        changed = False
        for cand in _candidates(best):
            if still_fails(cand):
                best, changed = cand, True
                break
    return best


def _same(sig: str, want: str) -> bool:
    """Output buffers are renumbered when outputs are dropped: compare the status and kind."""
    s_status, s_what = sig.split(":", 1)
    w_status, w_what = want.split(":", 1)
    if s_status != w_status:
        return False
    if s_status == "mismatch":
        return True
    return s_what.split(" ")[0] == w_what.split(" ")[0]


def _candidates(p: Program):
    """Smaller programs, the most effective first."""
    for i in range(len(p.stmts) - 1, -1, -1):
        if p.stmts[i].kind == "const":
            continue
        if not p.stmts[i].outs:
            stmts = p.stmts[:i] + p.stmts[i + 1:]
            yield p.with_(stmts=stmts).without_dead()
        else:
            yield p.replacement(i).without_dead()
    outputs = [b for b in p.buffers if b.role == "output"]
    if len(outputs) > 1:
        for b in outputs:
            yield p.with_(buffers=tuple(x for x in p.buffers if x is not b)).without_dead()
    if p.grid > 1:
        yield p.with_(grid=1, n=min(p.n, p.R if p.rank == 2 else p.C))
    if p.k > 0:
        yield p.with_(k=p.k - 1)
    if p.rank == 2 and p.R > 1 and not any(s.kind == "dot" for s in p.stmts):
        R = p.R // 2
        yield p.with_(R=R, n=min(p.n, p.grid * R))
    if p.C > 8 and p.rank == 1:
        C = p.C // 2
        yield p.with_(C=C, n=min(p.n, p.grid * C), m=C)
    if p.rank == 2 and p.C > 2 and not any(s.kind == "dot" for s in p.stmts):
        C = p.C // 2
        yield p.with_(C=C, m=min(p.m, C))
