"""Control flow of the code generator: ``if``/``elif``/``else``, the ternary, ``for`` and
``while``.

Compile-time conditions and ``tl.static_range`` resolve in the frontend. Otherwise:
* a dynamic ``if`` becomes an ``if`` op whose results are the variables the branches (re)bind;
  both branches must give such a variable one type (Python numbers adapt, being weakly typed);
  a variable bound in only one branch is not visible after the ``if``;
* a ``for``/``while`` carries every pre-existing variable its body assigns as an iter arg; its
  type must not change across an iteration;
* returns are in tail position (see :func:`~naiad.frontend.analysis.normalize_returns`), so a
  dynamic ``if`` that returns merges the returned values through its results.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ..errors import CompilationError
from ..ir import types as irt
from ..ir.core import Block, Region
from ..language import promotion
from ..language.core import tensor
from ..language.iterators import range as tl_range, static_range
from ..language.semantics import describe, is_number
from .analysis import assigned_names
from .scope import Undefined

_MISSING = object()


@dataclass
class ReturnState:
    """The value of the ``return`` that ended the current path (None: a bare return)."""

    value: Any
    node: ast.AST


def _same_constant(a, b) -> bool:
    if isinstance(a, tensor) or isinstance(b, tensor):
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return a is b


class ControlFlowMixin:
    # -- helpers ------------------------------------------------------------------------------
    def _scalar_condition(self, cond: tensor, what: str) -> tensor:
        if cond.is_block() and cond.numel == 1:    # Triton takes a one-element tensor's value
            from ..language.creation import item

            cond = item(cond, _semantic=self.semantic)
        if cond.is_block():
            raise CompilationError(f"the condition of {what} must be a scalar, got {cond.type}; "
                                   "use tl.where for an elementwise choice")
        return self.semantic.to_bool(cond)

    def _const_in(self, block: Block, value, t: irt.Type) -> tensor:
        with self.builder.at_end_of(block):
            return self.semantic.constant(value, t)

    def _merge_pair(self, what: str, a, b, block_a: Block, block_b: Block):
        """Two values of one variable on two paths, as two tensors of one type (or raise)."""
        if isinstance(a, tensor) and isinstance(b, tensor):
            if a.type != b.type:
                raise CompilationError(f"{what} has type {a.type} on one path and {b.type} on "
                                       "the other; both branches must give it one type")
            return a, b
        if isinstance(a, tensor) and is_number(b):
            promotion.check_scalar_fits(b, a.type.scalar)
            return a, self._const_in(block_b, b, a.type)
        if isinstance(b, tensor) and is_number(a):
            promotion.check_scalar_fits(a, b.type.scalar)
            return self._const_in(block_a, a, b.type), b
        if is_number(a) and is_number(b):
            t = promotion.computation_type(promotion.python_scalar_type(a), False,
                                           promotion.python_scalar_type(b), False)
            return self._const_in(block_a, a, t), self._const_in(block_b, b, t)
        raise CompilationError(f"{what} is {describe(a)} on one path and {describe(b)} on the "
                               "other; a run-time branch cannot choose between these")

    def _emit_if(self, cond: tensor, then_block: Block, else_block: Block, pairs) -> list:
        with self.builder.at_end_of(then_block):
            self.builder.create("yield", [a.handle for a, _ in pairs])
        with self.builder.at_end_of(else_block):
            self.builder.create("yield", [b.handle for _, b in pairs])
        op = self.builder.create("if", [cond.handle], [a.type for a, _ in pairs],
                                 regions=[Region(then_block), Region(else_block)])
        return [tensor(r) for r in op.results]

    def _run_branch(self, stmts, before: dict):
        """Generate ``stmts`` into a new block from the scope ``before``; returns (block, scope
        after, return state)."""
        block = Block()
        self.scope.restore(before)
        self.returned = None
        with self.builder.at_end_of(block):
            self.visit_stmts(stmts)
        return block, self.scope.snapshot(), self.returned

    # -- if -------------------------------------------------------------------------------------
    def visit_If(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            self.visit_stmts(node.body if self._python(bool, cond) else node.orelse)
            return
        c = self._scalar_condition(cond, "an if statement")
        before = self.scope.snapshot()
        then_block, then_scope, then_ret = self._run_branch(node.body, before)
        else_block, else_scope, else_ret = self._run_branch(node.orelse, before)
        self.scope.restore(before)
        self.returned = None
        if then_ret is not None or else_ret is not None:
            self._merge_returns(node, c, then_block, else_block, then_ret, else_ret)
            return
        names = list(then_scope) + [n for n in else_scope if n not in then_scope]
        merged, pairs = [], []
        for name in names:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is e:
                self.scope.locals[name] = t
            elif t is _MISSING or e is _MISSING:
                self.scope.locals[name] = Undefined(
                    f"{name!r} is assigned in only one branch of the if statement at line "
                    f"{self.src.loc(node).line}, so it is not defined after it; assign it "
                    "before the if or in both branches")
            elif isinstance(t, Undefined) or isinstance(e, Undefined):
                self.scope.locals[name] = t if isinstance(t, Undefined) else e
            elif _same_constant(t, e):
                self.scope.locals[name] = t
            elif not (isinstance(t, tensor) or is_number(t)) or \
                    not (isinstance(e, tensor) or is_number(e)):
                self.scope.locals[name] = Undefined(
                    f"{name!r} has different compile-time values in the branches of the "
                    f"run-time if at line {self.src.loc(node).line} ({describe(t)} and "
                    f"{describe(e)}), so it cannot be used after it")
            else:
                try:
                    pairs.append(self._merge_pair(f"variable {name!r}", t, e, then_block,
                                                  else_block))
                except CompilationError as err:
                    raise self.error(err.raw_message, node) from None
                merged.append(name)
        results = self._emit_if(c, then_block, else_block, pairs)
        for name, value in zip(merged, results):
            self.scope.bind(name, value)

    def _merge_returns(self, node, c, then_block, else_block, then_ret, else_ret):
        tv = then_ret.value if then_ret else None
        ev = else_ret.value if else_ret else None
        if (tv is None) != (ev is None):
            raise self.error("this if statement returns a value on one path but not on the "
                             "other; every path of a @jit function must return alike", node)
        if tv is None:
            self._emit_if(c, then_block, else_block, [])
            self.returned = ReturnState(None, node)
            return
        as_tuple = isinstance(tv, tuple)
        t_items = tv if as_tuple else (tv,)
        e_items = ev if isinstance(ev, tuple) else (ev,)
        if isinstance(ev, tuple) != as_tuple or len(t_items) != len(e_items):
            raise self.error("the branches of this if statement return different numbers of "
                             "values", node)
        pairs, slots = [], []
        for i, (t, e) in enumerate(zip(t_items, e_items)):
            if _same_constant(t, e):
                slots.append(("const", t))
                continue
            try:
                pairs.append(self._merge_pair(f"return value #{i}", t, e, then_block,
                                              else_block))
            except CompilationError as err:
                raise self.error(err.raw_message, node) from None
            slots.append(("result", len(pairs) - 1))
        results = self._emit_if(c, then_block, else_block, pairs)
        items = tuple(results[v] if k == "result" else v for k, v in slots)
        self.returned = ReturnState(items if as_tuple else items[0], node)

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body if self._python(bool, cond) else node.orelse)
        c = self._scalar_condition(cond, "a conditional expression")
        then_block, else_block = Block(), Block()
        with self.builder.at_end_of(then_block):
            a = self.visit(node.body)
        with self.builder.at_end_of(else_block):
            b = self.visit(node.orelse)
        if a is None and b is None:     # `tl.store(...) if c else tl.store(...)`: effects only
            self._emit_if(c, then_block, else_block, [])
            return None
        for v in (a, b):
            if not isinstance(v, tensor) and not is_number(v):
                raise CompilationError(f"a run-time conditional expression needs tensors or "
                                       f"numbers on both sides, got {describe(v)}")
        a_weak, b_weak = not isinstance(a, tensor), not isinstance(b, tensor)
        ta = a.type.scalar if not a_weak else promotion.python_scalar_type(a)
        tb = b.type.scalar if not b_weak else promotion.python_scalar_type(b)
        if ta.is_pointer or tb.is_pointer:
            if ta != tb:
                raise CompilationError(f"conditional expression chooses between {ta} and {tb}")
            t = ta
        else:
            t = promotion.computation_type(ta, a_weak, tb, b_weak)
        shape = self.semantic.broadcast_shapes(() if a_weak else a.shape,
                                               () if b_weak else b.shape)
        with self.builder.at_end_of(then_block):
            a = self.semantic.conform(a, t, shape)
        with self.builder.at_end_of(else_block):
            b = self.semantic.conform(b, t, shape)
        return self._emit_if(c, then_block, else_block, [(a, b)])[0]

    # -- loops ------------------------------------------------------------------------------------
    def _carried(self, body, exclude=()) -> list[str]:
        out = []
        for name in assigned_names(body):
            if name in exclude or name not in self.scope.locals:
                continue
            value = self.scope.locals[name]
            if isinstance(value, tensor) or is_number(value):
                out.append(name)
        return out

    def _init_values(self, names) -> list[tensor]:
        return [self.semantic.to_tensor(self.scope.locals[n]) for n in names]

    def _loop_yield(self, names, inits, node) -> None:
        """Yield the carried variables' values at the end of a loop body (types checked)."""
        values = []
        for name, init in zip(names, inits):
            value = self.scope.locals.get(name)
            where = self.last_assign.get(name, node)
            if isinstance(value, Undefined):
                raise self.error(value.reason, where)
            if is_number(value):
                try:
                    value = self.semantic.constant(value, init.type)
                except CompilationError as err:
                    raise self.error(err.raw_message, where) from None
            if not isinstance(value, tensor) or value.type != init.type:
                got = value.type if isinstance(value, tensor) else describe(value)
                raise self.error(
                    f"loop-carried variable {name!r} changes type inside the loop: it is "
                    f"{init.type} before the loop and {got} after this assignment; a variable "
                    "must keep its type across iterations (convert it, e.g. with .to())", where)
            values.append(value.handle)
        self.builder.create("yield", values)

    def _after_loop(self, before: dict, body, carried, results, target=None, node=None):
        after = self.scope.snapshot()
        self.scope.restore(before)
        for name in assigned_names(body):
            if name in carried or name == target:
                continue
            if name in before and not isinstance(before[name], Undefined):
                if not _same_constant(after.get(name), before[name]) and \
                        after.get(name) is not before[name]:
                    raise self.error(f"{name!r} holds the compile-time value "
                                     f"{describe(before[name])} and cannot be reassigned inside "
                                     "a run-time loop", self.last_assign.get(name, node))
            else:
                self.scope.locals[name] = Undefined(
                    f"{name!r} is first assigned inside the loop at line "
                    f"{self.src.loc(node).line}, so it is not visible after the loop; assign "
                    "it before the loop")
        for name, value in zip(carried, results):
            self.scope.bind(name, value)
        if target is not None and target not in before:
            self.scope.locals[target] = Undefined(
                f"the loop variable {target!r} is not visible after the run-time loop at line "
                f"{self.src.loc(node).line}")

    def visit_For(self, node):
        if node.orelse:
            raise CompilationError("for ... else is not supported in kernels")
        it = self.visit(node.iter)
        if isinstance(it, (tuple, list)):
            return self._unrolled_for(node, list(it))
        if isinstance(it, static_range):
            return self._unrolled_for(node, list(it.values()))
        if not isinstance(it, tl_range):
            raise self.error("a for loop in a kernel must iterate over range(...), "
                             "tl.range(...) or tl.static_range(...)", node.iter)
        if not isinstance(node.target, ast.Name):
            raise self.error("the loop variable of a run-time for loop must be a single name",
                             node.target)
        self._dynamic_for(node, it)

    def _unrolled_for(self, node, values):
        self.loop_depth += 1
        try:
            for v in values:
                self.assign(node.target, v, node)
                self.visit_stmts(node.body)
        finally:
            self.loop_depth -= 1

    def _loop_bounds(self, it: tl_range):
        s = self.semantic
        start, end, step = it.start, it.end, it.step
        if is_number(step) and step == 0:
            raise CompilationError("the step of a range must not be zero")
        reverse_from = None
        if is_number(step) and step < 0:  # run iv' = 0, |step|, ... < start - end; iv = start - iv'
            reverse_from = start
            end = start - end if is_number(start) and is_number(end) else \
                s.binary("sub", start, end)
            start, step = 0, -step
        bounds = []
        for what, v in (("start", start), ("end", end), ("step", step)):
            if isinstance(v, bool) or not (isinstance(v, (int, tensor))):
                raise CompilationError(f"the {what} of a range must be an integer, got "
                                       f"{describe(v)}")
            t = s.to_tensor(v)
            if t.is_block() or not t.type.is_int or t.type == irt.i1:
                raise CompilationError(f"the {what} of a range must be a scalar integer, got "
                                       f"{t.type}")
            bounds.append(t)
        iv_t = bounds[0].type
        for b in bounds[1:]:
            iv_t = promotion.integer_promote(iv_t, b.type)
        if iv_t.bitwidth < 32:
            iv_t = irt.u32 if iv_t.is_unsigned else irt.i32
        return [s.cast(b, iv_t) for b in bounds], iv_t, reverse_from

    def _dynamic_for(self, node, it: tl_range):
        target = node.target.id
        bounds, iv_t, reverse_from = self._loop_bounds(it)
        carried = self._carried(node.body, exclude=(target,))
        inits = self._init_values(carried)
        before = self.scope.snapshot()
        block = Block([iv_t] + [v.type for v in inits], [target] + carried)
        self.loop_depth += 1
        try:
            with self.builder.at_end_of(block):
                for name, arg in zip(carried, block.args[1:]):
                    self.scope.bind(name, tensor(arg))
                iv = tensor(block.args[0])
                if reverse_from is not None:
                    iv = self.semantic.binary("sub", self.semantic.cast(
                        self.semantic.to_tensor(reverse_from), iv_t), iv)
                self.scope.bind(target, iv)
                self.visit_stmts(node.body)
                self._loop_yield(carried, inits, node)
        finally:
            self.loop_depth -= 1
        op = self.builder.create("for", [b.handle for b in bounds] + [v.handle for v in inits],
                                 [v.type for v in inits], dict(it.attrs),
                                 regions=[Region(block)])
        self._after_loop(before, node.body, carried, [tensor(r) for r in op.results], target,
                         node)

    def visit_While(self, node):
        if node.orelse:
            raise CompilationError("while ... else is not supported in kernels")
        carried = self._carried(node.body)
        inits = self._init_values(carried)
        before = self.scope.snapshot()
        types = [v.type for v in inits]
        cond_block, body_block = Block(types, carried), Block(types, carried)
        with self.builder.at_end_of(cond_block):
            for name, arg in zip(carried, cond_block.args):
                self.scope.bind(name, tensor(arg))
            cond = self.visit(node.test)
            if not isinstance(cond, tensor):
                self.scope.restore(before)
                if not self._python(bool, cond):
                    return  # the loop never runs
                raise self.error("this while loop's condition is always true and kernels have "
                                 "no break; make the condition depend on the loop's variables",
                                 node.test)
            c = self._scalar_condition(cond, "a while loop")
            self.builder.create("condition", [c.handle] + [a for a in cond_block.args])
        self.scope.restore(before)
        self.loop_depth += 1
        try:
            with self.builder.at_end_of(body_block):
                for name, arg in zip(carried, body_block.args):
                    self.scope.bind(name, tensor(arg))
                self.visit_stmts(node.body)
                self._loop_yield(carried, inits, node)
        finally:
            self.loop_depth -= 1
        op = self.builder.create("while", [v.handle for v in inits], types,
                                 regions=[Region(cond_block), Region(body_block)])
        self._after_loop(before, node.body, carried, [tensor(r) for r in op.results], None,
                         node)
