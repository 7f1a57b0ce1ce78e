"""Common-subexpression elimination of pure ops, scoped by region dominance.

Two pure ops are the same when they have the same name, operands, attributes, result types and
(for ``reduce``/``scan``) structurally equal regions. An op is replaced by an equal op that
dominates it: one earlier in the same block or in an enclosing block. Sibling regions (``then``/
``else``, a while's two regions) do not see each other's ops. The combine regions of ``reduce``/
``scan`` are isolated from above (backends lower them standalone), so they start an empty scope.
Ops with side effects or reading memory (``load``, atomics, ``call``...) are never merged.
"""
from __future__ import annotations

import math

from ..ir.core import Block, Module, Operation, Value
from ..ir.types import Type
from .rewrite import is_pure, is_terminator, replace_op

#: ops whose regions may not refer to values defined outside them
ISOLATED_REGIONS = frozenset({"reduce", "scan"})


def cse(module: Module, ctx=None) -> bool:
    """Run CSE on every function of ``module`` in place; returns True when anything changed."""
    changed = False
    for fn in module.functions.values():
        changed |= _cse_block(fn.body.block, [{}])
    return changed


def _cse_block(block: Block, scopes: list[dict]) -> bool:
    table: dict = {}
    scopes = scopes + [table]
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            inner = [] if op.name in ISOLATED_REGIONS else scopes
            changed |= _cse_block(region.block, inner)
        if not op.results or not is_pure(op) or is_terminator(op):
            continue
        key = op_key(op)
        if key is None:
            continue
        existing = _lookup(scopes, key)
        if existing is not None:
            replace_op(op, existing.results)
            changed = True
        else:
            table[key] = op
    return changed


def _lookup(scopes: list[dict], key):
    for table in reversed(scopes):
        hit = table.get(key)
        if hit is not None:
            return hit
    return None


def op_key(op: Operation):
    """A hashable description of what ``op`` computes (None when it cannot be described)."""
    try:
        attrs = freeze(op.attrs)
    except TypeError:
        return None
    regions = tuple(region_key(r.block) for r in op.regions)
    return (op.name, tuple(id(v) for v in op.operands), attrs,
            tuple(r.type for r in op.results), regions)


def region_key(block: Block):
    """Structure of a block: its ops with operands named by position when defined inside it."""
    local: dict[Value, tuple] = {}
    for i, a in enumerate(block.args):
        local[a] = ("arg", i)
    return _block_structure(block, local, [0])


def _block_structure(block: Block, local: dict, counter: list) -> tuple:
    items: list = [tuple(a.type for a in block.args)]
    for op in block.ops:
        operands = tuple(local.get(v, ("ext", id(v))) for v in op.operands)
        for r in op.results:
            local[r] = ("def", counter[0])
            counter[0] += 1
        nested = []
        for region in op.regions:
            for i, a in enumerate(region.block.args):
                local[a] = ("def", counter[0])
                counter[0] += 1
            nested.append(_block_structure(region.block, local, counter))
        items.append((op.name, operands, freeze(op.attrs), tuple(r.type for r in op.results),
                      tuple(nested)))
    return tuple(items)


def freeze(value):
    """Attribute value -> hashable key that tells 1, 1.0, True, 0.0 and -0.0 apart and equates NaNs."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, freeze(v)) for k, v in value.items())))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(freeze(v) for v in value))
    if isinstance(value, (str, Type)) or value is None:
        return (type(value).__name__, value)
    hash(value)  # layout attributes: hashable value objects, or TypeError
    return (type(value).__name__, value)
