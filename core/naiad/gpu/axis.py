"""Axis facts (contiguity, divisibility, constancy per dimension) for the layout passes.

A thin view of :func:`naiad.passes.axis_info.analyze` computed once per function before the
layout passes rewrite it. Pointer divisibility is in elements of the pointee (axis info's
convention). Values the analysis never saw get the pessimistic facts (1, 1, 1): always
correct, never vectorized.
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
    """Facts for the values of one function."""

    def __init__(self, fn: Function):
        from ..passes.axis_info import analyze

        self.info = analyze(fn)

    def facts(self, v: Value) -> Facts:
        rank = max(len(v.type.shape), 1)
        info = self.info.get(v)
        if info is None or len(info.contiguity) != rank:
            return Facts((1,) * rank, (1,) * rank, (1,) * rank)
        return Facts(tuple(info.contiguity), tuple(info.divisibility), tuple(info.constancy))
