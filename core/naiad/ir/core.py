"""The tile IR's data structures: SSA values, operations, blocks, regions, functions and modules.

Structured control flow only: every region holds exactly one block, which ends in a terminator
(``yield``, ``condition``, ``return``). Values keep use-lists so passes can replace and erase
cheaply. Attributes are plain Python values (int, float, bool, str, lists/tuples of them, types)
or layout objects in the GPU IR.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from .types import Type


class Value:
    """An SSA value: an operation result or a block argument."""

    __slots__ = ("type", "owner", "index", "uses", "name_hint")

    def __init__(self, type: Type, owner, index: int, name_hint: str | None = None):
        self.type = type
        self.owner = owner  # Operation (result) or Block (argument)
        self.index = index
        self.uses: list[tuple[Operation, int]] = []
        self.name_hint = name_hint

    @property
    def defining_op(self) -> "Operation | None":
        return self.owner if isinstance(self.owner, Operation) else None

    @property
    def is_block_arg(self) -> bool:
        return isinstance(self.owner, Block)

    def replace_all_uses_with(self, other: "Value") -> None:
        for op, idx in list(self.uses):
            op.set_operand(idx, other)

    def __repr__(self) -> str:
        return f"<Value {self.name_hint or ''}:{self.type}>"


class Operation:
    """One operation: ``name(operands) {attrs} -> results`` with optional regions."""

    def __init__(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attrs: dict[str, Any] | None = None, regions: Sequence["Region"] = (),
                 loc: Any = None):
        self.name = name
        self.operands: list[Value] = []
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.regions: list[Region] = []
        self.parent: Block | None = None
        self.loc = loc  # source location (filename, line, col) for diagnostics
        for v in operands:
            self.add_operand(v)
        for r in regions:
            self.add_region(r)

    # -- operands --------------------------------------------------------------------------
    def add_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"operand of {self.name} must be a Value, got {v!r}")
        v.uses.append((self, len(self.operands)))
        self.operands.append(v)

    def set_operand(self, idx: int, v: Value) -> None:
        old = self.operands[idx]
        old.uses.remove((self, idx))
        v.uses.append((self, idx))
        self.operands[idx] = v

    def set_operands(self, values: Sequence[Value]) -> None:
        self.drop_operands()
        for v in values:
            self.add_operand(v)

    def drop_operands(self) -> None:
        for i, v in enumerate(self.operands):
            v.uses.remove((self, i))
        self.operands = []

    # -- regions ---------------------------------------------------------------------------
    def add_region(self, region: "Region") -> "Region":
        region.parent = self
        self.regions.append(region)
        return region

    # -- convenience -----------------------------------------------------------------------
    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    @property
    def parent_op(self) -> "Operation | None":
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    def walk(self) -> Iterator["Operation"]:
        """Pre-order walk of this op and every op nested in its regions."""
        yield self
        for r in self.regions:
            for op in list(r.block.ops):
                yield from op.walk()

    def erase(self) -> None:
        """Detach from the parent block and drop operand uses (results must be unused)."""
        for r in self.results:
            if r.uses:
                raise ValueError(f"erasing {self.name} whose result is still used")
        for inner in list(self.walk())[1:]:
            inner.drop_operands()
        self.drop_operands()
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None

    def is_ancestor_of(self, other: "Operation") -> bool:
        op = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    def clone(self, mapping: dict[Value, Value]) -> "Operation":
        """Deep copy; operands are looked up in ``mapping`` (defaulting to themselves), and the
        mapping is extended with the clone's results and block arguments."""
        new = Operation(self.name, [mapping.get(v, v) for v in self.operands],
                        [r.type for r in self.results], dict(self.attrs), loc=self.loc)
        for old_r, new_r in zip(self.results, new.results):
            new_r.name_hint = old_r.name_hint
            mapping[old_r] = new_r
        for r in self.regions:
            new.add_region(r.clone(mapping))
        return new

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


class Block:
    """A list of operations with typed arguments; the last op is a terminator."""

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[str | None] = ()):
        names = list(arg_names) + [None] * (len(arg_types) - len(arg_names))
        self.args = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent: Region | None = None

    def add_arg(self, type: Type, name: str | None = None) -> Value:
        v = Value(type, self, len(self.args), name)
        self.args.append(v)
        return v

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor), op)

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None


class Region:
    """A single-block region owned by an operation (loop body, branch, combine function)."""

    def __init__(self, block: Block | None = None):
        self.block = block or Block()
        self.block.parent = self
        self.parent: Operation | None = None

    def clone(self, mapping: dict[Value, Value]) -> "Region":
        blk = Block([a.type for a in self.block.args], [a.name_hint for a in self.block.args])
        for old, new in zip(self.block.args, blk.args):
            mapping[old] = new
        for op in self.block.ops:
            blk.append(op.clone(mapping))
        return Region(blk)


class Function:
    """A kernel or device function: named, typed arguments, a body region, attributes.

    ``arg_attrs[i]`` holds per-argument facts (e.g. ``{"divisibility": 16}`` or
    ``{"equal_to": 1}``) seeded by specialisation and consumed by axis info.
    """

    def __init__(self, name: str, arg_types: Sequence[Type], result_types: Sequence[Type] = (),
                 arg_names: Sequence[str] = (), attrs: dict[str, Any] | None = None):
        self.name = name
        self.body = Region(Block(arg_types, arg_names))
        self.body.parent = None
        self.result_types = list(result_types)
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.arg_attrs: list[dict[str, Any]] = [dict() for _ in arg_types]
        self.module: Module | None = None

    @property
    def args(self) -> list[Value]:
        return self.body.block.args

    @property
    def arg_types(self) -> list[Type]:
        return [a.type for a in self.args]

    def walk(self) -> Iterator[Operation]:
        for op in list(self.body.block.ops):
            yield from op.walk()


class Module:
    """A set of functions; ``attrs`` carries module-wide facts (target, num_warps, ...)."""

    def __init__(self, attrs: dict[str, Any] | None = None):
        self.functions: dict[str, Function] = {}
        self.attrs: dict[str, Any] = dict(attrs or {})

    def add(self, fn: Function) -> Function:
        if fn.name in self.functions:
            raise ValueError(f"function @{fn.name} defined twice")
        fn.module = self
        self.functions[fn.name] = fn
        return fn

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)
