"""Kernel-argument preload: mark every kernel parameter ``inreg`` (gfx90a, gfx94x, gfx950).

Without it a kernel starts by ``s_load``-ing its arguments from the kernarg segment and waits
for them; with ``inreg`` LLVM asks the firmware to place the first arguments in user SGPRs
before the first instruction (``.amdhsa_user_sgpr_kernarg_preload_length``), as many as the
free user SGPRs hold, and loads the rest as before. The kernarg segment is still filled by the
launcher, and LLVM emits the compatibility prologue older firmware needs, so nothing else
changes. Triton's AMD backend marks every argument the same way.

A text rewrite of the kernel's ``define`` line, because the core emits the parameter list and
llvmlite's binding cannot add parameter attributes to a parsed module.
"""
from __future__ import annotations

import re

_DEFINE = re.compile(r"^(define\s+(?:[\w\s]*?\s)?amdgpu_kernel\s[^(]*\()(.*)(\)[^)]*\{?\s*)$", re.M)


def _split_params(params: str) -> list[str]:
    """Split a parameter list on the commas that are not inside brackets or quotes."""
    out, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(params):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{<":
            depth += 1
        elif not quoted and ch in ")]}>":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            out.append(params[start:i])
            start = i + 1
    if params.strip():
        out.append(params[start:])
    return out


def _mark(param: str) -> str:
    text = param.strip()
    if re.search(r"\binreg\b", text) or text == "...":
        return param
    # the type: "ptr addrspace(N)", a vector/array/struct in brackets, or one token
    m = re.match(r"(ptr\s+addrspace\(\d+\)|<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\S+)(.*)$", text, re.S)
    return f" {m.group(1)} inreg{m.group(2)}" if m else param


def mark_kernel_args_inreg(llvm_ir: str) -> str:
    """Every parameter of every ``amdgpu_kernel`` definition gets ``inreg``."""
    def rewrite(m):
        params = ",".join(_mark(p) for p in _split_params(m.group(2)))
        return m.group(1) + params.lstrip() + m.group(3)

    return _DEFINE.sub(rewrite, llvm_ir)
