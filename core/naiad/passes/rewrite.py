"""IR surgery shared by the passes: side-effect queries, constants, replacing and rebuilding ops,
moving ops and dropping block arguments. Keeps use-lists consistent so passes stay simple."""
from __future__ import annotations

from typing import Iterable, Sequence

from ..ir.core import Block, Operation, Value
from ..ir.ops import OPS, PURE, TERMINATOR
from ..ir.types import Type
from .scalar_eval import normalize

#: ops without side effects that read memory: dead ones may be deleted, but they are never
#: hoisted, merged or reordered across stores
READ_ONLY = frozenset({"load"})
#: control flow whose regions decide its effects (a `while` may not terminate: never deleted)
STRUCTURED = frozenset({"for", "if"})


def is_pure(op: Operation) -> bool:
    d = OPS.get(op.name)
    return d is not None and PURE in d.traits


def is_terminator(op: Operation) -> bool:
    d = OPS.get(op.name)
    return d is not None and TERMINATOR in d.traits


def is_removable(op: Operation) -> bool:
    """True when deleting ``op`` (with unused results) cannot change what the program does."""
    if is_pure(op) or op.name in READ_ONLY:
        return all(is_removable(inner) or is_terminator(inner)
                   for r in op.regions for inner in r.block.ops)
    if op.name in STRUCTURED:
        return all(is_removable(inner) or is_terminator(inner)
                   for r in op.regions for inner in r.block.ops)
    return False


def is_unused(op: Operation) -> bool:
    return all(not r.uses for r in op.results)


# -- constants ---------------------------------------------------------------------------------
def constant_value(v: Value):
    """The scalar held by a ``constant`` op (splat-valued for tensors), normalised to the value's
    type; None when ``v`` is not a constant."""
    op = v.defining_op
    if op is None or op.name != "constant":
        return None
    return normalize(op.attrs.get("value"), v.type)


def create_constant(value, type: Type, before: Operation, name_hint: str | None = None) -> Value:
    """Insert ``constant {value} : type`` before ``before`` and return its result."""
    if isinstance(value, bool) and not getattr(type.scalar, "is_bool", False):
        value = int(value)
    op = Operation("constant", [], [type], {"value": value}, loc=before.loc)
    op.results[0].name_hint = name_hint
    before.parent.insert_before(before, op)
    return op.results[0]


def create_op(name: str, operands: Sequence[Value], result_types: Sequence[Type], before: Operation,
              attrs=None) -> Operation:
    op = Operation(name, list(operands), list(result_types), attrs, loc=before.loc)
    before.parent.insert_before(before, op)
    return op


# -- replacing, erasing, moving ----------------------------------------------------------------
def replace_op(op: Operation, values: Sequence[Value]) -> None:
    """Redirect every use of ``op``'s results to ``values`` and erase ``op``."""
    if len(values) != len(op.results):
        raise ValueError(f"replacing {op.name} with {len(values)} values for {len(op.results)} results")
    for old, new in zip(op.results, values):
        if old is not new:
            if new.name_hint is None and old.name_hint is not None:
                new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
    op.erase()


def move_before(op: Operation, anchor: Operation) -> None:
    """Detach ``op`` from its block and insert it before ``anchor``."""
    op.parent.ops.remove(op)
    anchor.parent.insert_before(anchor, op)


def inline_block_before(block: Block, anchor: Operation, arg_values: Sequence[Value] = ()
                        ) -> list[Value]:
    """Move ``block``'s ops (all but its terminator) before ``anchor``; its arguments are replaced
    by ``arg_values``. Returns the terminator's operands (the values the block produced)."""
    for arg, v in zip(block.args, arg_values):
        arg.replace_all_uses_with(v)
    term = block.terminator
    for op in list(block.ops):
        if op is term:
            break
        move_before(op, anchor)
    results = list(term.operands) if term is not None else []
    return results


def remove_block_args(block: Block, indices: Iterable[int]) -> None:
    """Delete the (unused) block arguments at ``indices`` and renumber the rest."""
    drop = set(indices)
    for i in drop:
        if block.args[i].uses:
            raise ValueError("removing a block argument that is still used")
    block.args = [a for i, a in enumerate(block.args) if i not in drop]
    for i, a in enumerate(block.args):
        a.index = i


def rebuild(op: Operation, operands: Sequence[Value], kept_results: Sequence[int]) -> Operation:
    """Replace ``op`` by a copy with new operands and only the results at ``kept_results``; its
    regions move to the copy. The dropped results must be unused."""
    new = Operation(op.name, list(operands), [op.results[i].type for i in kept_results],
                    dict(op.attrs), loc=op.loc)
    for j, i in enumerate(kept_results):
        new.results[j].name_hint = op.results[i].name_hint
    for r in op.regions:
        new.add_region(r)
    op.regions = []
    op.parent.insert_before(op, new)
    for j, i in enumerate(kept_results):
        op.results[i].replace_all_uses_with(new.results[j])
    op.erase()
    return new
