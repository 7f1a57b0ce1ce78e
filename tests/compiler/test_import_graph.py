"""No import cycle runs across naiad's parts (frontend, runtime, compiler, gpu, ...): each part
can be read, tested and replaced on its own. Imports inside functions count too -- they only
defer a cycle, they do not remove it. (Cycles inside one package, such as a package __init__
re-exporting its submodules, are allowed.)"""
from __future__ import annotations

import ast
import pathlib
import sys

CORE = pathlib.Path(__file__).resolve().parents[2] / "core"


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for f in CORE.rglob("*.py"):
        name = ".".join(f.relative_to(CORE).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    return mods


def _imports(name: str, path: pathlib.Path, mods) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            deps |= {m for m in [module] + [f"{module}.{a.name}" for a in node.names]
                     if m in mods}
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name in mods}
    deps.discard(name)
    return deps


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_no_import_cycle_spans_two_parts_of_naiad():
    mods = _modules()
    graph = {name: _imports(name, path, mods) for name, path in mods.items()}
    spanning = [c for c in _cycles(graph) if len({_part(m) for m in c}) > 1]
    assert not spanning, "import cycles across parts of naiad:\n" + "\n".join(map(str, spanning))
