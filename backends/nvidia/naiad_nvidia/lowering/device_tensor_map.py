"""LLVM lowering of ``nvidia.tensormap_make`` (:mod:`naiad_nvidia.ir.tensormap_op`): thread 0
writes a descriptor's ``CUtensorMap`` into the program's slot of the global scratch buffer
with PTX ``tensormap.replace`` (PTX ISA 8.3, sm_90a) and fences it for the tensor-map proxy.

A base or stride TMA cannot use (not 16-byte aligned) traps: the launch fails. Every field is set explicitly on zeroed memory, so no host-encoded template is needed: base
address, rank (the field holds rank - 1), box dims, global dims, global byte strides, element
strides, element type, interleave (none), swizzle and out-of-bounds fill (the PTX ISA's codes,
:data:`naiad_nvidia.runtime.tensor_map.PTX_ELEMTYPES` and its neighbours).
"""
from __future__ import annotations

from llvmlite import ir

from naiad.backend import i32

from ..runtime.tensor_map import MAP_BYTES
from .tma import I64, _asm

#: what each ``tensormap.replace`` writes to (the map lives in global memory)
_REPLACE = "tensormap.replace.tile.{field}.global.b1024.{bits}"


def _program_index(kl):
    """The program's linear index (x fastest), as i64."""
    b, ti = kl.b, kl.ti
    x, y, z = (ti.program_id(b, a) for a in range(3))
    nx, ny = ti.num_programs(b, 0), ti.num_programs(b, 1)
    linear = b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))
    return b.zext(linear, I64)


def replace_lines(rank_field: int, box_dims, element_strides, elemtype: int, swizzle: int,
                  fill: int) -> list[tuple[str, str]]:
    """``(PTX, constraints)`` of the field writes whose values are compile-time constants
    (operand ``$0``: the map's address; ``$1``: thread 0's predicate)."""
    lines = [(f"@$1 {_REPLACE.format(field='rank', bits='b32')} [$0], {rank_field};", "l,b")]
    for i, box in enumerate(box_dims):
        lines.append((f"@$1 {_REPLACE.format(field='box_dim', bits='b32')} [$0], {i}, {box};",
                      "l,b"))
    for i, stride in enumerate(element_strides):
        lines.append((f"@$1 {_REPLACE.format(field='element_stride', bits='b32')} "
                      f"[$0], {i}, {stride};", "l,b"))
    for field, value in (("elemtype", elemtype), ("interleave_layout", 0),
                         ("swizzle_mode", swizzle), ("fill_mode", fill)):
        lines.append((f"@$1 {_REPLACE.format(field=field, bits='b32')} [$0], {value};", "l,b"))
    return lines


def _check_alignment(kl, op, base, strides) -> None:
    """TMA needs a 16-byte aligned base and byte strides that are multiples of 16 (a map
    breaking that may fault or move wrong data): such a launch traps instead (the launch fails;
    ``trap``, not ``__assertfail``: a call would make ptxas serialize every wgmma.mma_async of
    the kernel)."""
    b = kl.b
    elem = ir.Constant(I64, int(op.attrs["elem_bytes"]))
    bits = b.ptrtoint(base, I64)
    for stride in strides[:-1]:
        bits = b.or_(bits, b.mul(stride, elem))
    bad = b.icmp_unsigned("!=", b.and_(bits, ir.Constant(I64, 15)), ir.Constant(I64, 0))
    _asm(b, "@$0 trap;", [bad], constraints="b")


def lower_tensormap_make(kl, op) -> None:
    b = kl.b
    a = op.attrs
    rank = int(a["rank"]) + 1
    values = [kl.get(v)[0] for v in op.operands]
    scratch, base, shapes, strides = values[0], values[1], values[2:2 + rank], values[2 + rank:]
    offset = b.add(b.mul(_program_index(kl), ir.Constant(I64, int(a["program_bytes"]))),
                   ir.Constant(I64, int(a["slot"]) * MAP_BYTES))
    address = b.add(b.ptrtoint(scratch, I64), offset)
    _check_alignment(kl, op, base, strides)
    first = kl.first_thread_pred()
    # a bulk store issued earlier may still read the map this op rewrites (a loop making
    # descriptors, tutorial 08): wait until those stores are done
    _asm(b, "@$0 cp.async.bulk.wait_group 0;", [first], constraints="b")
    zero = ir.Constant(I64, 0)
    for word in range(0, MAP_BYTES, 16):
        _asm(b, f"@$2 st.global.v2.b64 [$0+{word}], {{$1, $1}};", [address, zero, first],
             constraints="l,l,b")
    _asm(b, f"@$2 {_REPLACE.format(field='global_address', bits='b64')} [$0], $1;",
         [address, b.ptrtoint(base, I64), first], constraints="l,l,b")
    for text, cons in replace_lines(int(a["rank"]), a["box_dims"], a["element_strides"],
                                    int(a["elemtype"]), int(a["swizzle"]), int(a["fill"])):
        _asm(b, text, [address, first], constraints=cons)
    # dims and strides innermost first; dimension 0's stride is the element size (implicit)
    for i, dim in enumerate(reversed(shapes)):
        _asm(b, f"@$2 {_REPLACE.format(field='global_dim', bits='b32')} [$0], {i}, $1;",
             [address, dim, first], constraints="l,r,b")
    elem = ir.Constant(I64, int(a["elem_bytes"]))
    for i, stride in enumerate(reversed(strides[:-1])):
        _asm(b, f"@$2 {_REPLACE.format(field='global_stride', bits='b64')} [$0], {i}, $1;",
             [address, b.mul(stride, elem), first], constraints="l,l,b")
    _asm(b, "@$0 fence.proxy.tensormap::generic.release.gpu;", [first], constraints="b")
    _asm(b, f"@$1 fence.proxy.tensormap::generic.acquire.gpu [$0], {MAP_BYTES};",
         [address, first], constraints="l,b")
    kl.set(op.results[0], [b.inttoptr(address, kl.ltype(op.results[0].type))])


LOWERINGS = {"nvidia.tensormap_make": lower_tensormap_make}
