"""LLVM lowering of the thread-private ``cp.async`` ring of :mod:`naiad_nvidia.passes.stream_loads`.

``nvidia.stream_copy(ptr, valid, slot[, mask])``: each thread copies every chunk of ``vec``
registers of its own with ``@valid cp.async.{cg|ca}.shared.global [dst], [src], chunk, size``
(``size`` is 0 where the chunk is masked off: zero fill; ``.cg``, bypassing L1, for 16-byte
chunks as Triton does, ``.ca`` for 4 and 8). ``nvidia.stream_read(slot[, mask, other])`` reads
the same chunks back with one shared load each and selects ``other`` where masked. Chunk ``c``
of thread ``t`` sits at ``private_offset + tile_offset + slot * slot_bytes + (c * threads + t) *
chunk``: a warp's accesses are consecutive words (no bank conflicts), and no thread touches
another's bytes, so no barrier is needed.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import I32, i32

from .async_copy_lowering import _asm
from .predicated_memory import MEMORY_CLOBBER, _from_words, inline_asm, word_shape


def _addresses(kl, op, nregs: int, chunk: int, slot) -> list:
    """The 32-bit shared-window address of each chunk (in register order). 32 bits, as
    ``ld.shared``/``cp.async`` accept, rather than LLVM's 64-bit shared pointers: fewer
    registers and no 64-bit adds per chunk."""
    b = kl.b
    threads = kl.num_warps * kl.warp_size
    window = kl.cached("smem32", lambda: kl.entry.ptrtoint(kl.smem, I32))
    base = b.add(b.mul(kl.get(slot)[0], i32(int(op.attrs["slot_bytes"]))),
                 i32(int(op.attrs["private_offset"]) + int(op.attrs.get("tile_offset", 0))))
    mine = b.add(b.add(window, base), b.mul(kl.tid, i32(chunk)))
    vec = int(op.attrs["vec"])
    return [b.add(mine, i32(c * threads * chunk)) for c in range(nregs // vec)]


def lower_stream_copy(kl, op) -> None:
    b = kl.b
    ptr, valid, slot = op.operands[:3]
    mask = kl.get(op.operands[3]) if len(op.operands) > 3 else None
    ptrs = kl.get(ptr)
    vec = int(op.attrs["vec"])
    chunk = vec * int(op.attrs["elem_bytes"])
    level = "cg" if chunk == 16 else "ca"
    text = f"@$3 cp.async.{level}.shared.global [$0], [$1], {chunk}, $2;"
    pred = kl.get(valid)[0]
    for c, dst in enumerate(_addresses(kl, op, len(ptrs), chunk, slot)):
        r = c * vec
        size = i32(chunk) if mask is None else b.select(mask[r], i32(chunk), i32(0))
        _asm(b, text, [dst, ptrs[r], size, pred], [I32, ptrs[r].type, I32, ir.IntType(1)],
             "r,l,r,b")


def _read_chunk(b, address, ty, chunk: int):
    """``ty`` (a scalar or vector of ``chunk`` bytes) from a shared address, as one ``ld.shared``
    that LLVM keeps in place (after the preceding ``cp.async.wait_group``)."""
    shape = word_shape(ty, chunk)
    regs = [shape.register_type] * shape.count
    ret = regs[0] if shape.count == 1 else ir.LiteralStructType(regs)
    text = f"ld.shared{shape.ptx_type} {shape.operand_list(0)}, [${shape.count}];"
    cons = ",".join([f"={shape.constraint}"] * shape.count + ["r", MEMORY_CLOBBER])
    out = b.call(inline_asm(ir.FunctionType(ret, [I32]), text, cons, side_effect=True),
                 [address], attrs=("nounwind",))
    words = [out] if shape.count == 1 else [b.extract_value(out, i) for i in range(shape.count)]
    return _from_words(b, words, shape, ty)


def lower_stream_read(kl, op) -> None:
    b = kl.b
    res = op.results[0]
    mask = kl.get(op.operands[1]) if len(op.operands) > 1 else None
    other = kl.get(op.operands[2]) if len(op.operands) > 2 else None
    mt = kl.mtype(res.type.scalar)
    vec = int(op.attrs["vec"])
    chunk = vec * int(op.attrs["elem_bytes"])
    n = kl.num_regs(res)
    out: list = [None] * n
    for c, src in enumerate(_addresses(kl, op, n, chunk, op.operands[0])):
        loaded = _read_chunk(b, src, mt if vec == 1 else ir.VectorType(mt, vec), chunk)
        for i in range(vec):
            v = loaded if vec == 1 else b.extract_element(loaded, i32(i))
            if other is not None:   # the mask is uniform over a chunk (vec was chosen so)
                v = b.select(mask[c * vec], v, other[c * vec + i])
            out[c * vec + i] = v
    kl.set(res, out)


LOWERINGS = {"nvidia.stream_copy": lower_stream_copy, "nvidia.stream_read": lower_stream_read}
