"""Axis facts (contiguity, divisibility, constancy per dimension) for the layout passes.

A thin view of :func:`naiad.passes.axis_info.analyze` computed once per function before the
layout passes rewrite it. Pointer divisibility is in elements of the pointee (axis info's
convention). Values the analysis never saw get the pessimistic facts (1, 1, 1): always
correct, never vectorized.

Two views, because two kinds of question are asked:

* :meth:`AxisFacts.facts` -- the proven facts, for anything whose *value* matters (a mask's
  constancy, a comparison done once per run of elements);
* :meth:`AxisFacts.address_facts` -- the facts of a pointer an access goes through, for its
  vector width. There every integer value the addresses are computed from is taken to be
  non-negative (``analyze(fn, assume_non_negative=True)``), as Triton's analysis does: index
  arithmetic of a correct kernel does not go below zero (a negative offset from the pointer a
  kernel receives reads outside its buffer), and without the assumption a program id computed
  through ``min`` and ``//`` (tutorial 03's grouped ids) makes ``(pid_n * BN + arange) % N``
  lose its contiguity: B loaded 2 bytes at a time. docs/language.md ("Memory access
  vectorisation") states the assumption; masks keep the proven facts, so a vector is accessed
  whole or not at all exactly where the mask proves it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Function, Value


@dataclass(frozen=True)
class Facts:
    """Per-dimension facts of a value (scalars have one entry)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]


class AxisFacts:
    """Facts for the values of one function: proven ones, and those of access addresses."""

    def __init__(self, fn: Function):
        from ..passes.axis_info import analyze

        self.fn = fn
        self.info = analyze(fn)
        self._address_info = None
        self._unsigned_info = None

    def facts(self, v: Value) -> Facts:
        """What axis info proves about ``v``."""
        return _facts_of(self.info, v)

    def address_facts(self, ptr: Value) -> Facts:
        """The facts of ``ptr`` as the address of a load/store/atomic: integer values it is
        computed from are taken to be non-negative (see the module docstring)."""
        if self._address_info is None:
            from ..passes.axis_info import analyze

            self._address_info = analyze(self.fn, positive_divisors=True)
        return _facts_of(self._address_info, ptr)

    def unsigned_facts(self, ptr: Value) -> Facts:
        """The facts of ``ptr`` were *every* integer value non-negative (Triton's implicit
        assumption; not used to vectorize, only to say in a remark that a sign kept an access
        narrow)."""
        if self._unsigned_info is None:
            from ..passes.axis_info import analyze

            self._unsigned_info = analyze(self.fn, assume_non_negative=True)
        return _facts_of(self._unsigned_info, ptr)


def _facts_of(info, v: Value) -> Facts:
    rank = max(len(v.type.shape), 1)
    got = info.get(v)
    if got is None or len(got.contiguity) != rank:
        return Facts((1,) * rank, (1,) * rank, (1,) * rank)
    return Facts(tuple(got.contiguity), tuple(got.divisibility), tuple(got.constancy))
