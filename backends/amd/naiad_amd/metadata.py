"""The resource report of an hsaco: its code-object metadata note and its assembly.

Code objects v3+ carry one ELF note named "AMDGPU" of type NT_AMDGPU_METADATA (32) whose
descriptor is a msgpack map (``amdhsa.version``, ``amdhsa.target``, ``amdhsa.kernels`` ...). Each
kernel entry holds its register counts, spills, LDS and scratch sizes and launch limits; this is
the same data ``readelf --notes`` and HIP's loader see.
"""
from __future__ import annotations

import re

import msgpack

from naiad.errors import CodegenError

from .elf import ElfFile

NT_AMDGPU_METADATA = 32

#: code-object key -> our resource-report key.
_FIELDS = {
    ".vgpr_count": "vgpr",
    ".sgpr_count": "sgpr",
    ".agpr_count": "agpr",
    ".vgpr_spill_count": "vgpr_spills",
    ".sgpr_spill_count": "sgpr_spills",
    ".group_segment_fixed_size": "lds",
    ".private_segment_fixed_size": "scratch",
    ".wavefront_size": "wavefront_size",
    ".max_flat_workgroup_size": "max_flat_workgroup_size",
    ".kernarg_segment_size": "kernarg_size",
    ".kernarg_segment_align": "kernarg_align",
    ".uses_dynamic_stack": "uses_dynamic_stack",
}


def code_object_metadata(hsaco: bytes) -> dict:
    """The decoded NT_AMDGPU_METADATA map of ``hsaco``."""
    for note in ElfFile(hsaco).notes():
        if note.name == "AMDGPU" and note.type == NT_AMDGPU_METADATA:
            return msgpack.unpackb(note.desc, raw=False, strict_map_key=False)
    raise CodegenError("amd: the code object has no AMDGPU metadata note (NT_AMDGPU_METADATA)")


def kernel_metadata(hsaco: bytes, kernel_name: str) -> dict:
    """The raw metadata map of ``kernel_name`` (matched on ``.name`` or ``.symbol``)."""
    meta = code_object_metadata(hsaco)
    kernels = meta.get("amdhsa.kernels", [])
    for k in kernels:
        if k.get(".name") == kernel_name or k.get(".symbol") == kernel_name + ".kd":
            return k
    names = [k.get(".name") for k in kernels]
    raise CodegenError(f"amd: kernel {kernel_name!r} not in the code object (it has {names})")


def resource_report(kernel_meta: dict) -> dict:
    """Our flat report of one kernel: ints under the keys of ``_FIELDS`` plus ``spill_registers``
    (VGPR + SGPR spills, a register count) and
    ``args`` (offset, size, kind of each explicit kernel argument)."""
    rep = {ours: kernel_meta.get(key, 0) for key, ours in _FIELDS.items()}
    rep["uses_dynamic_stack"] = bool(rep["uses_dynamic_stack"])
    rep["spill_registers"] = int(rep["vgpr_spills"]) + int(rep["sgpr_spills"])
    rep["args"] = [
        {"offset": a.get(".offset"), "size": a.get(".size"), "kind": a.get(".value_kind")}
        for a in kernel_meta.get(".args", [])
        if not str(a.get(".value_kind", "")).startswith("hidden_")
    ]
    return rep


_INSN = re.compile(r"^\s+([a-z][a-z0-9_]*)(\s|$)")


def count_instructions(asm: str, kernel_name: str | None = None) -> int:
    """Machine instructions in the text of ``asm`` (of ``kernel_name`` only, when given):
    indented mnemonics between a function label and its ``.Lfunc_end`` marker."""
    count = 0
    inside = False
    for line in asm.splitlines():
        line = line.split(";", 1)[0].rstrip()  # drop verbose-asm comments
        stripped = line.strip()
        if not inside:
            if stripped.endswith(":") and not stripped.startswith(".") and (
                    kernel_name is None or stripped[:-1].strip('"') == kernel_name):
                inside = True
            continue
        if stripped.startswith(".Lfunc_end"):
            inside = False
            continue
        if _INSN.match(line) and not stripped.startswith("."):
            count += 1
    return count


def asm_occupancy(asm: str) -> int | None:
    """The ``; Occupancy: N`` waves-per-SIMD LLVM reports in the assembly comments, if any."""
    m = re.search(r";\s*Occupancy:\s*(\d+)", asm)
    return int(m.group(1)) if m else None
