"""Global atomics as one PTX ``atom`` each, carrying the op's memory order and scope.

Why: LLVM's NVPTX backend lowers an ``atomicrmw`` of any ordering to a relaxed ``atom`` (the
core therefore wraps atomics in fences), and it cannot express ``tl.atomic_*(scope=...)``. PTX
can: ``atom{.sem}{.scope}{.space}.op.type`` with ``.sem`` one of ``.relaxed .acquire .release
.acq_rel`` (sm_70+) and ``.scope`` one of ``.cta .gpu .sys``. One instruction with its own order
is what CUDA and Triton emit; it needs no separate fence.

Spelling: ptxas reads an instruction's qualifiers in any order (the SASS is identical, checked in
``test_nv_atomics.py``), and we write them as Triton does -- ``atom.global.gpu.acq_rel.add.f32``
for read-modify-writes and ``atom.global.acq_rel.gpu.cas.b32`` for compare-and-swap -- so
tools and tests that read Triton's PTX (its own ``test_core.py``) read naiad's the same way.

Covered: 32/64-bit integer add/min/max/and/or/xor/exch/cas, f16/f32/f64 add, bf16 add (sm_90:
``atom.add.noftz.bf16``). Anything else (8/16-bit integers, pointers as elements, non-global
memory) returns None and the core falls back to a relaxed LLVM atomic between fences.
"""
from __future__ import annotations

from llvmlite import ir

from .predicated_memory import GLOBAL_ADDRESS_SPACE, MEMORY_CLOBBER, inline_asm

#: PTX register constraint per value width.
_CONSTRAINT = {16: "h", 32: "r", 64: "l"}
_SEMS = ("relaxed", "acquire", "release", "acq_rel")
_SCOPES = ("cta", "gpu", "sys")


#: bits of the elements an ``atom`` may move
_BITS = {"i32": 32, "u32": 32, "i64": 64, "u64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def ptx_operation(op: str, elem: str, arch: str = "sm_90") -> str | None:
    """``op.type`` of the PTX ``atom`` for LLVM atomic ``op`` on naiad element ``elem``, or
    None where PTX has no such instruction (on ``arch``)."""
    bits = _BITS.get(elem)
    if bits is None:
        return None
    is_float = elem.startswith("f") or elem == "bf16"
    if op in ("add", "fadd"):
        if op == "add" and not is_float and bits in (32, 64):
            return f"add.u{bits}"
        if op == "fadd" and elem in ("f32", "f64"):
            return f"add.{elem}"
        if op == "fadd" and elem == "f16":
            return "add.noftz.f16"
        if op == "fadd" and elem == "bf16" and _sm(arch) >= 90:
            return "add.noftz.bf16"
        return None
    if is_float or bits not in (32, 64):
        return None
    if op in ("max", "min"):
        return f"{op}.s{bits}"
    if op in ("umax", "umin"):
        return f"{op[1:]}.u{bits}"
    if op in ("and", "or", "xor"):
        return f"{op}.b{bits}"
    if op == "xchg":
        return f"exch.b{bits}"
    if op == "cas":
        return f"cas.b{bits}"
    return None


def _sm(arch: str) -> int:
    digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
    return int(digits) if digits else 0


def atom_text(op: str, elem: str, sem: str, scope: str, arch: str = "sm_90") -> str:
    """The asm text: ``$0`` the old value, ``$1`` the address, ``$2`` the value (``$3`` the new
    value of a compare-and-swap, ``$2`` then being the compared one)."""
    if sem not in _SEMS or scope not in _SCOPES:
        raise ValueError(f"atomic sem {sem!r} / scope {scope!r}")
    operation = ptx_operation(op, elem, arch)
    if operation is None:
        raise ValueError(f"PTX has no atom for {op} on {elem} ({arch})")
    if op == "cas":
        return f"atom.global.{sem}.{scope}.{operation} $0, [$1], $2, $3;"
    return f"atom.global.{scope}.{sem}.{operation} $0, [$1], $2;"


def atomic_instruction(op: str, elem: str, address_space: int, arch: str):
    """``TargetInfo.atomic_instruction`` for NVIDIA (see the module docstring)."""
    if address_space != GLOBAL_ADDRESS_SPACE or ptx_operation(op, elem, arch) is None:
        return None
    bits = _BITS[elem]
    word = ir.IntType(bits)
    constraint = _CONSTRAINT[bits]

    def emit(builder: ir.IRBuilder, ptr, value, sem: str, scope: str, compare=None):
        inputs = [value] if compare is None else [compare, value]
        words = [v if v.type == word else builder.bitcast(v, word) for v in inputs]
        text = atom_text(op, elem, sem, scope, arch)
        constraints = ",".join([f"={constraint}", "l"] + [constraint] * len(words)
                               + [MEMORY_CLOBBER])
        fty = ir.FunctionType(word, [ptr.type] + [word] * len(words))
        old = builder.call(inline_asm(fty, text, constraints, side_effect=True), [ptr, *words],
                           attrs=("nounwind",))
        return old if value.type == word else builder.bitcast(old, value.type)

    return emit
