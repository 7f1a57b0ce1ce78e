"""Canonicalize: local rewrites that make the IR smaller and more regular, to a fixed point.

* constant folding of every elementwise op with exact per-type semantics (:mod:`.scalar_eval`),
  and of shape ops (splat/broadcast/expand_dims/reshape/trans) applied to constants;
* algebraic identities: ``x+0 x-0 x*1 x/1 x|0 x^0 x<<0 x>>0 -> x`` and ``x*0 x&0 -> 0`` on integers;
  on floats only the IEEE-exact ones (``x + -0.0``, ``x - 0.0``, ``x * 1.0``, ``x / 1.0``);
  ``select`` with a constant or with equal arms; ``max/min(x, x)``, ``x & x``, ``x | x``;
* casts: to the same type, of constants (honouring ``fp_downcast_rounding="rtz"``), and
  ``cast(cast(x))`` when the inner cast is lossless and the outer one rounds to nearest;
* shape ops of splats become splats, no-op broadcast/reshape/trans vanish;
* an elementwise op whose operands are all splats becomes one scalar op and a splat;
* pointers: ``addptr(p, 0) -> p``, ``addptr(addptr(p, a), b) -> addptr(p, a + b)`` (same offset
  type; like Triton, offsets are assumed not to overflow their type);
* arguments with ``arg_attrs {"equal_to": 1}`` are replaced by ``constant 1``;
* ``if`` with a constant condition is inlined; a ``for`` with no trips is replaced by its inits; a
  ``while`` whose condition is constant false runs its "before" region once, inline;
* pure ops left without uses are erased (full dead-code elimination is :mod:`.dce`'s job).
"""
from __future__ import annotations

import math

from ..ir.core import Function, Module, Operation, Value
from ..ir.ops import ELEMENTWISE, OPS
from ..ir.types import ScalarType
from . import scalar_eval as se
from .rewrite import (constant_value, create_constant, create_op, inline_block_before, is_pure,
                      replace_op)

MAX_SWEEPS = 16

_BINARY = frozenset({"add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max",
                     "min", "umulhi", "cmp"})
_UNARY = frozenset({"neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin",
                    "cos", "erf", "floor", "ceil"})
_SHAPE = frozenset({"splat", "broadcast", "expand_dims", "reshape", "trans"})
_MANTISSA = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
_WIDENING_FLOATS = {("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"),
                    ("f32", "f64")}


def canonicalize(module: Module, ctx=None) -> bool:
    """Canonicalize every function of ``module`` in place; returns True when anything changed."""
    changed = False
    for fn in module.functions.values():
        changed |= canonicalize_function(fn)
    return changed


def canonicalize_function(fn: Function) -> bool:
    changed = _replace_equal_to_args(fn)
    for _ in range(MAX_SWEEPS):
        rw = _Rewriter()
        for op in list(fn.walk()):
            if op in rw.erased or op.parent is None:
                continue
            if _rewrite(op, rw):
                rw.changed = True
        if not rw.changed:
            break
        changed = True
    return changed


class _Rewriter:
    """Records what a sweep erased, so ops collected before a rewrite are skipped after it."""

    def __init__(self):
        self.erased: set[Operation] = set()
        self.changed = False

    def replace(self, op: Operation, values) -> bool:
        self.erased.update(op.walk())
        replace_op(op, list(values))
        return True

    def erase(self, op: Operation) -> bool:
        self.erased.update(op.walk())
        op.erase()
        return True


def _replace_equal_to_args(fn: Function) -> bool:
    changed = False
    block = fn.body.block
    for arg, attrs in zip(fn.args, fn.arg_attrs):
        if attrs.get("equal_to") != 1 or not arg.uses:
            continue
        st = arg.type.scalar
        if not isinstance(st, ScalarType) or arg.type.is_tensor:
            continue
        op = Operation("constant", [], [arg.type], {"value": se.normalize(1, arg.type)})
        op.results[0].name_hint = arg.name_hint
        block.insert(0, op)
        arg.replace_all_uses_with(op.results[0])
        changed = True
    return changed


# -- dispatch ----------------------------------------------------------------------------------
def _rewrite(op: Operation, rw: _Rewriter) -> bool:
    name = op.name
    if not op.results:
        return name in ("if", "for", "while") and _HANDLERS[name](op, rw)
    if is_pure(op) and not op.regions and all(not r.uses for r in op.results):
        return rw.erase(op)
    handler = _HANDLERS.get(name)
    if handler is not None and handler(op, rw):
        return True
    d = OPS.get(name)
    if d is not None and d.has(ELEMENTWISE) and op.result.type.is_tensor:
        return _elementwise_of_splats(op, rw)
    return False


def _const_result(op: Operation, rw: _Rewriter, value) -> bool:
    if value is None:
        return False
    rtype = op.results[0].type
    value = se.normalize(value, rtype)
    if value is None:
        return False
    return rw.replace(op, [create_constant(value, rtype, op, op.results[0].name_hint)])


