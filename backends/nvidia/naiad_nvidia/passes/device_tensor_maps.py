"""Tensor maps of descriptors made in the kernel (``tl.make_tensor_descriptor``), built on the
device: the TMA ring and the TMA store then move their blocks as they move a host
``TensorDescriptor``'s (:mod:`naiad_nvidia.passes.tma_ring`).

Why on the device: the base, shape and strides of such a descriptor are run-time values of the
kernel -- in tutorial 08 they are loaded from memory per group -- so no host-side map can
exist. As Triton does, each program writes its maps into global scratch memory that the
launch takes from the user's allocator (``naiad.set_allocator``; Triton's
``triton.set_allocator``): ``128 * maps`` bytes per program, one 128-byte slot per
``descriptor_make`` op (see :mod:`naiad_nvidia.ir.tensormap_op`). The kernel gets the buffer
as a hidden last parameter; its attribute ``global_scratch`` (bytes per program) becomes the
compiled kernel's ``metadata["global_scratch_size"]``, which tells the launch to allocate.

Two passes around the rings:

* :func:`check_device_maps` (before them): gives each access its own id (a helper inlined
  twice repeats them: :func:`relink_accesses`); on a target without TMA the in-kernel accesses'
  annotations are dropped (nothing to remark: the masked accesses are the lowering there); on
  sm_90 an access whose block TMA cannot move (element type, box) keeps its masked access and
  says why (``portable``, reported by ``lower_descriptor_accesses``); a 2-D store through any
  map that ``tma_store_rule`` cannot prove exact is marked ``may_widen`` (the rings then leave
  no shared memory for its TMA store buffer: it will be the masked store).
* :func:`build_device_maps` (after ``lower_descriptor_accesses``): each ``descriptor_make``
  some TMA copy or store reads becomes ``nvidia.tensormap_make``; the others are erased.
"""
from __future__ import annotations

from naiad.backend import remarks
from naiad.ir import Operation
from naiad.ir import types as irt

from ..ir.tensormap_op import TENSORMAP_MAKE_OP
from ..runtime.tensor_map import MAP_BYTES, NotTmaLegal, device_map_fields

MAKE_OP = "descriptor_make"
ACCESS_OP = "descriptor_access"
#: the hidden kernel parameter holding the launch's scratch buffer
SCRATCH_ARG = "naiad_global_scratch"
#: naiad's signature spelling of an IR element type (what the map encoder takes)
_SIG = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "f8e5": "fp8e5",
        "f8e4nv": "fp8e4nv", "i1": "i1"}


def _arch(ctx) -> str:
    return str(getattr(getattr(ctx, "target", None), "arch", ""))


def has_tma(arch: str) -> bool:
    digits = "".join(ch for ch in arch if ch.isdigit())
    return bool(digits) and int(digits) >= 90


def made_by(access: Operation) -> Operation | None:
    """The ``descriptor_make`` op an in-kernel access's map comes from."""
    if not access.attrs.get("map") or not access.operands:
        return None
    made = access.operands[0].defining_op
    return made if made is not None and made.name == MAKE_OP else None


def fields_of(make: Operation, arch: str):
    """The map's compile-time fields (:func:`device_map_fields`) for ``make``."""
    elem = make.operands[0].type.scalar.pointee
    return device_map_fields(_SIG.get(elem.name, elem.name), list(make.attrs["block"]),
                             str(make.attrs.get("padding", "zero")), arch)


def relink_accesses(fn) -> None:
    """Give each ``descriptor_access`` and its memory op an id of their own.

    Why: the language numbers the pair once per source site, so a @jit helper doing
    ``desc.load`` inlined twice (``a = load_tile(a_desc, ..)``, ``b = load_tile(b_desc, ..)``)
    leaves two pairs with one id, and a pass looking the access up by id would move B's block
    through A's map. The language emits each access right after its memory op, and inlining
    keeps that order: an access belongs to the nearest earlier op of its block with its id."""
    fresh = max((int(op.attrs.get("access", 0)) for op in fn.walk()
                 if op.name == ACCESS_OP), default=0) + 1
    for op in list(fn.walk()):
        if op.name != ACCESS_OP:
            continue
        ops = op.parent.ops
        at = ops.index(op)
        for memory in reversed(ops[:at]):
            if memory.attrs.get("descriptor_access") == op.attrs.get("access"):
                memory.attrs["descriptor_access"] = op.attrs["access"] = fresh
                fresh += 1
                break


def check_device_maps(module, ctx=None) -> None:
    """See the module docstring: drop or decline in-kernel accesses TMA will not move (after
    :func:`relink_accesses`)."""
    arch = _arch(ctx)
    tma = has_tma(arch)
    for fn in module.functions.values():
        relink_accesses(fn)
        if tma:
            mark_widening_stores(fn)
        for op in list(fn.walk()):
            if op.name != ACCESS_OP:
                continue
            make = made_by(op)
            if make is None:
                continue
            if not tma:
                op.erase()
                continue
            try:
                fields_of(make, arch)
            except NotTmaLegal as e:
                op.attrs.pop("map", None)
                op.attrs["portable"] = str(e)


def mark_widening_stores(fn) -> None:
    """Mark each 2-D map store a TMA store might widen past the view (``may_widen``: why);
    ``lower_descriptor_accesses`` decides again, on the IR the rings leave."""
    from naiad.backend import axis_info

    from .tma_ring import _memory_op, _store_may_widen

    facts = None
    for op in fn.walk():
        if op.name != ACCESS_OP or op.attrs.get("kind") != "store" or not op.attrs.get("map") \
                or len(op.attrs["block"]) != 2:
            continue
        store = _memory_op(op)
        if store is None or store.name != "store":
            continue
        facts = facts or axis_info.analyze(fn, assume_non_negative=True)
        elem = max(store.operands[1].type.scalar.bitwidth // 8, 1)
        why = _store_may_widen(op, elem, facts)
        if why is not None:
            op.attrs["may_widen"] = why


def build_device_maps(module, ctx=None) -> None:
    """See the module docstring: write the maps TMA reads, erase the rest."""
    arch = _arch(ctx)
    for fn in module.functions.values():   # (device functions are inlined by now)
        makes = [op for op in fn.walk() if op.name == MAKE_OP]
        used = []
        for op in makes:
            if op.results[0].uses:
                used.append(op)
            else:
                op.erase()
        if not used:
            continue
        scratch = fn.body.block.add_arg(irt.PointerType(irt.u8), SCRATCH_ARG)
        fn.arg_attrs.append({"divisibility": 16})
        program_bytes = MAP_BYTES * len(used)
        fn.attrs["global_scratch"] = program_bytes
        fn.attrs["global_scratch_user"] = remarks.where(used[0].loc)
        for slot, op in enumerate(used):
            f = fields_of(op, arch)
            new = Operation(TENSORMAP_MAKE_OP, [scratch] + list(op.operands),
                            [op.results[0].type],
                            {"slot": slot, "program_bytes": program_bytes,
                             "elemtype": f.elemtype, "rank": f.rank,
                             "box_dims": list(f.box_dims),
                             "element_strides": list(f.element_strides),
                             "swizzle": f.swizzle, "fill": f.fill, "elem_bytes": f.elem_bytes},
                            loc=op.loc)
            op.parent.insert_before(op, new)
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
