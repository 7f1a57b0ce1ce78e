"""LLVM lowering of ``amd.buffer_load`` / ``amd.buffer_store`` (see :mod:`naiad_amd.ir.buffer_ops`).

Per access the op's uniform base becomes a buffer resource (``TargetInfo.buffer_resource``; on
AMD GPUs ``llvm.amdgcn.make.buffer.rsrc``: base, ``num_records``, the arch's format/OOB flags --
LLVM keeps the descriptor in SGPRs and shares it between accesses of one base). Each vector of
``vec`` registers is one ``buffer_load``/``buffer_store`` of up to 16 bytes at byte offset
``offset * size``; a masked-off lane gets the offset ``2**31``, past ``num_records``, so the
hardware returns 0 (loads) or writes nothing (stores) without a branch. A load's ``other``
(unless it is +0) is selected afterwards, as for ``load``. Stores are done by the elements'
owners only (a broadcast element is written once).

The memory itself is reached through three ``TargetInfo`` members -- ``buffer_resource(b, base)``,
``buffer_load(b, rsrc, byte_offset, type)``, ``buffer_store(b, rsrc, byte_offset, value)`` -- so
the host simulator can execute the same lowering with its own model of the range check.
"""
from __future__ import annotations

import math

from llvmlite import ir

from naiad.backend import I1, I8, i32, vector_run

from ..passes.buffer_range import OUT_OF_RANGE

#: the widest buffer access (``buffer_load_dwordx4``)
_MAX_BYTES = 16


def _bytes(mt) -> int:
    if isinstance(mt, ir.IntType):
        return max(mt.width // 8, 1)
    return {"half": 2, "bfloat": 2, "float": 4, "double": 8}[str(mt)]


def _word_type(total: int):
    """The integer type buffer intrinsics move ``total`` bytes as (i8 .. <4 x i32>)."""
    if total <= 4:
        return ir.IntType(8 * total)
    return ir.VectorType(ir.IntType(32), total // 4)


def _is_positive_zero(c) -> bool:
    if not isinstance(c, ir.Constant):
        return False
    v = c.constant
    if v is None:
        return True
    if isinstance(v, float):
        return v == 0.0 and math.copysign(1.0, v) > 0
    return isinstance(v, int) and not isinstance(v, bool) and v == 0


def _byte_offset(b, offset, size: int, pred):
    """``offset * size``, or the out-of-range offset where ``pred`` is false."""
    byte = b.mul(offset, i32(size)) if size != 1 else offset
    # 2**31 as an unsigned offset; LLVM's i32 constants are printed signed
    return byte if pred is None else b.select(pred, byte, i32(OUT_OF_RANGE - (1 << 32)))


def _access_vec(kl, offsets_value, n: int, size: int, attrs) -> int:
    if n == 1:
        return 1
    vec = vector_run(kl.linear(offsets_value), int(attrs.get("vec", 1)))
    while vec > 1 and vec * size > _MAX_BYTES:
        vec //= 2
    return vec


def lower_buffer_load(kl, op) -> None:
    b, ti = kl.b, kl.ti
    base = kl.get(op.operands[0])[0]
    offsets = kl.get(op.operands[1])
    mask = kl.get(op.operands[2]) if len(op.operands) > 2 else None
    other = kl.get(op.operands[3]) if len(op.operands) > 3 else None
    if other is not None and all(_is_positive_zero(o) for o in other):
        other = None  # the hardware's 0 already is the value
    res = op.results[0]
    mt, lt = kl.mtype(res.type.scalar), kl.ltype(res.type.scalar)
    size = _bytes(mt)
    n = len(offsets)
    vec = _access_vec(kl, op.operands[1], n, size, op.attrs)
    rsrc = ti.buffer_resource(b, base)
    want = mt if vec == 1 else ir.VectorType(mt, vec)
    out: list = [None] * n
    for r in range(0, n, vec):
        pred = mask[r] if mask else None
        word = ti.buffer_load(b, rsrc, _byte_offset(b, offsets[r], size, pred), _word_type(vec * size))
        loaded = word if word.type == want else b.bitcast(word, want)
        for i in range(vec):
            v = loaded if vec == 1 else b.extract_element(loaded, i32(i))
            if lt == I1:
                v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
            if other is not None:
                v = b.select(pred, v, other[r + i])  # the mask is uniform over the vector
            out[r + i] = v
    kl.set(res, out)


def lower_buffer_store(kl, op) -> None:
    b, ti = kl.b, kl.ti
    base = kl.get(op.operands[0])[0]
    offsets, values = kl.get(op.operands[1]), kl.get(op.operands[2])
    mask = kl.get(op.operands[3]) if len(op.operands) > 3 else None
    mt = kl.mtype(op.operands[2].type.scalar)
    size = _bytes(mt)
    ll = kl.linear(op.operands[1])
    owner = kl.owner_pred(ll)
    owners = set(kl.owner_registers(ll))
    n = len(offsets)
    vec = _access_vec(kl, op.operands[1], n, size, op.attrs)
    rsrc = ti.buffer_resource(b, base)
    for r in range(0, n, vec):
        if r not in owners:
            continue
        pred = mask[r] if mask else None
        if owner is not None:
            pred = owner if pred is None else b.and_(pred, owner)
        elems = [b.zext(v, I8) if v.type == I1 else v for v in values[r:r + vec]]
        if vec == 1:
            data = elems[0]
        else:
            data = ir.Constant(ir.VectorType(mt, vec), None)
            for i, v in enumerate(elems):
                data = b.insert_element(data, v, i32(i))
        word_type = _word_type(vec * size)
        if data.type != word_type:
            data = b.bitcast(data, word_type)
        ti.buffer_store(b, rsrc, _byte_offset(b, offsets[r], size, pred), data)


LOWERINGS = {"amd.buffer_load": lower_buffer_load, "amd.buffer_store": lower_buffer_store}
