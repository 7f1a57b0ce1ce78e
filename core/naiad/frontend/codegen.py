"""The code generator: walks a @jit function's Python AST and emits tile IR.

Values during generation are ``tl.tensor`` (typed IR values) or plain Python objects
(compile-time constants: numbers, strings, dtypes, tuples, functions, modules). Operations on
constants fold in Python; anything touching a tensor goes through
:class:`~naiad.language.semantics.Semantic`. Control flow lives in :mod:`.control_flow`, calls
in :mod:`.calls`.

Every exception escaping a node becomes a ``CompilationError`` at that node (the innermost
one): user mistakes keep their message, anything else is reported as an internal error.
"""
from __future__ import annotations

import ast
import inspect
import operator
import os

from ..errors import CompilationError
from ..ir.builder import Builder
from ..ir.core import Function
from ..language import shape as lshape
from ..language.core import constexpr, is_builtin, is_constexpr_annotation, tensor
from ..language.dtypes import dtype, dtype_of_ir, to_ir_type
from ..language.promotion import python_scalar_type
from ..language.semantics import Semantic, describe, is_number
from ..kernel import KernelDefinition as JITFunction  # not the runtime: no import cycle
from .calls import CallsMixin
from .context import Callee, ModuleContext, ReturnTemplate, normalize_constant
from .structures import flatten, rebuild
from .control_flow import ControlFlowMixin, ReturnState
from .scope import Scope

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or",
           ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_PY_BINOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
              "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
              "and": operator.and_, "or": operator.or_, "xor": operator.xor,
              "lshift": operator.lshift, "rshift": operator.rshift, "pow": operator.pow}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
           ast.GtE: "ge"}
_PY_CMPOPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
              "gt": operator.gt, "ge": operator.ge}
_TENSOR_PROPERTIES = ("dtype", "shape", "numel", "ndim")

_UNSUPPORTED = {
    "Try": "try statements are not supported in kernels",
    "TryStar": "try statements are not supported in kernels",
    "With": "with statements are not supported in kernels",
    "AsyncWith": "with statements are not supported in kernels",
    "Raise": "raise is not supported in kernels (use tl.static_assert for compile-time checks)",
    "Lambda": "lambda is not supported in kernels; define a @naiad.jit function instead",
    "ListComp": "comprehensions are not supported in kernels",
    "SetComp": "comprehensions are not supported in kernels",
    "DictComp": "comprehensions are not supported in kernels",
    "GeneratorExp": "generator expressions are not supported in kernels",
    "Break": "break is not supported in kernels (as in Triton); use a while loop whose "
             "condition ends it",
    "Continue": "continue is not supported in kernels; use an if around the rest of the body",
    "FunctionDef": "nested function definitions are not supported; define a @naiad.jit "
                   "function at module level",
    "AsyncFunctionDef": "async functions are not supported in kernels",
    "ClassDef": "class definitions are not supported in kernels",
    "Import": "import statements are not supported inside kernels",
    "ImportFrom": "import statements are not supported inside kernels",
    "Global": "global declarations are not supported in kernels",
    "Nonlocal": "nonlocal declarations are not supported in kernels",
    "Delete": "del is not supported in kernels",
    "NamedExpr": "assignment expressions (:=) are not supported in kernels",
    "Dict": "dict literals are not supported in kernels",
    "Set": "set literals are not supported in kernels",
    "Yield": "yield is not supported in kernels",
    "YieldFrom": "yield is not supported in kernels",
    "Await": "await is not supported in kernels",
    "Match": "match statements are not supported in kernels",
    "AsyncFor": "async for is not supported in kernels",
}


def _closure_vars(fn) -> dict:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    out = {}
    if code is not None:
        for name, cell in zip(code.co_freevars, cells):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # an empty cell (assigned later in the enclosing function)
                pass
    return out


