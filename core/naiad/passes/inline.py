"""Inline ``call`` ops to device functions (``attrs["kernel"]`` false), then drop the inlined callees
that nothing calls any more (device functions never called stay: nothing to learn about them).

A callee's body ends in its single ``return`` (the frontend funnels every return through it), so
inlining is: clone the body before the call with the callee's arguments mapped to the call's
operands, and replace the call's results by the cloned ``return``'s operands. Callees are inlined
into each other first (in call-graph post-order), so every function is cloned fully inlined.
Recursion cannot be inlined and is an error, as is a call to an unknown function or a mismatch
between a call and its callee's signature.
"""
from __future__ import annotations

from ..errors import IRError
from ..ir.core import Function, Module, Operation, Value
from ..ir.printer import print_op


def inline(module: Module, ctx=None) -> bool:
    """Inline every call to a non-kernel function of ``module`` in place; returns True on change."""
    order = _post_order(module)
    inlined: set[str] = set()
    for fn in order:
        for call in [op for op in fn.walk() if op.name == "call"]:
            callee = _callee(module, call)
            if callee.attrs.get("kernel"):
                continue
            _inline_call(call, callee)
            inlined.add(callee.name)
    _drop_uncalled(module, inlined)
    return bool(inlined)


def _callee(module: Module, call: Operation) -> Function:
    name = call.attrs.get("callee")
    fn = module.functions.get(name)
    if fn is None:
        raise IRError(f"call to unknown function @{name}: {print_op(call)}")
    return fn


def _post_order(module: Module) -> list[Function]:
    """Functions ordered callees first; raises IRError on a recursive call chain."""
    order: list[Function] = []
    state: dict[str, str] = {}

    def visit(fn: Function, chain: list[str]) -> None:
        if state.get(fn.name) == "done":
            return
        if state.get(fn.name) == "active":
            cycle = " -> ".join(chain[chain.index(fn.name):] + [fn.name])
            raise IRError(f"recursive calls cannot be inlined: {cycle}")
        state[fn.name] = "active"
        for op in fn.walk():
            if op.name == "call":
                callee = _callee(module, op)
                if not callee.attrs.get("kernel"):
                    visit(callee, chain + [fn.name])
        state[fn.name] = "done"
        order.append(fn)

    for fn in list(module.functions.values()):
        visit(fn, [])
    return order


def _inline_call(call: Operation, callee: Function) -> None:
    if len(call.operands) != len(callee.args):
        raise IRError(f"call passes {len(call.operands)} arguments to @{callee.name}, which takes "
                      f"{len(callee.args)}: {print_op(call)}")
    for v, a in zip(call.operands, callee.args):
        if v.type != a.type:
            raise IRError(f"call passes {v.type} for @{callee.name}'s argument of type {a.type}: "
                          f"{print_op(call)}")
    body = callee.body.block.ops
    if not body or body[-1].name != "return":
        raise IRError(f"@{callee.name} does not end in a return")
    if any(op.name == "return" for top in body[:-1] for op in top.walk()):
        raise IRError(f"@{callee.name} has a return before its end; inlining needs a single "
                      "return at the end of the body")
    ret = body[-1]
    if [v.type for v in ret.operands] != [r.type for r in call.results]:
        raise IRError(f"@{callee.name} returns ({', '.join(str(v.type) for v in ret.operands)}) "
                      f"but the call expects ({', '.join(str(r.type) for r in call.results)}): "
                      f"{print_op(call)}")
    mapping: dict[Value, Value] = dict(zip(callee.args, call.operands))
    block = call.parent
    for op in body[:-1]:
        new = op.clone(mapping)
        if call.loc is not None and new.loc is None:
            new.loc = call.loc
        block.insert_before(call, new)
    for r, v in zip(call.results, ret.operands):
        new_v = mapping.get(v, v)
        if new_v.name_hint is None:
            new_v.name_hint = r.name_hint
        r.replace_all_uses_with(new_v)
    call.erase()


def _drop_uncalled(module: Module, candidates: set[str]) -> None:
    """Remove the inlined callees that no remaining call refers to."""
    called = {op.attrs.get("callee") for fn in module.functions.values() for op in fn.walk()
              if op.name == "call"}
    for name in candidates - called:
        fn = module.functions.pop(name, None)
        if fn is not None:
            fn.module = None
