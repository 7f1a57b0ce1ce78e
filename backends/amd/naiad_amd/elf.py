"""A tiny ELF64 little-endian reader: sections, notes and symbol names of an hsaco.

Just enough to read the AMDGPU code-object metadata note and check which symbols a code object
defines, with ``struct`` only (no dependency for a few dozen lines of format).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from naiad.errors import CodegenError

SHT_SYMTAB = 2
SHT_NOTE = 7
SHT_DYNSYM = 11
EM_AMDGPU = 224


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    entsize: int
    addr: int = 0


@dataclass(frozen=True)
class Note:
    name: str
    type: int
    desc: bytes


class ElfFile:
    """Sections, notes and symbols of one ELF64 LE image held in memory."""

    def __init__(self, data: bytes):
        if len(data) < 64 or data[:4] != b"\x7fELF":
            raise CodegenError("amd: not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise CodegenError("amd: expected a 64-bit little-endian ELF file")
        self.data = bytes(data)
        (self.type, self.machine, _version, _entry, _phoff, shoff, _flags, _ehsize, _phentsize,
         _phnum, shentsize, shnum, shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        self.flags = _flags
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx] if shnum else None
        self.sections = [
            Section(self._str(names[4], n[0]) if names else "", n[1], n[4], n[5], n[6], n[9], n[3])
            for n in raw
        ]

    def _str(self, table_offset: int, index: int) -> str:
        end = self.data.index(b"\0", table_offset + index)
        return self.data[table_offset + index:end].decode("utf-8", "replace")

    def notes(self):
        """Every note of every SHT_NOTE section (4-byte aligned name and descriptor)."""
        for sec in self.sections:
            if sec.type != SHT_NOTE:
                continue
            pos, end = sec.offset, sec.offset + sec.size
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", self.data, pos)
                pos += 12
                name = self.data[pos:pos + namesz].rstrip(b"\0").decode("utf-8", "replace")
                pos += (namesz + 3) & ~3
                desc = self.data[pos:pos + descsz]
                pos += (descsz + 3) & ~3
                yield Note(name, ntype, desc)

    def section_bytes(self, name: str) -> bytes:
        """The contents of the first section called ``name`` (CodegenError when there is none)."""
        for sec in self.sections:
            if sec.name == name:
                return self.data[sec.offset:sec.offset + sec.size]
        raise CodegenError(f"amd: the ELF file has no {name} section")

    def symbols(self) -> list[str]:
        """Names in the symbol tables (.symtab and .dynsym)."""
        out = []
        for sec in self.sections:
            if sec.type not in (SHT_SYMTAB, SHT_DYNSYM) or not sec.entsize:
                continue
            strtab = self.sections[sec.link]
            for i in range(sec.size // sec.entsize):
                st_name = struct.unpack_from("<I", self.data, sec.offset + i * sec.entsize)[0]
                if st_name:
                    out.append(self._str(strtab.offset, st_name))
        return out

    def symbol_bytes(self, name: str) -> bytes:
        """The bytes a defined symbol covers (its section's file image at the symbol's address)."""
        for sec in self.sections:
            if sec.type not in (SHT_SYMTAB, SHT_DYNSYM) or not sec.entsize:
                continue
            strtab = self.sections[sec.link]
            for i in range(sec.size // sec.entsize):
                st_name, _info, _other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", self.data, sec.offset + i * sec.entsize)
                if st_name and self._str(strtab.offset, st_name) == name and 0 < shndx < len(self.sections):
                    target = self.sections[shndx]
                    start = target.offset + value - target.addr
                    return self.data[start:start + size]
        raise CodegenError(f"amd: the code object defines no symbol {name!r}")
