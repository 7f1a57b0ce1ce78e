"""Syntactic facts about statement lists that code generation needs before it emits a region:
which names a loop body assigns (its loop-carried candidates) and whether a branch returns."""
from __future__ import annotations

import ast


def _target_names(target: ast.AST, out: list[str]) -> None:
    if isinstance(target, ast.Name):
        if target.id not in out:
            out.append(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target_names(elt, out)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, out)


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names bound anywhere in ``stmts`` (nested blocks included), in first-assignment order."""
    out: list[str] = []
    for stmt in stmts:
        for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef) else ():
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    _target_names(t, out)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                _target_names(node.target, out)
            elif isinstance(node, ast.For):
                _target_names(node.target, out)
            elif isinstance(node, ast.NamedExpr):
                _target_names(node.target, out)
    return out


def terminates(stmts: list[ast.stmt]) -> bool:
    """True when every path through ``stmts`` ends in ``return``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return False


def _has_return_outside_loops(node: ast.AST) -> bool:
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return False
    return any(_has_return_outside_loops(c) for c in ast.iter_child_nodes(node))


def normalize_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Rewrite so that every ``return`` (outside loops) is in tail position.

    The statements following an ``if`` that contains a return are moved into both of its
    branches (code after a ``return`` is dropped, being unreachable). Afterwards an ``if`` that
    returns on some path is the last statement of its list, all the way up to the function
    body, so a dynamic ``if`` can merge the returned values like variables.
    """
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            out.append(stmt)
            return out
        if isinstance(stmt, ast.If) and _has_return_outside_loops(stmt):
            rest = stmts[i + 1:]
            new = ast.If(test=stmt.test, body=normalize_returns(stmt.body + rest),
                         orelse=normalize_returns(stmt.orelse + rest))
            out.append(ast.copy_location(new, stmt))
            return out
        out.append(stmt)
    return out
