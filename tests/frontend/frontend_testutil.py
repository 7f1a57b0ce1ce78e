"""Helpers of the frontend tests: compile a kernel to tile IR (verified), find ops in it, and
locate marked source lines for error-position checks."""
from __future__ import annotations

import inspect
import re

import pytest

from naiad.frontend import generate
from naiad.ir.printer import print_module


def verifier():
    """naiad.ir.verifier.verify, or skip the test when that module is not there yet."""
    mod = pytest.importorskip("naiad.ir.verifier", reason="naiad.ir.verifier not available yet")
    return mod.verify


def compile_ir(kernel, signature, constexprs=None, specialization=None):
    """(module, printed text) of ``kernel``; the module must pass the IR verifier."""
    module = generate(kernel, signature, constexprs or {}, specialization or {})
    verifier()(module)
    return module, print_module(module)


def ops(fn_or_module, name=None):
    """Every op (nested included) of a function or of a module's kernel, filtered by name."""
    fn = fn_or_module
    if hasattr(fn_or_module, "functions"):
        fn = next(f for f in fn_or_module.functions.values() if f.attrs.get("kernel"))
    found = list(fn.walk())
    return [op for op in found if name is None or op.name == name]


def result_types(module, name):
    return [str(op.results[0].type) for op in ops(module, name) if op.results]


def marked(tag: str, snippet: str, module_file: str):
    """(line, 0-based col) of ``snippet`` on the line of ``module_file`` ending in ``# <tag>``."""
    with open(module_file) as f:
        lines = f.read().splitlines()
    pattern = re.compile(r"#\s*" + re.escape(tag) + r"\s*$")
    hits = [i for i, line in enumerate(lines) if pattern.search(line)]
    assert len(hits) == 1, f"marker {tag!r} found {len(hits)} times"
    line = lines[hits[0]]
    col = line.index(snippet)
    return hits[0] + 1, col, line


def kernel_file(kernel) -> str:
    return inspect.getsourcefile(kernel.fn)


def run(kernel, signature, constexprs, grid, args):
    """Compile ``kernel`` and run it on the reference executor (skip when that is missing);
    returns the module."""
    ref = pytest.importorskip("naiad_reference", reason="reference executor not available")
    module, _ = compile_ir(kernel, signature, constexprs)
    ref.execute(module, kernel.__name__, grid, args)
    return module