def _scalar_type(v: Value) -> ScalarType | None:
    st = v.type.scalar
    return st if isinstance(st, ScalarType) else None


# -- elementwise arithmetic ---------------------------------------------------------------------
def _binary(op: Operation, rw: _Rewriter) -> bool:
    a, b = op.operands
    t = _scalar_type(a)
    if t is None:
        return False
    ca, cb = constant_value(a), constant_value(b)
    if ca is not None and cb is not None:
        return _const_result(op, rw, se.eval_binary(op.name, ca, cb, t, op.attrs))
    if op.name == "cmp":
        return False
    # put a constant on the right of commutative ops, so one rule set covers both sides
    if ca is not None and op.name in ("add", "mul", "and", "or", "xor", "max", "min"):
        a, b, ca, cb = b, a, cb, ca
    return _identity(op, rw, a, b, cb, t)


def _identity(op: Operation, rw: _Rewriter, x: Value, y: Value, c, t: ScalarType) -> bool:
    name = op.name
    if x is y and name in ("and", "or", "max", "min"):
        return rw.replace(op, [x])
    if x is y and t.is_int and name in ("sub", "xor"):
        return _const_result(op, rw, 0)
    if c is None:
        return False
    if t.is_int:
        if c == 0 and name in ("add", "sub", "or", "xor", "shl", "shr"):
            return rw.replace(op, [x])
        if c == 0 and name in ("mul", "and"):
            return _const_result(op, rw, 0)
        if c == 1 and name in ("mul", "div") and not t.is_bool:
            return rw.replace(op, [x])
        if name == "and" and c == se.wrap_int(-1, t):
            return rw.replace(op, [x])
        if name == "or" and c == se.wrap_int(-1, t):
            return _const_result(op, rw, c)
        return False
    if t.is_float:
        negzero = c == 0 and math.copysign(1.0, c) < 0
        poszero = c == 0 and not negzero
        if (name == "add" and negzero) or (name == "sub" and poszero):
            return rw.replace(op, [x])
        if c == 1.0 and name in ("mul", "div"):
            return rw.replace(op, [x])
    return False


def _unary(op: Operation, rw: _Rewriter) -> bool:
    (a,) = op.operands
    t = _scalar_type(a)
    ca = constant_value(a)
    if t is None or ca is None:
        inner = a.defining_op
        if inner is not None and inner.name == op.name and op.name in ("neg", "not"):
            return rw.replace(op, [inner.operands[0]])  # -(-x), ~~x
        return False
    return _const_result(op, rw, se.eval_unary(op.name, ca, t))


def _fma(op: Operation, rw: _Rewriter) -> bool:
    t = _scalar_type(op.operands[0])
    vals = [constant_value(v) for v in op.operands]
    if t is None or any(v is None for v in vals):
        return False
    return _const_result(op, rw, se.eval_fma(*vals, t))


def _select(op: Operation, rw: _Rewriter) -> bool:
    cond, a, b = op.operands
    c = constant_value(cond)
    if c is not None:
        return rw.replace(op, [a if c else b])
    if a is b:
        return rw.replace(op, [a])
    return False


def _lossless(a: ScalarType, b: ScalarType) -> bool:
    """True when every value of type ``a`` converts to ``b`` exactly."""
    if a == b or (a.is_bool and not b.is_bool):
        return True
    if b.is_bool:
        return False
    if a.is_int and b.is_int:
        if a.is_signed:
            return b.is_signed and b.bitwidth >= a.bitwidth
        return b.bitwidth >= a.bitwidth if b.is_unsigned else b.bitwidth > a.bitwidth
    if a.is_int and b.is_float:
        return a.bitwidth - (1 if a.is_signed else 0) <= _MANTISSA[b.name]
    return (a.name, b.name) in _WIDENING_FLOATS


def _cast(op: Operation, rw: _Rewriter) -> bool:
    (x,) = op.operands
    src, dst = _scalar_type(x), _scalar_type(op.result)
    if x.type == op.result.type:
        return rw.replace(op, [x])
    if src is None or dst is None:
        return False
    if src.is_fp8 or dst.is_fp8 or _feeds_from_fp8(x):
        return False  # float8 conversions are the backends' (naiad.ir.float8 rules)
    rounding = op.attrs.get("fp_downcast_rounding")
    cx = constant_value(x)
    if cx is not None:
        return _const_result(op, rw, se.eval_cast(cx, src, dst, rounding))
    inner = x.defining_op
    # cast(cast(y)) -> cast(y) only for the default rounding: an "rtz" downcast of a widened
    # integer is not the integer's (nearest-even) conversion
    if inner is not None and inner.name == "cast" and rounding in (None, "rtne") \
            and inner.attrs.get("fp_downcast_rounding") in (None, "rtne"):
        y = inner.operands[0]
        ysrc = _scalar_type(y)
        if ysrc is not None and _lossless(ysrc, src):
            if y.type == op.result.type:
                return rw.replace(op, [y])
            new = create_op("cast", [y], [op.result.type], op)
            return rw.replace(op, [new.result])
    return False


