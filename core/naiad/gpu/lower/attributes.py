"""Kernel attributes from the ``naiad_llvm_attributes`` hook, applied to the LLVM module text.

llvmlite.ir knows neither string ``"key"="value"`` function attributes nor every calling
convention, and has no module flags API, so this one function edits the printed module:
the kernel's ``define`` line gets its calling convention and an attribute group, and module
flags / named metadata are appended. The result is checked by parsing it with
``llvmlite.binding``.
"""
from __future__ import annotations

import re

from ...errors import CodegenError
from ...plugins.contract import KernelDescription, LLVMAttributes  # noqa: F401 - re-exported


def merge_attributes(answers) -> LLVMAttributes:
    """Merge the hook's answers in order (later plugins win on the same key). naiad's plugin
    manager has checked each answer already (naming the plugin); a bare pluggy manager has not."""
    out = LLVMAttributes()
    for answer in answers or ():
        if answer is None:
            continue
        if not isinstance(answer, LLVMAttributes):
            raise CodegenError(f"naiad_llvm_attributes must return naiad.plugins.LLVMAttributes, "
                               f"got {type(answer).__name__} {answer!r}")
        out.merge(answer)
    return out


KernelAttributes = LLVMAttributes  # the name the emitter below uses


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\5C").replace('"', "\\22") + '"'


def _md_operand(v, kernel: str) -> str:
    if isinstance(v, bool):
        return f"i1 {int(v)}"
    if isinstance(v, int):
        return f"i32 {v}"
    if isinstance(v, str) and v == "@kernel":
        return f"ptr @{_quote(kernel)}"
    return "!" + _quote(str(v))


def apply_attributes(text: str, kernel: str, attrs: KernelAttributes,
                     default_cc: str) -> str:
    """Put the calling convention and function attributes on ``kernel``'s definition and
    append module flags and named metadata."""
    pattern = re.compile(r'^define (?:[a-z_0-9]+ )?void @"?' + re.escape(kernel) + r'"?\(.*$',
                         re.M)
    m = pattern.search(text)
    if m is None:
        raise CodegenError(f"kernel @{kernel} not found in the generated LLVM IR")
    line = m.group(0)
    cc = attrs.calling_convention or default_cc
    head, rest = line.split(" void ", 1)
    new_line = f"define {cc} void {rest}" if cc else f"define void {rest}"
    tail = []
    if attrs.function:
        group = max([int(g) for g in re.findall(r"^attributes #(\d+)", text, re.M)] + [-1]) + 1
        body = " ".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(attrs.function.items()))
        new_line = new_line.rstrip() + f" #{group}"
        tail.append(f"attributes #{group} = {{ {body} }}")
    text = text[:m.start()] + new_line + text[m.end():]
    next_md = max([int(x) for x in re.findall(r"^!(\d+) = ", text, re.M)] + [-1]) + 1
    md_lines = []
    if attrs.module_flags:
        refs = []
        for name, value in sorted(attrs.module_flags.items()):
            behavior, val = value if isinstance(value, (tuple, list)) else (1, value)
            md_lines.append(f"!{next_md} = !{{i32 {int(behavior)}, !{_quote(name)}, "
                            f"i32 {int(val)}}}")
            refs.append(f"!{next_md}")
            next_md += 1
        md_lines.append(f"!llvm.module.flags = !{{{', '.join(refs)}}}")
    for name, tuples in sorted(attrs.metadata.items()):
        refs = []
        for tup in tuples:
            ops = ", ".join(_md_operand(v, kernel) for v in tup)
            md_lines.append(f"!{next_md} = !{{{ops}}}")
            refs.append(f"!{next_md}")
            next_md += 1
        md_lines.append(f"!{name} = !{{{', '.join(refs)}}}")
    return text.rstrip("\n") + "\n" + "\n".join(tail + md_lines) + "\n"
