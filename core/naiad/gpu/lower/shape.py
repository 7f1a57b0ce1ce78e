"""Shape ops and layout conversions: index mapping between register lists.

``make_range``/``splat`` create registers from coordinates; ``broadcast``, ``expand_dims``,
``trans``, ``reshape``, ``convert_layout``, ``join`` and ``split`` are gathers: a register
relabelling when every thread already holds what it needs (see :mod:`naiad.gpu.movement`),
a round trip through shared memory otherwise.
"""
from __future__ import annotations

from ..linear_layout import LinearLayout
from ..movement import (SLICE_ATTR, gather_views, join_relabel, relabel_map, smem_itemsize,
                        split_relabel)
from .context import KernelLowering, lowers
from .shared import smem_read, smem_write, through_shared
from .types import i32


@lowers("make_range")
def lower_make_range(kl: KernelLowering, op) -> None:
    r = op.results[0]
    ll = kl.linear(r)
    base = kl.thread_coords(ll)[0]
    start = op.attrs["start"]
    b = kl.b
    out = []
    for reg in range(ll.in_size("register")):
        c = kl.reg_coords(ll, reg)[0]
        value = b.xor(base, i32(c)) if c else base
        out.append(b.add(value, i32(start)) if start else value)
    kl.set(r, out)


@lowers("splat")
def lower_splat(kl: KernelLowering, op) -> None:
    x = kl.get(op.operands[0])[0]
    kl.set(op.results[0], [x] * kl.num_regs(op.results[0]))


@lowers("hint")
def lower_hint(kl: KernelLowering, op) -> None:
    src = op.operands[0]
    if src.type != op.results[0].type:
        return lower_gather(kl, op)
    kl.set(op.results[0], kl.get(src))


@lowers("convert_layout", "broadcast", "expand_dims", "trans", "reshape")
def lower_gather(kl: KernelLowering, op) -> None:
    [(idx, src_ll, view)] = gather_views(op)
    vals = kl.get(op.operands[idx])
    kl.set(op.results[0], gather(kl, vals, src_ll, view, op.results[0].type.scalar))


def gather(kl: KernelLowering, vals: list, src_ll: LinearLayout, view: LinearLayout,
           elem) -> list:
    mapping = relabel_map(src_ll, view)
    if mapping is not None:
        return [vals[i] for i in mapping]
    if not op_has_scratch(kl):
        raise kl.error("internal: a gather needs shared memory but the op has no scratch "
                       "(run the allocation pass)")
    op = kl.current_op
    slices = int(op.attrs.get(SLICE_ATTR, 0)) if op is not None else 0
    return through_shared(kl, vals, src_ll, view, elem, slices=slices)


def op_has_scratch(kl: KernelLowering) -> bool:
    op = kl.current_op
    return op is None or bool(op.attrs.get("scratch"))


@lowers("split")
def lower_split(kl: KernelLowering, op) -> None:
    views = gather_views(op)
    vals = kl.get(op.operands[0])
    elem = op.results[0].type.scalar
    maps = [split_relabel(src, view, k) for k, (_, src, view) in enumerate(views)]
    if all(m is not None for m in maps):
        for r, m in zip(op.results, maps):
            kl.set(r, [vals[i] for i in m])
        return
    src = views[0][1]
    smem_write(kl, vals, src, elem)
    kl.ti.barrier(kl.b)
    for k, (r, (_, _, view)) in enumerate(zip(op.results, views)):
        kl.set(r, smem_read(kl, view, elem, xor=k))


@lowers("join")
def lower_join(kl: KernelLowering, op) -> None:
    a, bv = op.operands
    res = op.results[0]
    a_ll, res_ll = kl.linear(a), kl.linear(res)
    inputs = [kl.get(a), kl.get(bv)]
    mapping = join_relabel(a_ll, res_ll)
    if mapping is not None:
        kl.set(res, [inputs[k][r] for k, r in mapping])
        return
    elem = res.type.scalar
    # input element c is result element (c, k): index 2 * index(c) + k
    as_result = LinearLayout(a_ll.insert_out_dim(a_ll.rank).bases, res.type.shape)
    for k in (0, 1):
        smem_write(kl, inputs[k], as_result, elem, xor=k)
    kl.ti.barrier(kl.b)
    kl.set(res, smem_read(kl, res_ll, elem))


@lowers("gather")
def lower_gather(kl: KernelLowering, op) -> None:
    """Write the source row-major to shared memory, wait, then each thread reads the elements
    its index registers name (0 where an index is outside the axis)."""
    from llvmlite import ir

    src, index = op.operands
    res = op.results[0]
    axis = op.attrs["axis"]
    elem = src.type.scalar
    smem_write(kl, kl.get(src), kl.linear(src), elem)
    kl.ti.barrier(kl.b)
    b = kl.b
    ll = kl.linear(res)               # the index's layout (layout assignment keeps them equal)
    base = kl.thread_coords(ll)
    shape = src.type.shape
    strides = [1] * len(shape)
    for d in reversed(range(len(shape) - 1)):
        strides[d] = strides[d + 1] * shape[d + 1]
    size = smem_itemsize(elem)
    it = index.type.scalar
    lt = kl.ltype(elem)
    out = []
    for r, idx in enumerate(kl.get(index)):
        if idx.type.width > 32:
            in_range = b.icmp_unsigned("<", idx, ir.Constant(idx.type, shape[axis]))
            idx = b.trunc(idx, ir.IntType(32))
        else:
            if idx.type.width < 32:
                idx = b.zext(idx, ir.IntType(32)) if it.is_unsigned else \
                    b.sext(idx, ir.IntType(32))
            in_range = b.icmp_unsigned("<", idx, i32(shape[axis]))
        coords = [b.xor(c, i32(rc)) for c, rc in zip(base, kl.reg_coords(ll, r))]
        coords[axis] = b.select(in_range, idx, i32(0))
        flat = i32(0)
        for c, st in zip(coords, strides):
            flat = b.add(flat, b.mul(c, i32(st)))
        addr = kl.smem_ptr(b.mul(flat, i32(size)))
        value = b.load(addr, typ=kl.mtype(elem), align=size)
        if lt != value.type:          # i1 is a byte in memory
            value = b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        out.append(b.select(in_range, value, ir.Constant(lt, None)))   # None: zero
    kl.set(res, out)
