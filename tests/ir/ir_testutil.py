"""Helpers shared by the tile-IR tests: build module text the way the printer lays it out."""
from __future__ import annotations

import textwrap


def kernel(params: str, body: str, *, results: str = "", extra: str = "",
           module_attrs: str = "") -> str:
    """Module text with one kernel ``@k`` whose body is ``body`` (dedented, then indented by two
    spaces as the printer does). ``results`` is the ``-> (...)`` list; ``extra`` holds further
    functions printed before the kernel."""
    head = "module" + (f" attributes {{{module_attrs}}}" if module_attrs else "") + " {\n"
    res = f" -> ({results})" if results else ""
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "  ")
    fn = f"func @k({params}){res} attributes {{kernel = true}} {{\n{lines}\n}}\n"
    return head + textwrap.dedent(extra).lstrip("\n") + fn + "}\n"
