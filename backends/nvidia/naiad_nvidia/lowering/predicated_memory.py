"""Masked global loads and stores as predicated PTX (``@p ld.global`` / ``@p st.global``).

Why: the core's default masked access branches around every load and store. Each branch ends a
basic block, so ptxas cannot overlap one thread's loads (layer norm, the prefetching tensor-core
K loop). A predicated instruction keeps the kernel straight-line. LLVM has no predicated load,
so the access is inline PTX, built here with ``llvmlite.ir.InlineAsm``.

An access of ``count`` elements is moved as 1, 2 or 4 words of 16, 32 or 64 bits (PTX ``.b16``,
``.b32``, ``.b64``, vectors ``.v2``/``.v4``); a single byte is ``.b8`` through a 16-bit register.
Narrow elements are packed into the words by a bitcast, so memory sees exactly the bytes a plain
LLVM load or store of the same type would touch. A masked-off load gives zero in every bit (the
contract of ``TargetInfo.masked_load``; the core selects ``other`` per element afterwards).

The load is ``memory(read)`` for LLVM's IR passes (they may merge or hoist it like a load,
never past a store) and clobbers memory for the code generator (whose passes otherwise treat an
asm without side effects as pure); the store has side effects. Shapes not covered (pointers as elements, non-global address spaces, accesses
that are not 1/2/4/8/16 bytes or not aligned to their size) return None and the caller falls back
to the core's branch.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

#: PTX register constraint and LLVM register type per word width (8-bit words live in the
#: 16-bit ``h`` registers: PTX lets ``ld.b8``/``st.b8`` use a wider register).
_REGISTER = {8: ("h", ir.IntType(16)), 16: ("h", ir.IntType(16)), 32: ("r", ir.IntType(32)),
             64: ("l", ir.IntType(64))}
GLOBAL_ADDRESS_SPACE = 1
#: Without it the machine-level instruction of an asm that is not ``sideeffect`` counts as pure
#: (neither load nor store), and MachineCSE merges two loads of one address across a store
#: between them; the clobber marks it as touching memory.
MEMORY_CLOBBER = "~{memory}"


@dataclass(frozen=True)
class WordShape:
    """An access moved as ``count`` words of ``bits`` bits each."""

    count: int
    bits: int

    @property
    def ptx_type(self) -> str:
        vec = "" if self.count == 1 else f".v{self.count}"
        return f"{vec}.b{self.bits}"

    @property
    def constraint(self) -> str:
        return _REGISTER[self.bits][0]

    @property
    def register_type(self) -> ir.Type:
        return _REGISTER[self.bits][1]

    @property
    def word_type(self) -> ir.Type:
        return ir.IntType(self.bits)

    def operand_list(self, first: int) -> str:
        """``$first`` or ``{$first, ..}`` for the words' asm operands."""
        names = [f"${first + i}" for i in range(self.count)]
        return names[0] if self.count == 1 else "{" + ", ".join(names) + "}"


def _element_bits(t: ir.Type) -> int | None:
    if isinstance(t, ir.IntType):
        return t.width if t.width in (8, 16, 32, 64) else None
    if isinstance(t, ir.HalfType):
        return 16
    if isinstance(t, ir.FloatType):
        return 32
    if isinstance(t, ir.DoubleType):
        return 64
    return None


