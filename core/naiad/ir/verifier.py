"""The tile-IR verifier: catches malformed IR between passes before it turns into wrong code.

``verify(module_or_function)`` checks, for every op:

* structure — the op is in the catalog (:data:`naiad.ir.ops.OPS`), its operand/result/region
  counts and required attributes match its :class:`OpDef`, parent links and use-lists agree;
* terminators — every block ends in the terminator its parent expects (``yield`` for
  for/if/while-after/reduce/scan, ``condition`` for while-before, ``return`` at function level)
  and terminators appear nowhere else;
* SSA dominance — each operand is defined earlier in the same block or an enclosing one, or is a
  block argument in scope;
* types — one small rule per op family (table :data:`_RULES`), following the conventions in
  :mod:`naiad.ir.ops`.

Failures raise :class:`IRError` naming the function, the problem and the op's printed text.
Ops registered later (the GPU layer's) add their own checks with :func:`register_verifier`.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import IRError
from .core import Block, Function, Module, Operation, Value
from .ops import ATOMIC_KINDS, CMP_PREDICATES, MATH_UNARY, OPS, TERMINATOR
from .printer import print_op
from .types import PointerType, ScalarType, TensorType, Type, i1, u64, with_element

__all__ = ["verify", "register_verifier", "unregister_verifier", "VerifyContext",
           "EXPECTED_TERMINATORS"]


@dataclass
class VerifyContext:
    """What a rule may need besides the op: the function being verified and its module."""

    function: Function
    module: Module | None


class _Problem(Exception):
    """Raised by a rule: the message says what is wrong with the op."""


Rule = Callable[[Operation, VerifyContext], "str | None"]
_RULES: dict[str, list[Rule]] = {}

#: the terminator each region of a region-holding op must end in; ops not listed here need
#: any op with the ``terminator`` trait
EXPECTED_TERMINATORS: dict[str, tuple[str, ...]] = {
    "for": ("yield",), "if": ("yield", "yield"), "while": ("condition", "yield"),
    "reduce": ("yield",), "scan": ("yield",),
}


def register_verifier(op_name: str, fn: Callable) -> Callable:
    """Add a check for ``op_name``: ``fn(op)`` or ``fn(op, ctx)`` (ctx: :class:`VerifyContext`).

    The check runs after the structural checks (catalog entry, counts, attributes, regions,
    dominance) have passed. It reports a problem by returning a message string or raising
    :class:`IRError`; the verifier adds the function name and the op's text. Several checks may
    be registered for one op; all run, in registration order. Returns ``fn`` (usable as a
    decorator through ``functools.partial``).
    """
    if not callable(fn):
        raise TypeError(f"verifier for {op_name!r} must be callable")
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rule: Rule = fn if len(params) >= 2 else (lambda op, ctx, _fn=fn: _fn(op))
    _RULES.setdefault(op_name, []).append(rule)
    return fn


def unregister_verifier(op_name: str, fn: Callable) -> None:
    """Remove a check added by :func:`register_verifier` (plugin teardown, tests)."""
    rules = _RULES.get(op_name, [])
    for k, rule in enumerate(rules):
        if rule is fn or getattr(rule, "__defaults__", None) == (fn,):
            del rules[k]
            return
    raise ValueError(f"no verifier {fn!r} registered for {op_name!r}")


def _rule(*names: str):
    def deco(fn):
        for n in names:
            _RULES.setdefault(n, []).append(fn)
        return fn
    return deco


# -- entry point --------------------------------------------------------------------------------

def verify(target: Module | Function) -> Module | Function:
    """Verify a module (every function) or one function; return it unchanged, or raise IRError."""
    if isinstance(target, Module):
        walked = []
        for name, fn in target.functions.items():
            if fn.name != name:
                raise IRError(f"module lists function @{fn.name} under the name @{name}")
            walked.append((fn, _verify_function(fn, target)))
        for fn, walker in walked:  # after every function's dominance check, which explains
            walker.check_uses(fn)  # cross-function uses better than a stale-use message
    elif isinstance(target, Function):
        _verify_function(target, target.module).check_uses(target)
    else:
        raise TypeError(f"verify() takes a Module or Function, got {type(target).__name__}")
    return target


def _verify_function(fn: Function, module: Module | None) -> "_Walker":
    ctx = VerifyContext(fn, module)
    where = f"in function @{fn.name}"
    if len(fn.arg_attrs) != len(fn.args):
        raise IRError(f"{where}: {len(fn.arg_attrs)} arg_attrs entries for {len(fn.args)} "
                      "arguments")
    for i, (arg, facts) in enumerate(zip(fn.args, fn.arg_attrs)):
        _check_type(arg.type, f"argument #{i}", where)
        for key in ("divisibility", "equal_to"):
            if key in facts and (not isinstance(facts[key], int) or isinstance(facts[key], bool)):
                raise IRError(f"{where}: argument #{i} fact {key} must be an integer, "
                              f"got {facts[key]!r}")
    for t in fn.result_types:
        _check_type(t, "result type", where)
    walker = _Walker(ctx, where)
    walker.block(fn.body.block, ("return",), "the function body")
    return walker


def _check_type(t: Any, what: str, where: str) -> None:
    problem = _type_problem(t)
    if problem:
        raise IRError(f"{where}: {what} {t}: {problem}")


def _type_problem(t: Any) -> str | None:
    if not isinstance(t, Type):
        return f"is not an IR type ({type(t).__name__})"
    if isinstance(t, TensorType):
        if not t.shape:
            return "0-d tensors are not allowed; use the scalar type"
        if any(not isinstance(d, int) or d < 1 for d in t.shape):
            return "tensor dimensions must be positive integers"
        if not isinstance(t.element, (ScalarType, PointerType)):
            return "a tensor's element must be a scalar or a pointer"
    if isinstance(t, PointerType):
        if not isinstance(t.pointee, (ScalarType, PointerType)):
            return "a pointer must point to a scalar or a pointer"
        return _type_problem(t.pointee)
    return None


# -- the walk: structure, terminators, dominance, then per-op rules ---------------------------

class _Walker:
    def __init__(self, ctx: VerifyContext, where: str):
        self.ctx, self.where = ctx, where
        self.visible: set[Value] = set()
        self.seen_ops: set[Operation] = set()
        self.defined: list[Value] = []
        self.operand_count = 0

    def fail(self, op: Operation, problem: str) -> IRError:
        return IRError(f"{self.where}: '{op.name}': {problem}\n{_op_text(op)}")

    def block(self, block: Block, terminators: tuple[str, ...] | None, owner: str) -> None:
        """``terminators``: names allowed at the end (None: any op with the terminator trait)."""
        added: list[Value] = []
        for i, a in enumerate(block.args):
            if a.owner is not block or a.index != i:
                raise IRError(f"{self.where}: block argument #{i} of {owner} is not linked "
                              "to its block")
            problem = _type_problem(a.type)
            if problem:
                raise IRError(f"{self.where}: block argument #{i} of {owner} has type "
                              f"{a.type}: {problem}")
            added.append(a)
        self.visible.update(block.args)
        self.defined.extend(block.args)
        try:
            for k, op in enumerate(block.ops):
                if op.parent is not block:
                    raise self.fail(op, f"op's parent link does not point to its block ({owner})")
                opdef = OPS.get(op.name)
                if opdef is not None and opdef.has(TERMINATOR) and k != len(block.ops) - 1:
                    raise self.fail(op, f"terminator '{op.name}' must be the last op of its "
                                        f"block ({owner}), but {len(block.ops) - 1 - k} op(s) "
                                        "follow it")
                self.op(op)
                self.visible.update(op.results)
                added.extend(op.results)
            last = block.ops[-1] if block.ops else None
            if last is None:
                raise IRError(f"{self.where}: {owner} is empty; it must end in "
                              f"{_names(terminators)}")
            if terminators is None:
                ok = OPS.get(last.name) is not None and OPS[last.name].has(TERMINATOR)
            else:
                ok = last.name in terminators
            if not ok:
                raise self.fail(last, f"{owner} must end in {_names(terminators)}, "
                                      f"not '{last.name}'")
        finally:
            self.visible.difference_update(added)

    def op(self, op: Operation) -> None:
        if op in self.seen_ops:
            raise self.fail(op, "this op object appears twice in the IR (insert a clone)")
        self.seen_ops.add(op)
        opdef = OPS.get(op.name)
        if opdef is None:
            raise self.fail(op, f"unknown op '{op.name}' (not in the catalog naiad.ir.ops.OPS)")
        n = len(op.operands)
        if not opdef.operand_count_ok(n):
            raise self.fail(op, f"takes {_count(opdef.operands)} operand(s), got {n}")
        if opdef.results is not None and len(op.results) != opdef.results:
            raise self.fail(op, f"has {opdef.results} result(s), got {len(op.results)}")
        if len(op.regions) != opdef.regions:
            raise self.fail(op, f"has {opdef.regions} region(s), got {len(op.regions)}")
        missing = [a for a in opdef.required_attrs if a not in op.attrs]
        if missing:
            raise self.fail(op, f"missing required attribute(s) {', '.join(missing)}")
        for i, r in enumerate(op.results):
            if r.owner is not op or r.index != i:
                raise self.fail(op, f"result #{i} is not linked to this op")
            problem = _type_problem(r.type)
            if problem:
                raise self.fail(op, f"result #{i} type {r.type}: {problem}")
        for i, v in enumerate(op.operands):
            self.operand_count += 1
            if v not in self.visible:
                raise self.fail(op, f"operand #{i} {self.why_not_visible(v, op)}")
        terms = EXPECTED_TERMINATORS.get(op.name)
        for ri, region in enumerate(op.regions):
            if region.parent is not op or region.block.parent is not region:
                raise self.fail(op, f"region #{ri}'s parent links are broken")
            self.block(region.block, (terms[ri],) if terms else None,
                       f"region #{ri} of '{op.name}'")
        for rule in _RULES.get(op.name, ()):
            try:
                problem = rule(op, self.ctx)
            except (_Problem, IRError) as e:
                problem = str(e)
            if problem:
                raise self.fail(op, problem)

    def why_not_visible(self, v: Value, user: Operation) -> str:
        owner = v.owner
        if isinstance(owner, Operation):
            if owner.parent is None:
                return f"is a result of '{owner.name}', an op that is no longer in the IR"
            if owner is user or owner.is_ancestor_of(user):
                return (f"is a result of the enclosing '{owner.name}', which is not defined "
                        "inside its own regions")
            if owner.parent in _enclosing_blocks(user):
                return (f"is used before its definition (by '{owner.name}', later in this or "
                        "an enclosing block)")
            return (f"is defined by '{owner.name}' inside a region that does not enclose "
                    "this use (it does not dominate it)")
        if isinstance(owner, Block):
            if any(owner is fn.body.block for fn in (self.ctx.module.functions.values()
                                                     if self.ctx.module else ())):
                return "is an argument of another function"
            return "is a block argument of a region that does not enclose this use"
        return "is not an SSA value of this IR"

    def check_uses(self, fn: Function) -> None:
        """Use-lists and operands agree: every recorded use is a live op of this function that
        really uses the value there, and every operand is recorded (linear time, as passes on
        big kernels run this often)."""
        values = set(self.defined)
        values.update(r for op in self.seen_ops for r in op.results)
        recorded, distinct = 0, set()
        for v in values:
            for user, idx in v.uses:
                if user not in self.seen_ops:
                    raise IRError(f"{self.where}: a value of type {v.type} has a stale use by "
                                  f"'{user.name}', an op no longer in the function (erase ops "
                                  "with Operation.erase() or drop_operands())")
                if idx >= len(user.operands) or user.operands[idx] is not v:
                    raise IRError(f"{self.where}: use-list of a value of type {v.type} says "
                                  f"'{user.name}' uses it as operand #{idx}, which it does not\n"
                                  f"{_op_text(user)}")
                recorded += 1
                distinct.add((user, idx))
        if recorded == len(distinct) == self.operand_count:
            return
        for op in self.seen_ops:  # some operand is missing from its use-list (or listed twice)
            for i, v in enumerate(op.operands):
                n = sum(1 for use in v.uses if use == (op, i))
                if n != 1:
                    raise IRError(f"{self.where}: '{op.name}': operand #{i} appears {n} times in "
                                  f"its value's use-list (keep them in sync with set_operand)\n"
                                  f"{_op_text(op)}")


def _enclosing_blocks(op: Operation) -> list[Block]:
    blocks = []
    while op is not None and op.parent is not None:
        blocks.append(op.parent)
        op = op.parent_op
    return blocks


def _op_text(op: Operation, max_lines: int = 12) -> str:
    lines = print_op(op).splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines - 1] + ["  ..."]
    return "\n".join("    " + ln for ln in lines)


def _names(terminators: tuple[str, ...] | None) -> str:
    if terminators is None:
        return "a terminator"
    return " or ".join(f"'{t}'" for t in terminators)


def _count(spec) -> str:
    if isinstance(spec, int):
        return str(spec)
    lo, hi = spec
    return f"at least {lo}" if hi is None else f"{lo} to {hi}"


# -- helpers for the rules ---------------------------------------------------------------------

def require(cond: bool, message: str) -> None:
    if not cond:
        raise _Problem(message)


def _is_int(t: Type) -> bool:
    return isinstance(t.scalar, ScalarType) and t.scalar.is_int


def _is_float(t: Type) -> bool:
    return isinstance(t.scalar, ScalarType) and t.scalar.is_float


def _is_ptr(t: Type) -> bool:
    return isinstance(t.scalar, PointerType)


def _is_i1(t: Type) -> bool:
    return t.scalar == i1


def _rank(t: Type) -> int:
    return len(t.shape)


def _shape_str(t: Type) -> str:
    return "scalar" if not t.shape else "x".join(map(str, t.shape))


def _same_shape(a: Type, b: Type) -> bool:
    """Same shape and, for tensors, the same layout (GPU IR); scalars match scalars."""
    if isinstance(a, TensorType) != isinstance(b, TensorType):
        return False
    return a.shape == b.shape and getattr(a, "layout", None) == getattr(b, "layout", None)


def _shaped_like(t: Type, shape: tuple[int, ...], element: Type) -> bool:
    """``t`` has this shape (scalar when empty) and element, whatever its layout."""
    if not shape:
        return t == element
    return isinstance(t, TensorType) and t.shape == tuple(shape) and t.element == element


def _operand_types(op: Operation) -> list[Type]:
    return [v.type for v in op.operands]


def _result_types(op: Operation) -> list[Type]:
    return [r.type for r in op.results]


def _types_str(types: Iterable[Type]) -> str:
    types = list(types)
    return "(" + ", ".join(str(t) for t in types) + ")"


def _py(value: Any) -> Any:
    """numpy scalars (from constant folding) checked as the Python numbers they print as."""
    return value.item() if isinstance(value, np.generic) else value


def _int_attr(op: Operation, key: str) -> int:
    v = _py(op.attrs.get(key))
    require(isinstance(v, int) and not isinstance(v, bool),
            f"attribute {key} must be an integer, got {v!r}")
    return v


def _one_type(op: Operation, what: str = "operands") -> Type:
    types = _operand_types(op)
    require(all(t == types[0] for t in types),
            f"{what} must all have one type, got {_types_str(types)}")
    return types[0]


def _terminator(op: Operation, region: int) -> Operation:
    return op.regions[region].block.ops[-1]


def _check_block_args(op: Operation, region: int, expected: list[Type], what: str) -> None:
    got = [a.type for a in op.regions[region].block.args]
    require(got == expected, f"region #{region} block arguments {_types_str(got)} must be "
                             f"{what} {_types_str(expected)}")


def _check_yield(op: Operation, region: int, expected: list[Type], what: str) -> None:
    term = _terminator(op, region)
    got = _operand_types(term)
    require(got == expected, f"region #{region} '{term.name}' gives {_types_str(got)} but "
                             f"{what} {_types_str(expected)}")


# -- rules: constants, ids, ranges -------------------------------------------------------------

@_rule("constant")
def _constant(op, ctx):
    t = op.results[0].type
    value = _py(op.attrs["value"])
    elem = t.scalar
    if isinstance(elem, PointerType):
        require(isinstance(value, int) and not isinstance(value, bool),
                f"a pointer constant's value must be an integer, got {value!r}")
        return
    require(isinstance(value, (int, float)),
            f"value must be a number or bool, got {type(value).__name__} {value!r}")
    if elem.is_float:
        return
    require(not isinstance(value, float), f"integer constant of type {elem} has float value "
                                          f"{value!r}")
    if elem == i1:
        require(value in (0, 1), f"i1 constant must be true/false (or 0/1), got {value!r}")
        return
    bits = elem.bitwidth  # signed and unsigned spellings of a bit pattern are both accepted
    require(-(1 << (bits - 1)) <= value < (1 << bits),
            f"value {value} does not fit in {bits}-bit {elem}")


@_rule("program_id", "num_programs")
def _grid_query(op, ctx):
    axis = _int_attr(op, "axis")
    require(axis in (0, 1, 2), f"axis must be 0, 1 or 2, got {axis}")
    require(op.results[0].type == ScalarType("i32"),
            f"result must be i32, got {op.results[0].type}")


@_rule("make_range")
def _make_range(op, ctx):
    start, end = _int_attr(op, "start"), _int_attr(op, "end")
    require(end > start, f"end ({end}) must be greater than start ({start})")
    n = end - start
    require(n & (n - 1) == 0, f"length end - start = {n} must be a power of two")
    t = op.results[0].type
    require(_shaped_like(t, (n,), ScalarType("i32")),
            f"result must be tensor<{n}xi32>, got {t}")


# -- rules: shape ops ----------------------------------------------------------------------------

@_rule("splat")
def _splat(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    require(not isinstance(src, TensorType), f"operand must be a scalar, got {src}")
    require(isinstance(res, TensorType), f"result must be a tensor, got {res}")
    require(res.element == src, f"result element {res.element} must be the operand type {src}")


@_rule("broadcast")
def _broadcast(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    require(isinstance(src, TensorType) and isinstance(res, TensorType),
            f"operand and result must be tensors (use splat for scalars), got {src} -> {res}")
    require(src.element == res.element, f"element types differ: {src.element} -> {res.element}")
    require(_rank(src) == _rank(res), f"rank must stay the same: {_shape_str(src)} -> "
                                      f"{_shape_str(res)}")
    for d, (a, b) in enumerate(zip(src.shape, res.shape)):
        require(a == b or a == 1, f"dimension {d} can only grow from 1: "
                                  f"{_shape_str(src)} -> {_shape_str(res)}")


@_rule("expand_dims")
def _expand_dims(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    axis = _int_attr(op, "axis")
    require(0 <= axis <= _rank(src), f"axis {axis} is out of range for rank {_rank(src)}")
    shape = src.shape[:axis] + (1,) + src.shape[axis:]
    require(_shaped_like(res, shape, src.scalar),
            f"result must have shape {'x'.join(map(str, shape))} and element {src.scalar}, "
            f"got {res}")


@_rule("reshape")
def _reshape(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    require(isinstance(src, TensorType) and isinstance(res, TensorType),
            f"operand and result must be tensors, got {src} -> {res}")
    require(src.element == res.element, f"element types differ: {src.element} -> {res.element}")
    require(src.numel == res.numel, f"element count changes: {_shape_str(src)} ({src.numel}) -> "
                                    f"{_shape_str(res)} ({res.numel})")


@_rule("trans")
def _trans(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    order = op.attrs["order"]
    require(isinstance(order, (list, tuple)), f"order must be a list of integers, got {order!r}")
    order = [_py(o) for o in order]
    require(all(isinstance(o, int) for o in order), f"order must be a list of integers, got "
                                                    f"{order!r}")
    require(isinstance(src, TensorType), f"operand must be a tensor, got {src}")
    require(sorted(order) == list(range(_rank(src))),
            f"order {order} is not a permutation of 0..{_rank(src) - 1}")
    shape = tuple(src.shape[o] for o in order)
    require(_shaped_like(res, shape, src.element),
            f"result must have shape {'x'.join(map(str, shape))}, got {res}")


@_rule("gather")
def _gather(op, ctx):
    src, index = op.operands[0].type, op.operands[1].type
    res = op.results[0].type
    require(isinstance(src, TensorType) and isinstance(index, TensorType),
            f"source and index must be tensors, got {src} and {index}")
    require(_is_int(index) and index.scalar.bitwidth > 1,
            f"index must be an integer tensor, got {index}")
    axis = _py(op.attrs["axis"])
    require(isinstance(axis, int) and 0 <= axis < _rank(src),
            f"axis must be in [0, {_rank(src)}), got {axis!r}")
    require(_rank(index) == _rank(src) and all(
        index.shape[d] == src.shape[d] for d in range(_rank(src)) if d != axis),
        f"index shape {_shape_str(index)} must match the source {_shape_str(src)} off the axis")
    require(_shaped_like(res, index.shape, src.element),
            f"result must have the index's shape and the source's element, got {res}")


@_rule("histogram")
def _histogram(op, ctx):
    x = op.operands[0].type
    require(isinstance(x, TensorType) and _rank(x) == 1,
            f"input must be a 1-D tensor, got {x}")
    require(_is_int(x) and x.scalar.bitwidth > 1, f"input must be an integer tensor, got {x}")
    if len(op.operands) > 1:
        m = op.operands[1].type
        require(_is_i1(m) and _same_shape(m, x),
                f"mask must be an i1 tensor of the input's shape and layout, got {m}")
    bins = _int_attr(op, "num_bins")
    require(bins >= 1, f"num_bins must be at least 1, got {bins}")
    require(_shaped_like(op.results[0].type, (bins,), ScalarType("i32")),
            f"result must be tensor<{bins}xi32>, got {op.results[0].type}")


@_rule("join")
def _join(op, ctx):
    t = _one_type(op)
    shape = t.shape + (2,)
    require(_shaped_like(op.results[0].type, shape, t.scalar),
            f"result must have shape {'x'.join(map(str, shape))} and element {t.scalar}, "
            f"got {op.results[0].type}")


@_rule("split")
def _split(op, ctx):
    src = op.operands[0].type
    require(isinstance(src, TensorType) and src.shape[-1] == 2,
            f"operand's last dimension must be 2, got {src}")
    for r in op.results:
        require(_shaped_like(r.type, src.shape[:-1], src.element),
                f"each result must drop the last dimension of {src}, got {r.type}")
    require(op.results[0].type == op.results[1].type, "the two results must have one type")


@_rule("hint")
def _hint(op, ctx):
    require(op.results[0].type == op.operands[0].type,
            f"result type {op.results[0].type} must equal the operand type "
            f"{op.operands[0].type}")


# -- rules: pointers and memory --------------------------------------------------------------

@_rule("addptr")
def _addptr(op, ctx):
    p, off = _operand_types(op)
    require(_is_ptr(p), f"first operand must be a pointer (or tensor of pointers), got {p}")
    require(_is_int(off), f"offset must be an integer (or tensor of integers), got {off}")
    require(_same_shape(p, off), f"pointer and offset shapes differ: {p} vs {off}")
    require(op.results[0].type == p, f"result type {op.results[0].type} must equal the pointer "
                                     f"type {p}")


def _check_mask(ptr: Type, mask: Type) -> None:
    require(_is_i1(mask) and _same_shape(ptr, mask),
            f"mask must be i1 with the pointer's shape ({_shape_str(ptr)}), got {mask}")


@_rule("load")
def _load(op, ctx):
    types = _operand_types(op)
    p = types[0]
    require(_is_ptr(p), f"pointer operand must be a pointer (or tensor of pointers), got {p}")
    want = with_element(p, p.scalar.pointee)
    res = op.results[0].type
    require(res == want, f"result must be {want} (the pointee in the pointer's shape), got {res}")
    if len(types) > 1:
        _check_mask(p, types[1])
    if len(types) > 2:
        require(types[2] == res, f"other must have the result type {res}, got {types[2]}")


@_rule("store")
def _store(op, ctx):
    types = _operand_types(op)
    p, val = types[0], types[1]
    require(_is_ptr(p), f"pointer operand must be a pointer (or tensor of pointers), got {p}")
    want = with_element(p, p.scalar.pointee)
    require(val == want, f"value must be {want} (the pointee in the pointer's shape), got {val}")
    if len(types) > 2:
        _check_mask(p, types[2])


@_rule("atomic_rmw")
def _atomic_rmw(op, ctx):
    kind = op.attrs["kind"]
    require(kind in ATOMIC_KINDS, f"kind must be one of {', '.join(ATOMIC_KINDS)}, got {kind!r}")
    types = _operand_types(op)
    p, val = types[0], types[1]
    require(_is_ptr(p), f"pointer operand must be a pointer (or tensor of pointers), got {p}")
    want = with_element(p, p.scalar.pointee)
    require(val == want, f"value must be {want} (the pointee in the pointer's shape), got {val}")
    require(op.results[0].type == val, f"result must be {val}, got {op.results[0].type}")
    if kind in ("and", "or", "xor"):
        require(_is_int(val), f"atomic {kind} needs an integer pointee, got {val.scalar}")
    if len(types) > 2:
        _check_mask(p, types[2])


@_rule("atomic_cas")
def _atomic_cas(op, ctx):
    p, cmp, val = _operand_types(op)
    require(_is_ptr(p), f"pointer operand must be a pointer (or tensor of pointers), got {p}")
    want = with_element(p, p.scalar.pointee)
    require(cmp == want and val == want,
            f"compare and new values must be {want}, got {cmp} and {val}")
    require(op.results[0].type == want, f"result must be {want}, got {op.results[0].type}")


@_rule("atomic_poll")
def _atomic_poll(op, ctx):
    types = _operand_types(op)
    p, expected = types[0], types[1]
    require(_is_ptr(p), f"pointer operand must be a pointer (or tensor of pointers), got {p}")
    want = with_element(p, p.scalar.pointee)
    require(expected == want, f"expected value must be {want}, got {expected}")
    require(_is_int(want) and p.scalar.pointee.bitwidth in (16, 32, 64),
            f"atomic_poll polls 16-, 32- or 64-bit integers, got {p.scalar.pointee}")
    if len(types) > 2:
        require(types[2] == u64, f"timeout must be a scalar u64, got {types[2]}")
    require(op.results[0].type == with_element(p, i1),
            f"result must be {with_element(p, i1)}, got {op.results[0].type}")
    require(op.attrs.get("sem", "acquire") in ("acquire", "relaxed"),
            f"sem must be acquire or relaxed, got {op.attrs.get('sem')!r}")


# -- rules: elementwise ----------------------------------------------------------------------

def _elementwise(op: Operation, kind_ok: Callable[[Type], bool] | None, kinds: str) -> Type:
    t = _one_type(op)
    if kind_ok is not None:
        require(kind_ok(t), f"operands must be {kinds}, got {t}")
    res = op.results[0].type
    require(res == t, f"result type {res} must equal the operand type {t}")
    return t


def _number(t: Type) -> bool:
    return _is_int(t) or _is_float(t)


@_rule("add", "sub", "mul", "div", "rem", "max", "min", "neg", "abs")
def _arith(op, ctx):
    _elementwise(op, _number, "integers or floats (use addptr for pointers)")
    if "propagate_nan" in op.attrs:
        require(isinstance(op.attrs["propagate_nan"], bool),
                f"propagate_nan must be true or false, got {op.attrs['propagate_nan']!r}")
    _approx_attr(op)


def _approx_attr(op) -> None:
    """``approx`` (div, exp): a backend may use Triton's fast version (docs/language.md)."""
    if "approx" in op.attrs:
        require(op.name in ("div", "exp"), f"'{op.name}' takes no approx attribute")
        require(isinstance(op.attrs["approx"], bool),
                f"approx must be true or false, got {op.attrs['approx']!r}")


