"""Builder: creates operations at an insertion point, with a current source location."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Sequence

from .core import Block, Operation, Region, Value
from .types import Type


class Builder:
    """Appends ops to ``block`` (before ``before`` when given). ``loc`` is stamped on every op."""

    def __init__(self, block: Block | None = None, before: Operation | None = None):
        self.block = block
        self.before = before
        self.loc: Any = None

    def set_insertion_point_to_end(self, block: Block) -> None:
        self.block, self.before = block, None

    def set_insertion_point_before(self, op: Operation) -> None:
        self.block, self.before = op.parent, op

    @contextmanager
    def at_end_of(self, block: Block):
        saved = (self.block, self.before)
        self.block, self.before = block, None
        try:
            yield self
        finally:
            self.block, self.before = saved

    def insert(self, op: Operation) -> Operation:
        if op.loc is None:
            op.loc = self.loc
        if self.before is not None:
            self.block.insert_before(self.before, op)
        else:
            self.block.append(op)
        return op

    def create(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
               attrs: dict[str, Any] | None = None, regions: Sequence[Region] = ()) -> Operation:
        return self.insert(Operation(name, operands, result_types, attrs, regions))

    def op1(self, name: str, operands: Sequence[Value], result_type: Type, **attrs) -> Value:
        """Create a single-result op and return its result."""
        return self.create(name, operands, [result_type], attrs).result

    def constant(self, value, type: Type) -> Value:
        return self.op1("constant", [], type, value=value)
