"""Reductions: within each thread, then across lanes by shuffles, then across warps through
shared memory.

Every step works on the layout's linear form. Registers whose coordinates differ only along
the axis are combined in order of the axis coordinate; a lane (warp) bit whose basis moves along
the axis only -- and independently of the bits already combined, so broadcast copies are never
counted twice -- is combined with a butterfly shuffle (with partial results exchanged through
shared memory). Every thread ends with the full result of each of its output elements, which
is what the result's ``slice`` layout (or a scalar) says it holds.
"""
from __future__ import annotations

from ..linear_layout import Echelon
from ..movement import reduce_scratch_layout, reduce_warp_bits, smem_itemsize
from .context import KernelLowering, lowers
from .shuffle import shuffle_xor
from .types import i32


def _axis_only(v, axis) -> bool:
    return bool(v[axis]) and not any(c for d, c in enumerate(v) if d != axis)


@lowers("reduce")
def lower_reduce(kl: KernelLowering, op) -> None:
    axis = op.attrs["axis"]
    region = op.regions[0].block
    ll = kl.linear(op.operands[0])
    inputs = [kl.get(v) for v in op.operands]
    b = kl.b

    def combine(acc, new):
        return tuple(kl.inline_region(region, list(acc) + list(new)))

    # 1. within the thread: one accumulator per distinct off-axis register coordinate
    groups: dict[tuple, dict[int, int]] = {}
    for r in range(ll.in_size("register")):
        c = kl.reg_coords(ll, r)
        key = c[:axis] + (0,) + c[axis + 1:]
        groups.setdefault(key, {}).setdefault(c[axis], r)
    accs: dict[tuple, tuple] = {}
    for key, members in groups.items():
        regs = [members[a] for a in sorted(members)]
        acc = tuple(inp[regs[0]] for inp in inputs)
        for r in regs[1:]:
            acc = combine(acc, tuple(inp[r] for inp in inputs))
        accs[key] = acc

    # 2. across lanes
    ech = Echelon()
    for v in ll.bases.get("register", ()):
        if _axis_only(v, axis):
            ech.add(v[axis])
    for i, v in enumerate(ll.bases.get("lane", ())):
        if not v[axis]:
            continue
        if not _axis_only(v, axis):
            raise kl.error(f"internal: lane basis {v} mixes the reduction axis with others")
        if not ech.add(v[axis]):
            continue  # a broadcast copy of lanes already combined
        for key, acc in accs.items():
            accs[key] = combine(acc, tuple(shuffle_xor(kl, x, 1 << i) for x in acc))

    # 3. across warps, through shared memory
    bits = reduce_warp_bits(ll, axis)
    if bits:
        offsets, _ = reduce_scratch_layout(op)
        parts = 1 << len(bits)
        slot = i32(0)
        for j, bit in enumerate(bits):
            sel = b.and_(b.lshr(kl.warp, i32(bit)), i32(1))
            slot = b.or_(slot, b.shl(sel, i32(j)))
        out_ll = ll.drop_out_dim(axis)
        thread = kl.thread_flat(out_ll)
        sizes = [smem_itemsize(v.type.scalar) for v in op.operands]
        mtypes = [kl.mtype(v.type.scalar) for v in op.operands]

        def addr(key, k, part):
            idx = b.xor(thread, i32(out_ll.flatten(key[:axis] + key[axis + 1:])))
            cell = b.add(b.mul(idx, i32(parts)), part)
            return kl.smem_ptr(b.add(b.mul(cell, i32(sizes[k])), i32(offsets[k])))

        for key, acc in accs.items():
            for k, x in enumerate(acc):
                b.store(_to_mem(kl, x), addr(key, k, slot), align=sizes[k])
        kl.ti.barrier(b)
        for key in accs:
            acc = None
            for p in range(parts):
                vals = tuple(_from_mem(kl, b.load(addr(key, k, i32(p)), typ=mtypes[k],
                                                  align=sizes[k]), op.operands[k])
                             for k in range(len(inputs)))
                acc = vals if acc is None else combine(acc, vals)
            accs[key] = acc

    # 4. results
    if len(op.operands[0].type.shape) == 1:
        [acc] = accs.values()
        for r, x in zip(op.results, acc):
            kl.set(r, [x])
        return
    res_ll = kl.linear(op.results[0])
    _check_result_layout(kl, ll, res_ll, axis)
    for k, r in enumerate(op.results):
        regs = []
        for reg in range(res_ll.in_size("register")):
            c = kl.reg_coords(res_ll, reg)
            regs.append(accs[c[:axis] + (0,) + c[axis:]][k])
        kl.set(r, regs)


def _check_result_layout(kl, ll, res_ll, axis) -> None:
    for dim in ("lane", "warp"):
        want = [v[:axis] + v[axis + 1:] if not v[axis] else tuple(0 for _ in v[1:])
                for v in ll.bases.get(dim, ())]
        if list(res_ll.bases.get(dim, ())) != want:
            raise kl.error(f"internal: reduction result layout's {dim} bases "
                           f"{list(res_ll.bases.get(dim, ()))} do not match the input's {want}")


def _to_mem(kl, x):
    from .types import I1, I8

    return kl.b.zext(x, I8) if x.type == I1 else x


def _from_mem(kl, x, v):
    from llvmlite import ir

    from .types import I1, I8

    if kl.ltype(v.type.scalar) == I1:
        return kl.b.icmp_unsigned("!=", x, ir.Constant(I8, 0))
    return x