@_rule("and", "or", "xor", "shl", "shr", "not", "umulhi")
def _int_only(op, ctx):
    _elementwise(op, _is_int, "integers (i1 included)")


_FLOAT_ONLY = tuple(n for n in MATH_UNARY if n != "abs") + ("fma",)


@_rule(*_FLOAT_ONLY)
def _float_only(op, ctx):
    _elementwise(op, _is_float, "floats")
    _approx_attr(op)


@_rule("cmp")
def _cmp(op, ctx):
    pred = op.attrs["pred"]
    require(pred in CMP_PREDICATES, f"pred must be one of {', '.join(CMP_PREDICATES)}, "
                                    f"got {pred!r}")
    t = _one_type(op)
    want = with_element(t, i1)
    require(op.results[0].type == want, f"result must be {want}, got {op.results[0].type}")


@_rule("select")
def _select(op, ctx):
    cond, a, b = _operand_types(op)
    require(a == b, f"the two choices must have one type, got {a} and {b}")
    require(_is_i1(cond) and _same_shape(cond, a),
            f"condition must be i1 with the choices' shape ({_shape_str(a)}), got {cond}")
    require(op.results[0].type == a, f"result must be {a}, got {op.results[0].type}")


@_rule("cast")
def _cast(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    require(_same_shape(src, res), f"cast keeps the shape: {src} -> {res}")
    require(not ((_is_ptr(src) and _is_float(res)) or (_is_float(src) and _is_ptr(res))),
            f"no cast between pointers and floats: {src} -> {res}")


@_rule("bitcast")
def _bitcast(op, ctx):
    src, res = op.operands[0].type, op.results[0].type
    require(_same_shape(src, res), f"bitcast keeps the shape: {src} -> {res}")
    require(src.scalar.bitwidth == res.scalar.bitwidth,
            f"bitcast needs equal bit widths: {src.scalar} ({src.scalar.bitwidth}) -> "
            f"{res.scalar} ({res.scalar.bitwidth})")


# -- rules: reductions, scans, dot -------------------------------------------------------------

def _combine_region(op: Operation) -> list[Type]:
    """Shared checks of reduce/scan: N same-shaped tensors, axis in range, 2N scalar block args
    (accumulators then new elements) and a yield of N scalars. Returns the operand types."""
    types = _operand_types(op)
    for t in types:
        require(isinstance(t, TensorType), f"operands must be tensors, got {t}")
        require(t.shape == types[0].shape, f"operands must share one shape, got "
                                           f"{_types_str(types)}")
    axis = _int_attr(op, "axis")
    require(0 <= axis < _rank(types[0]), f"axis {axis} is out of range for rank "
                                         f"{_rank(types[0])}")
    elems = [t.scalar for t in types]
    _check_block_args(op, 0, elems + elems, "the elements twice (accumulators, then new values)")
    _check_isolated(op)
    _check_yield(op, 0, elems, "the combine function must give the elements")
    require(len(op.results) == len(types),
            f"has {len(types)} operand(s) but {len(op.results)} result(s)")
    return types


def _check_isolated(op: Operation) -> None:
    """A combine function sees only its block arguments: it runs per pair of elements (on the
    reference, across lanes on a GPU), where a value from outside has no defined meaning."""
    inside: set[Value] = set()
    for region in op.regions:
        for inner in region.block.ops:
            for nested in inner.walk():
                inside.update(nested.results)
                for r in nested.regions:
                    inside.update(r.block.args)
        inside.update(region.block.args)
    for region in op.regions:
        for inner in region.block.ops:
            for nested in inner.walk():
                for k, v in enumerate(nested.operands):
                    require(v in inside, f"its combine region captures a value defined "
                                         f"outside it (operand #{k} of '{nested.name}' inside "
                                         f"the region); a combine function may use only its "
                                         f"block arguments and values it defines")


@_rule("reduce")
def _reduce(op, ctx):
    types = _combine_region(op)
    axis = op.attrs["axis"]
    for t, r in zip(types, op.results):
        shape = t.shape[:axis] + t.shape[axis + 1:]
        require(_shaped_like(r.type, shape, t.scalar),
                f"result for {t} reduced along axis {axis} must have shape "
                f"{'x'.join(map(str, shape)) or 'scalar'} and element {t.scalar}, got {r.type}")


@_rule("scan")
def _scan(op, ctx):
    types = _combine_region(op)
    require(isinstance(op.attrs["reverse"], bool),
            f"reverse must be true or false, got {op.attrs['reverse']!r}")
    for t, r in zip(types, op.results):
        require(_shaped_like(r.type, t.shape, t.scalar),
                f"result must have the operand's shape and element ({t}), got {r.type}")


@_rule("dot")
def _dot(op, ctx):
    a, b, acc = _operand_types(op)
    for name, t in (("a", a), ("b", b), ("acc", acc)):
        require(isinstance(t, TensorType) and _rank(t) in (2, 3),
                f"{name} must be a 2-D (or batched 3-D) tensor, got {t}")
    require(_rank(a) == _rank(b) == _rank(acc), f"a, b and acc must have one rank, got "
                                                f"{a}, {b}, {acc}")
    require(_number(a) and a.scalar == b.scalar,
            f"a and b must share one numeric element type, got {a.scalar} and {b.scalar}")
    *batch, m, k = a.shape
    *batch_b, k2, n = b.shape
    require(k == k2, f"inner dimensions differ: a is {_shape_str(a)}, b is {_shape_str(b)}")
    require(batch == batch_b and tuple(acc.shape) == (*batch, m, n),
            f"acc must be {'x'.join(map(str, (*batch, m, n)))} for a {_shape_str(a)} times b "
            f"{_shape_str(b)}, got {_shape_str(acc)}")
    require(op.results[0].type == acc, f"result must have acc's type {acc}, got "
                                       f"{op.results[0].type}")
    prec = op.attrs.get("input_precision")
    require(prec in (None, "tf32", "tf32x3", "ieee"),
            f"input_precision must be tf32, tf32x3 or ieee, got {prec!r}")


# -- rules: control flow -----------------------------------------------------------------------

@_rule("for")
def _for(op, ctx):
    lb, ub, step, *inits = _operand_types(op)
    require(not isinstance(lb, TensorType) and _is_int(lb) and lb == ub == step,
            f"lower bound, upper bound and step must be scalar integers of one type, got "
            f"{lb}, {ub}, {step}")
    require(_result_types(op) == inits, f"results {_types_str(_result_types(op))} must match "
                                        f"the initial values {_types_str(inits)}")
    _check_block_args(op, 0, [lb] + inits, "the induction variable then the iter args")
    _check_yield(op, 0, inits, "the loop carries")


@_rule("while")
def _while(op, ctx):
    inits = _operand_types(op)
    _check_block_args(op, 0, inits, "the initial values")
    cond = _terminator(op, 0)
    ctypes = _operand_types(cond)
    require(ctypes[0] == i1, f"'condition' needs a scalar i1 first operand, got {ctypes[0]}")
    carried = ctypes[1:]
    _check_block_args(op, 1, carried, "the values passed by 'condition'")
    _check_yield(op, 1, inits, "the loop carries (the initial values' types)")
    require(_result_types(op) == carried, f"results {_types_str(_result_types(op))} must match "
                                          f"the values passed by 'condition' "
                                          f"{_types_str(carried)}")


@_rule("if")
def _if(op, ctx):
    cond = op.operands[0].type
    require(cond == i1, f"condition must be a scalar i1, got {cond}")
    results = _result_types(op)
    for r in (0, 1):
        args = op.regions[r].block.args
        require(not args, f"region #{r} (a branch) takes no block arguments, got "
                          f"{_types_str(a.type for a in args)}")
        _check_yield(op, r, results, "the results are")


@_rule("condition")
def _condition(op, ctx):
    parent = op.parent_op
    require(parent is not None and parent.name == "while" and op.parent is
            parent.regions[0].block, "'condition' may only end the first region of 'while'")


@_rule("yield")
def _yield(op, ctx):
    require(op.parent_op is not None, "'yield' may only end a region, not the function body")


@_rule("return")
def _return(op, ctx):
    require(op.parent is ctx.function.body.block,
            "'return' may only end the function body, not a region (use 'yield')")
    got, want = _operand_types(op), list(ctx.function.result_types)
    require(got == want, f"returns {_types_str(got)} but function @{ctx.function.name} "
                         f"declares {_types_str(want)}")


@_rule("call")
def _call(op, ctx):
    callee = op.attrs["callee"]
    require(isinstance(callee, str), f"callee must be a function name string, got {callee!r}")
    if ctx.module is None:
        return  # a detached function: nothing to look the callee up in
    fn = ctx.module.functions.get(callee)
    require(fn is not None, f"callee @{callee} is not a function of this module")
    got, want = _operand_types(op), fn.arg_types
    require(got == want, f"arguments {_types_str(got)} do not match @{callee}'s parameters "
                         f"{_types_str(want)}")
    require(_result_types(op) == list(fn.result_types),
            f"results {_types_str(_result_types(op))} do not match @{callee}'s result types "
            f"{_types_str(fn.result_types)}")
