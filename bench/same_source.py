"""Import one kernel source text twice: as naiad code, and rewritten to Triton's imports.

Benchmarks compare naiad with Triton on the *same* text: kernels are written Triton-style with
``import naiad as triton`` / ``import naiad.language as tl``; for Triton those two lines are
rewritten. The text is written to a real file so both JITs can read the source back.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import tempfile

NAIAD_IMPORTS = ("import naiad as triton", "import naiad.language as tl")
TRITON_IMPORTS = ("import triton", "import triton.language as tl")


def kernel_text(source: str, flavour: str) -> str:
    """``source`` for ``flavour`` "naiad" (as written) or "triton" (imports rewritten)."""
    if flavour == "naiad":
        return source
    if flavour != "triton":
        raise ValueError(f"unknown flavour {flavour!r}; expected 'naiad' or 'triton'")
    for ours, theirs in zip(NAIAD_IMPORTS, TRITON_IMPORTS):
        if ours not in source:
            raise ValueError(f"kernel source lacks the line {ours!r} to rewrite")
        source = source.replace(ours, theirs)
    return source


def load_kernels(source: str, flavour: str, name: str, directory=None):
    """The module made of ``source`` for ``flavour``, imported as ``<name>_<flavour>``; its file
    is written to ``directory`` (a fresh temporary one by default: a fixed one lets several
    processes share their compile caches)."""
    module_name = f"{name}_{flavour}"
    folder = pathlib.Path(directory or tempfile.mkdtemp(prefix=f"{name}_"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module_name}.py"
    staged = folder / f".{module_name}.{os.getpid()}"
    staged.write_text(kernel_text(source, flavour))
    os.replace(staged, path)   # whole, even while another process reads it
    spec = importlib.util.spec_from_file_location(module_name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