def _specialized_value(arg, facts):
    """What a kernel parameter's name means in the body: the run-time argument, except that an
    integer argument specialised as equal to 1 is the Python number 1, weakly typed like a
    constexpr, as Triton specialises it (``x_i8 + n`` stays i8 when ``n == 1``)."""
    t = arg.type
    if facts and facts.get("equal_to") == 1 and getattr(t, "is_int", False) \
            and not getattr(t, "is_bool", False):
        return normalize_constant(1)
    return tensor(arg)


class CodeGenerator(CallsMixin, ControlFlowMixin, ast.NodeVisitor):
    """Generates one @jit function: as the kernel, as a callee ``Function``, or inline (combine
    functions of reductions and scans)."""

    def __init__(self, fn: JITFunction, ctx: ModuleContext, builder: Builder | None = None):
        self.fn = fn
        self.ctx = ctx
        self.src = ctx.source(fn)
        self.builder = builder or Builder()
        self.semantic = Semantic(self.builder, self)
        self.scope = Scope(fn.globals, _closure_vars(fn.fn))
        self.returned: ReturnState | None = None
        self.loop_depth = 0
        self.is_kernel = False
        self.last_assign: dict[str, ast.AST] = {}

    # -- the visitor with error conversion ----------------------------------------------------
    def visit(self, node):
        saved = self.builder.loc
        loc = self.src.loc(node)
        if loc is not None:
            self.builder.loc = loc
        try:
            return super().visit(node)
        except CompilationError as e:
            if e.lineno is None:
                located = self.src.error(e.raw_message, node)
                # the bare message as the cause, as Triton's errors carry it (no traceback)
                located.__cause__ = CompilationError(e.raw_message)
                located.__suppress_context__ = True
                raise located
            raise
        except RecursionError:
            raise self.src.error("the kernel nests too deeply to compile", node) from None
        except Exception as e:  # a bug in naiad: still report where in the kernel it happened
            err = self.src.error(f"internal compiler error: {type(e).__name__}: {e}", node)
            err.internal_error = e
            if os.environ.get("NAIAD_DEBUG_FRONTEND"):
                raise err from e
            raise err from None
        finally:
            self.builder.loc = saved

    def generic_visit(self, node):
        name = type(node).__name__
        raise CompilationError(_UNSUPPORTED.get(name, f"unsupported Python construct: {name}"))

    def error(self, message: str, node) -> CompilationError:
        return self.src.error(message, node)

    # -- entry points -------------------------------------------------------------------------
    def _fdef(self) -> ast.FunctionDef:
        fdef = self.fn.ast
        if not isinstance(fdef, ast.FunctionDef):
            raise self.error(f"@jit expects a plain function definition, got "
                             f"{type(fdef).__name__}", fdef)
        for arg in fdef.args.posonlyargs + fdef.args.kwonlyargs:
            raise self.error("positional-only and keyword-only parameters are not supported "
                             "in @jit functions", arg)
        for arg in (fdef.args.vararg, fdef.args.kwarg):
            if arg is not None:
                raise self.error("*args and **kwargs are not supported in @jit functions", arg)
        return fdef

    def _param_node(self, fdef, name):
        for a in fdef.args.args:
            if a.arg == name:
                return a
        return fdef

    def generate_kernel(self, signature: dict, constexprs: dict, specialization: dict) -> Function:
        """Emit ``self.fn`` as the kernel function of the module."""
        self.is_kernel = True
        fdef = self._fdef()
        params = self.fn.signature.parameters
        constexprs = {k: normalize_constant(v) for k, v in (constexprs or {}).items()}
        for name in constexprs:
            if name not in params:
                raise self.error(f"constexprs names {name!r}, which is not a parameter of "
                                 f"{self.fn.__name__}", fdef)
        for name in specialization or {}:
            if name not in params:
                raise self.error(f"specialization names {name!r}, which is not a parameter of "
                                 f"{self.fn.__name__}", fdef)
        arg_names, arg_types, consts = [], [], {}
        for name, p in params.items():
            node = self._param_node(fdef, name)
            if name in constexprs:
                consts[name] = constexprs[name]
                continue
            if name in self.fn.constexpr_params:
                if p.default is inspect.Parameter.empty:
                    raise self.error(f"constexpr parameter {name!r} needs a value (pass it in "
                                     "constexprs)", node)
                consts[name] = normalize_constant(p.default)
                continue
            sig = signature.get(name) if signature else None
            if sig is None or sig == "constexpr":
                raise self.error(f"parameter {name!r} has no type in the signature (and no "
                                 "constexpr value)", node)
            try:
                arg_types.append(to_ir_type(sig))
            except CompilationError as e:
                raise self.error(f"parameter {name!r}: {e.raw_message}", node) from None
            arg_names.append(name)
        func = Function(self.fn.__name__, arg_types, [], arg_names, attrs={"kernel": True})
        for i, name in enumerate(arg_names):
            facts = (specialization or {}).get(name)
            if facts:
                func.arg_attrs[i].update(facts)
        self.ctx.module.add(func)
        self.builder.set_insertion_point_to_end(func.body.block)
        for name, arg in zip(arg_names, func.args):
            self.scope.bind(name, _specialized_value(arg, (specialization or {}).get(name)))
        for name, value in consts.items():
            self.scope.bind(name, value)
        if getattr(self.fn, "descriptor_params", None):   # TensorDescriptor arguments
            from ..language.descriptor import bind_descriptors

            self.builder.loc = self.src.loc(fdef)
            try:
                bind_descriptors(self.fn, self.scope, self.semantic)
            except CompilationError as e:
                raise self.error(e.raw_message, fdef) from None
        self._emit_body(fdef, func)
        return func

    def generate_callee(self, name: str, dyn_names: list[str], arg_types: list,
                        consts: dict, callee: Callee, structures: dict) -> None:
        """Emit ``self.fn`` specialised for these argument types and constants as ``@name``;
        ``structures`` rebuilds each run-time parameter (a tensor, or tuples/lists holding
        tensors) from the function's flat arguments."""
        fdef = self._fdef()
        attrs = {"kernel": False}
        if self.fn.noinline:
            attrs["noinline"] = True
        func = Function(name, arg_types, [], dyn_names, attrs=attrs)
        callee.function = func
        self.ctx.module.add(func)
        self.builder.set_insertion_point_to_end(func.body.block)
        args = [tensor(a) for a in func.args]
        for pname, structure in structures.items():
            self.scope.bind(pname, rebuild(structure, args))
        for pname, value in consts.items():
            self.scope.bind(pname, value)
        callee.template = self._emit_body(fdef, func)

    def generate_inline(self, bound: dict):
        """Emit ``self.fn``'s body at the builder's insertion point; return its return value."""
        fdef = self._fdef()
        for pname, value in bound.items():
            self.scope.bind(pname, value)
        self.visit_stmts(self.ctx.body(self.fn, fdef))
        return self.returned.value if self.returned else None

    def _emit_body(self, fdef, func: Function) -> ReturnTemplate:
        self.visit_stmts(self.ctx.body(self.fn, fdef))
        value = self.returned.value if self.returned else None
        node = self.returned.node if self.returned else fdef
        self.builder.loc = self.src.loc(node)
        if self.is_kernel:
            if value is not None:
                raise self.error("a kernel cannot return a value", node)
            self.builder.create("return", [])
            return ReturnTemplate("none")
        template, results = self._return_template(value, node)
        func.result_types = [r.type for r in results]
        self.builder.create("return", [r.handle for r in results])
        return template

    def _return_template(self, value, node):
        if value is None:
            return ReturnTemplate("none"), []
        results: list = []
        return ReturnTemplate("value", flatten(value, results)), results

    # -- statements ---------------------------------------------------------------------------
    def visit_stmts(self, stmts):
        for stmt in stmts:
            self.visit(stmt)
            if self.returned is not None:
                return

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        return None

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise CompilationError("a variable annotation needs a value in a kernel")
        value = self.visit(node.value)
        ann = self.eval_annotation(node.annotation)
        if is_constexpr_annotation(ann) and isinstance(value, tensor):
            raise CompilationError(f"{ast.unparse(node.target)} is annotated tl.constexpr but "
                                   f"its value is a run-time {value.type}")
        self.assign(node.target, value, node)

    def eval_annotation(self, node):
        try:
            return self.visit(node)
        except CompilationError:
            return ast.unparse(node)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise CompilationError(f"augmented assignment to {ast.unparse(node.target)} is not "
                                   "supported; only plain variables can be updated")
        lhs = self.scope.lookup(node.target.id)
        rhs = self.visit(node.value)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise CompilationError(f"operator {type(node.op).__name__} is not supported here")
        self.assign(node.target, self.binary(op, lhs, rhs), node)

    def assign(self, target, value, node):
        if isinstance(target, ast.Name):
            if isinstance(value, constexpr):
                value = value.value
            self.scope.bind(target.id, value)
            self.last_assign[target.id] = node
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, tensor):
                raise self.error(f"cannot unpack a tensor ({value.type}) into "
                                 f"{len(target.elts)} names", target)
            if not isinstance(value, (tuple, list)):
                raise self.error(f"cannot unpack {describe(value)} into {len(target.elts)} "
                                 "names", target)
            if any(isinstance(e, ast.Starred) for e in target.elts):
                raise self.error("starred assignment is not supported in kernels", target)
            if len(value) != len(target.elts):
                raise self.error(f"cannot unpack {len(value)} values into "
                                 f"{len(target.elts)} names", target)
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Subscript):
            raise self.error("assigning to an element (x[i] = ...) is not supported in "
                             "kernels; tensors are immutable values (use tl.where or tl.store)",
                             target)
        raise self.error(f"cannot assign to {ast.unparse(target)} in a kernel", target)

    def visit_Return(self, node):
        if self.loop_depth:
            raise CompilationError("return inside a loop is not supported")
        value = self.visit(node.value) if node.value is not None else None
        if isinstance(value, list):
            value = tuple(value)
        self.returned = ReturnState(value, node)

    def visit_Assert(self, node):
        test = self.visit(node.test)
        if isinstance(test, tensor):
            # a device-side assert: checked in debug mode only, as in Triton
            from ..language.debug import device_assert

            msg = self.visit(node.msg) if node.msg is not None else ""
            return device_assert(test, msg if isinstance(msg, str) else "",
                                 _semantic=self.semantic)
        if not test:
            msg = self.visit(node.msg) if node.msg is not None else None
            raise CompilationError("assertion failed" + (f": {msg}" if msg else ""))

    # -- expressions --------------------------------------------------------------------------
    def visit_Constant(self, node):
        if isinstance(node.value, (bytes, complex)) or node.value is Ellipsis:
            raise CompilationError(f"the constant {node.value!r} is not supported in kernels")
        return node.value

    def visit_Name(self, node):
        return self.scope.lookup(node.id)

    def visit_Tuple(self, node):
        return tuple(self._eval_elts(node.elts))

    def visit_List(self, node):
        return list(self._eval_elts(node.elts))

    def _eval_elts(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.visit(e.value)
                if not isinstance(v, (tuple, list)):
                    raise self.error(f"cannot unpack {describe(v)} with *", e)
                out.extend(v)
            else:
                out.append(self.visit(e))
        return out

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append(self.visit(v))
        return "".join(parts)

    def visit_FormattedValue(self, node):
        value = self.visit(node.value)
        if isinstance(value, tensor):
            value = f"<run-time {value.type}>"
        spec = self.visit(node.format_spec) if node.format_spec is not None else ""
        conv = {115: str, 114: repr, 97: ascii}.get(node.conversion)
        return format(conv(value) if conv else value, spec)

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        return self.get_attribute(base, node.attr)

    def get_attribute(self, base, attr):
        if isinstance(base, tensor):
            if attr == "T":
                return lshape.trans(base, _semantic=self.semantic)
            if attr == "type":
                return base.type
            value = getattr(type(base), attr, None)
            if attr not in _TENSOR_PROPERTIES and not is_builtin(value):
                raise CompilationError(f"a tensor has no attribute {attr!r}")
            return getattr(base, attr)
        if attr == "dtype" and is_number(base):
            # Triton makes a number assigned in a kernel a scalar tensor, so ``value = 1;
            # value.dtype`` is int32: the type the number would get as a constant
            return dtype_of_ir(python_scalar_type(base))
        try:
            value = getattr(base, attr)
        except AttributeError:
            what = getattr(base, "__name__", None) or type(base).__name__
            raise CompilationError(f"{what!s} has no attribute {attr!r}") from None
        return normalize_constant(value)

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tensor):
            return lshape.subscript(self.semantic, base, index)
        if isinstance(index, tensor):
            raise CompilationError(f"cannot index a compile-time {type(base).__name__} with a "
                                   "run-time value")
        try:
            return base[index]
        except (IndexError, KeyError, TypeError) as e:
            raise CompilationError(f"bad index {index!r} into {describe(base)}: {e}") from None

    def visit_Slice(self, node):
        parts = [self.visit(p) if p is not None else None
                 for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}[
            type(node.op)]
        if isinstance(operand, tensor):
            return self.semantic.unary(name, operand)
        fn = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
              "not": operator.not_}[name]
        return self._python(fn, operand)

    def visit_BinOp(self, node):
        lhs, rhs = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                raise CompilationError("** is not supported on tensors (only on compile-time "
                                       "numbers)")
            return self._python(operator.pow, lhs, rhs)
        if isinstance(node.op, ast.MatMult):
            raise CompilationError("@ is not supported in kernels; use tl.dot(a, b)")
        return self.binary(_BINOPS[type(node.op)], lhs, rhs)

    def binary(self, opname, lhs, rhs):
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return self._python(_PY_BINOPS[opname], lhs, rhs)
        return self.semantic.binary(opname, lhs, rhs)

    @staticmethod
    def _python(fn, *args):
        """A Python operation on compile-time values; its failure is the user's error."""
        try:
            return fn(*args)
        except CompilationError:
            raise
        except Exception as e:
            raise CompilationError(f"{type(e).__name__}: {e}") from None

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for value_node in node.values[1:]:
            if not isinstance(result, tensor):
                if bool(result) != is_and:  # short-circuit on compile-time values
                    return result
                result = self.visit(value_node)
                continue
            rhs = self.visit(value_node)
            result = self.semantic.logical("and" if is_and else "or", result, rhs)
        return result

    def visit_Compare(self, node):
        lhs = self.visit(node.left)
        result = None
        for op, right in zip(node.ops, node.comparators):
            rhs = self.visit(right)
            cur = self.compare(op, lhs, rhs)
            if result is None:
                result = cur
            elif isinstance(result, tensor) or isinstance(cur, tensor):
                result = self.semantic.logical("and", result, cur)
            else:
                result = result and cur
            lhs = rhs
        return result

    def compare(self, op, lhs, rhs):
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = lhs == rhs if isinstance(lhs, dtype) and isinstance(rhs, dtype) else lhs is rhs
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                raise CompilationError("`in` works only on compile-time values in a kernel")
            found = self._python(operator.contains, rhs, lhs)
            return found if isinstance(op, ast.In) else not found
        pred = _CMPOPS[type(op)]
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return self._python(_PY_CMPOPS[pred], lhs, rhs)
        return self.semantic.compare(pred, lhs, rhs)
