"""SASS of a cubin, read with Triton's bundled cuobjdump, and its loops (analysis only: the
product never runs these tools). Shared by bench/nv_spill_static.py and bench/nv_tree_diff.py.
"""
from __future__ import annotations

import collections
import pathlib
import re
import subprocess
import tempfile

#: opcode families the loop tables count (first word of the opcode, predicates dropped)
MMA = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "IMMA")


def cuobjdump() -> pathlib.Path:
    import triton

    return pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def disassemble(cubin: bytes | pathlib.Path) -> list[tuple[int, str]]:
    """(address, instruction text without the trailing ``;``) of every SASS instruction."""
    if isinstance(cubin, (bytes, bytearray)):
        with tempfile.TemporaryDirectory(prefix="sass_listing_") as tmp:
            path = pathlib.Path(tmp) / "k.cubin"
            path.write_bytes(cubin)
            return disassemble(path)
    text = subprocess.run([str(cuobjdump()), "-sass", str(cubin)], capture_output=True,
                          text=True, check=True).stdout
    return parse(text)


def parse(text: str) -> list[tuple[int, str]]:
    return [(int(a, 16), " ".join(t.split()))
            for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", text)]


def opcode(text: str) -> str:
    """The opcode with its modifiers (``QGMMA.64x256x32.F32.E5M2.E5M2``), predicate dropped."""
    words = re.sub(r"^@!?U?P[T\d]+\s+", "", text).split()
    return words[0] if words else ""


def family(text: str) -> str:
    """The opcode without modifiers (``QGMMA``)."""
    return opcode(text).split(".")[0]


def loops(instrs: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(first, last address) of every loop: a branch back to an earlier address (the
    self-branch that ends a listing is no loop)."""
    out = []
    for addr, text in instrs:
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            out.append((int(m.group(1), 16), addr))
    return out


def inside_loops(instrs) -> set[int]:
    """Addresses of the instructions inside any loop."""
    spans = loops(instrs)
    return {a for a, _ in instrs if any(lo <= a <= hi for lo, hi in spans)}


def main_loop(instrs) -> list[tuple[int, str]]:
    """The body of the longest loop (a matmul's K loop), or [] when there is none."""
    spans = loops(instrs)
    if not spans:
        return []
    lo, hi = max(spans, key=lambda s: sum(1 for a, _ in instrs if s[0] <= a <= s[1]))
    return [(a, t) for a, t in instrs if lo <= a <= hi]


def families(instrs) -> collections.Counter:
    return collections.Counter(family(t) for _, t in instrs)


def normalized(text: str) -> str:
    """An instruction with register numbers, reuse flags and branch targets blanked: two
    compilations of the same code differ in these only."""
    text = re.sub(r"\b(U?R|U?P|B)(\d+|Z|T)\b", r"\1", text).replace(".reuse", "")
    return re.sub(r"(\bBRA\b.*?)0x[0-9a-f]+", r"\1ADDR", text)
