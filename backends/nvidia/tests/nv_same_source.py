"""One @naiad.jit kernel's own source text, loaded as a naiad or as a Triton kernel: the
static tests that compare naiad with Triton compile the very same text with both."""
from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path


def load_as(kernel, flavour: str, tmp_path: Path):
    """``kernel``'s source as a module importing ``naiad`` or ``triton`` (``flavour``), written
    under ``tmp_path``; returns that module's kernel of the same name."""
    lib = "naiad" if flavour == "naiad" else "triton"
    fn = kernel.fn
    text = (f"import {lib}\nimport {lib}.language as tl\n\n\n"
            + inspect.getsource(fn).replace("@naiad.jit", f"@{lib}.jit"))
    name = f"same_source_{fn.__name__}_{flavour}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, fn.__name__)