def _feeds_from_fp8(x) -> bool:
    inner = x.defining_op
    if inner is None or inner.name != "cast":
        return False
    t = _scalar_type(inner.operands[0])
    return t is not None and t.is_fp8


def _bitcast(op: Operation, rw: _Rewriter) -> bool:
    (x,) = op.operands
    if x.type == op.result.type:
        return rw.replace(op, [x])
    src, dst = _scalar_type(x), _scalar_type(op.result)
    cx = constant_value(x)
    if src is None or dst is None or cx is None:
        return False
    return _const_result(op, rw, se.eval_bitcast(cx, src, dst))


def _addptr(op: Operation, rw: _Rewriter) -> bool:
    p, off = op.operands
    c = constant_value(off)
    if c == 0 and p.type == op.result.type:
        return rw.replace(op, [p])
    inner = p.defining_op
    if inner is None or inner.name != "addptr":
        return False
    q, off0 = inner.operands
    if off0.type != off.type:
        return False
    if len(p.uses) != 1 and not (constant_value(off0) is not None and c is not None):
        return False  # keep the inner addptr's users sharing it unless everything folds
    total = create_op("add", [off0, off], [off.type], op)
    new = create_op("addptr", [q, total.result], [op.result.type], op)
    return rw.replace(op, [new.result])


# -- shape ops ---------------------------------------------------------------------------------
def _shape(op: Operation, rw: _Rewriter) -> bool:
    (x,) = op.operands
    rtype = op.result.type
    cx = constant_value(x)
    if cx is not None:
        return _const_result(op, rw, cx)
    if op.name in ("broadcast", "reshape") and x.type == rtype:
        return rw.replace(op, [x])
    if op.name == "trans" and list(op.attrs.get("order", ())) == list(range(len(rtype.shape))):
        return rw.replace(op, [x])
    inner = x.defining_op
    if inner is None:
        return False
    if op.name != "splat" and inner.name == "splat":
        new = create_op("splat", [inner.operands[0]], [rtype], op)
        return rw.replace(op, [new.result])
    if op.name in ("broadcast", "reshape") and inner.name == op.name:
        src = inner.operands[0]
        if src.type == rtype:
            return rw.replace(op, [src])
        new = create_op(op.name, [src], [rtype], op, dict(op.attrs))
        return rw.replace(op, [new.result])
    return False


def _elementwise_of_splats(op: Operation, rw: _Rewriter) -> bool:
    """``f(splat a, splat b, const c)`` -> ``splat(f(a, b, c'))``: one scalar op instead of a tile."""
    if len(op.results) != 1:
        return False
    scalars, saw_splat = [], False
    for v in op.operands:
        d = v.defining_op
        if d is not None and d.name == "splat":
            scalars.append(d.operands[0])
            saw_splat = True
        elif constant_value(v) is not None:
            scalars.append(None)
        else:
            return False
    if not saw_splat:
        return False
    for i, v in enumerate(op.operands):
        if scalars[i] is None:
            scalars[i] = create_constant(constant_value(v), v.type.scalar, op)
    rtype = op.result.type
    scalar_op = create_op(op.name, scalars, [rtype.scalar], op, dict(op.attrs))
    splat = create_op("splat", [scalar_op.result], [rtype], op)
    return rw.replace(op, [splat.result])


# -- control flow ------------------------------------------------------------------------------
def _if(op: Operation, rw: _Rewriter) -> bool:
    c = constant_value(op.operands[0])
    if c is None:
        return False
    taken = op.regions[0 if c else 1].block
    values = inline_block_before(taken, op, ())
    return rw.replace(op, values)


def _for(op: Operation, rw: _Rewriter) -> bool:
    lb, ub, step = op.operands[:3]
    clb, cub, cstep = (constant_value(v) for v in (lb, ub, step))
    if clb is None or cub is None or cstep is None or cstep <= 0 or clb < cub:
        return False
    return rw.replace(op, op.operands[3:])


def _while(op: Operation, rw: _Rewriter) -> bool:
    before = op.regions[0].block
    cond_op = before.terminator
    if cond_op is None or cond_op.name != "condition":
        return False
    c = constant_value(cond_op.operands[0])
    if c is None or c:
        return False
    values = inline_block_before(before, op, list(op.operands))
    return rw.replace(op, values[1:])


_HANDLERS = {name: _binary for name in _BINARY}
_HANDLERS.update({name: _unary for name in _UNARY})
_HANDLERS.update({name: _shape for name in _SHAPE})
_HANDLERS.update({
    "fma": _fma, "select": _select, "cast": _cast, "bitcast": _bitcast, "addptr": _addptr,
    "if": _if, "for": _for, "while": _while,
})

