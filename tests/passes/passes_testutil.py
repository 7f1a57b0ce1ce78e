"""Helpers for the pass tests: text in -> passes -> text out, with the verifier on both sides."""
from __future__ import annotations

import textwrap

from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify


def module_text(body: str, params: str = "", results: str = "", extra: str = "",
                name: str = "k") -> str:
    """Module text with one kernel ``@name`` whose (dedented) body is ``body``."""
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "  ")
    res = f" -> ({results})" if results else ""
    fn = f"func @{name}({params}){res} attributes {{kernel = true}} {{\n{lines}\n}}\n"
    return "module {\n" + textwrap.dedent(extra).lstrip("\n") + fn + "}\n"


def canonical(text: str) -> str:
    """``text`` as the printer lays it out (so expected texts need not match spacing)."""
    return print_module(parse_module(text))


def run_passes(text: str, *passes):
    """Parse and verify ``text``, run ``passes`` (callables ``p(module, ctx)``), verify after
    each, and return (module, printed text)."""
    module = parse_module(text)
    verify(module)
    for p in passes:
        p(module, None)
        verify(module)
    return module, print_module(module)


def check(text_in: str, passes, text_out: str) -> None:
    """Running ``passes`` on ``text_in`` prints exactly ``text_out`` (after canonical layout)."""
    passes = passes if isinstance(passes, (list, tuple)) else [passes]
    _, got = run_passes(text_in, *passes)
    want = canonical(text_out)
    assert got == want, f"--- got ---\n{got}\n--- want ---\n{want}"


def unchanged(text_in: str, passes) -> None:
    """Running ``passes`` leaves ``text_in`` as it was."""
    check(text_in, passes, text_in)


def op_names(module, fn: str = "k") -> list[str]:
    return [op.name for op in module.functions[fn].walk()]