def word_shape(ty: ir.Type, align: int) -> WordShape | None:
    """How a ``ty`` (scalar or vector) access at byte alignment ``align`` maps to PTX words,
    or None when it is not a shape this module emits."""
    elem, count = (ty.element, ty.count) if isinstance(ty, ir.VectorType) else (ty, 1)
    bits = _element_bits(elem)
    if bits is None:
        return None
    total = bits * count
    if total not in (8, 16, 32, 64, 128) or align < total // 8:
        return None
    word = 64 if bits == 64 else min(total, 32)
    return WordShape(total // word, word)


def _is_global_pointer(ptr) -> bool:
    t = ptr.type
    return isinstance(t, ir.PointerType) and t.addrspace == GLOBAL_ADDRESS_SPACE


# -- asm text ------------------------------------------------------------------------------------

def load_asm(shape: WordShape, cache: str = "") -> tuple[str, str]:
    """Asm text and constraints of a predicated load (with PTX cache operator ``cache``, e.g.
    ``.cv``): outputs are the words, then the address (``l``), the predicate (``b``) and the
    memory clobber. Every word is zeroed first, so masked-off lanes are 0."""
    n = shape.count
    zero = "".join(f"mov.b{_reg_bits(shape)} ${i}, 0;\n\t" for i in range(n))
    text = f"{zero}@${n + 1} ld.global{cache}{shape.ptx_type} {shape.operand_list(0)}, [${n}];"
    constraints = ",".join([f"={shape.constraint}"] * n + ["l", "b", MEMORY_CLOBBER])
    return text, constraints


def store_asm(shape: WordShape, cache: str = "") -> tuple[str, str]:
    """Asm text and constraints of a predicated store (cache operator ``cache``, e.g. ``.cg``):
    inputs are the address (``l``), the words, then the predicate (``b``) and the memory
    clobber."""
    n = shape.count
    text = f"@${n + 1} st.global{cache}{shape.ptx_type} [$0], {shape.operand_list(1)};"
    constraints = ",".join(["l"] + [shape.constraint] * n + ["b", MEMORY_CLOBBER])
    return text, constraints


def _reg_bits(shape: WordShape) -> int:
    return shape.register_type.width


#: llvmlite prints asm text unescaped; these characters must be escaped in an LLVM string.
_LLVM_ESCAPES = {"\\": "\\5C", '"': "\\22", "\n": "\\0A", "\t": "\\09"}


def inline_asm(fty: ir.FunctionType, text: str, constraints: str, side_effect: bool):
    """``ir.InlineAsm`` with ``text`` escaped for an LLVM string (llvmlite prints it as is)."""
    escaped = "".join(_LLVM_ESCAPES.get(c, c) for c in text)
    return ir.InlineAsm(fty, escaped, constraints, side_effect=side_effect)


# -- words <-> values ----------------------------------------------------------------------------

def _from_words(b: ir.IRBuilder, words: list, shape: WordShape, ty: ir.Type):
    if shape.count == 1:
        w = words[0]
        if shape.bits == 8:
            w = b.trunc(w, shape.word_type)
        return w if w.type == ty else b.bitcast(w, ty)
    vec = ir.Constant(ir.VectorType(shape.word_type, shape.count), None)
    for i, w in enumerate(words):
        vec = b.insert_element(vec, w, ir.Constant(ir.IntType(32), i))
    return vec if vec.type == ty else b.bitcast(vec, ty)


def _to_words(b: ir.IRBuilder, value, shape: WordShape) -> list:
    if shape.count == 1:
        w = value if value.type == shape.word_type else b.bitcast(value, shape.word_type)
        return [b.zext(w, shape.register_type) if shape.bits == 8 else w]
    vec_ty = ir.VectorType(shape.word_type, shape.count)
    vec = value if value.type == vec_ty else b.bitcast(value, vec_ty)
    return [b.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(shape.count)]


# -- the accesses --------------------------------------------------------------------------------

def predicated_load(b: ir.IRBuilder, ptr, ty: ir.Type, pred, align: int, cache: str = ""):
    """``ty`` loaded from the global ``ptr`` where the i1 ``pred`` holds (None: always), zero
    elsewhere, as one predicated ``ld.global{cache}``; None when this shape is not covered.
    A ``.cv`` load ("fetch again") is volatile: LLVM may not merge or hoist it."""
    shape = word_shape(ty, align)
    if shape is None or not _is_global_pointer(ptr):
        return None
    text, constraints = load_asm(shape, cache)
    regs = [shape.register_type] * shape.count
    ret = regs[0] if shape.count == 1 else ir.LiteralStructType(regs)
    volatile = cache == ".cv"
    asm = inline_asm(ir.FunctionType(ret, [ptr.type, ir.IntType(1)]), text, constraints,
                     side_effect=volatile)
    pred = ir.Constant(ir.IntType(1), 1) if pred is None else pred
    out = b.call(asm, [ptr, pred], attrs=("nounwind",) if volatile else ("nounwind", "readonly"))
    words = [out] if shape.count == 1 else [b.extract_value(out, i) for i in range(shape.count)]
    return _from_words(b, words, shape, ty)


def predicated_store(b: ir.IRBuilder, ptr, value, pred, align: int, cache: str = "") -> bool:
    """Store ``value`` to the global ``ptr`` where the i1 ``pred`` holds (None: always), as one
    predicated ``st.global{cache}``; False (nothing emitted) when this shape is not covered."""
    shape = word_shape(value.type, align)
    if shape is None or not _is_global_pointer(ptr):
        return False
    text, constraints = store_asm(shape, cache)
    pred = ir.Constant(ir.IntType(1), 1) if pred is None else pred
    words = _to_words(b, value, shape)
    fty = ir.FunctionType(ir.VoidType(), [ptr.type] + [w.type for w in words] + [ir.IntType(1)])
    asm = inline_asm(fty, text, constraints, side_effect=True)
    b.call(asm, [ptr, *words, pred], attrs=("nounwind",))
    return True
