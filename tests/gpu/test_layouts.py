"""Layouts and their linear forms, checked by brute force over every (register, lane, warp)."""
import itertools

import numpy as np
import pytest

from naiad.errors import IRError
from naiad.gpu.layouts import (BlockedLayout, DotOperandLayout, LinearEncoding, SharedLayout,
                               SliceLayout, blocked_for, parse_layout)
from naiad.gpu.linear_layout import LinearLayout
from naiad.ir.parser import parse_type


def owners(ll: LinearLayout) -> dict:
    """coordinate -> list of (register, lane, warp) holding it, by enumeration."""
    out = {}
    for r in range(ll.in_size("register")):
        for l in range(ll.in_size("lane")):
            for w in range(ll.in_size("warp")):
                out.setdefault(ll.apply(r, l, w), []).append((r, l, w))
    return out


def all_coords(shape):
    return set(itertools.product(*[range(s) for s in shape]))


# -- the DESIGN.md example ----------------------------------------------------------------------

def test_design_example_bits():
    lay = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    ll = lay.to_linear((32, 16))
    assert ll.bases["register"] == ((0, 1), (0, 2))                      # columns 0..3
    assert ll.bases["lane"] == ((0, 4), (0, 8), (1, 0), (2, 0), (4, 0))  # columns 4..15, rows 0..7
    assert ll.bases["warp"] == ((8, 0), (16, 0))                         # rows 8..31
    held = owners(ll)
    assert set(held) == all_coords((32, 16))
    assert all(len(v) == 1 for v in held.values())  # a bijection


def test_design_example_against_formula():
    """Element (row, col) of a blocked layout sits in thread (lane, warp), register r computed
    from the textbook definition (no linear algebra)."""
    spt, tpw, wpc = (1, 4), (8, 4), (4, 1)
    ll = BlockedLayout(spt, tpw, wpc, (1, 0)).to_linear((32, 16))
    for r in range(4):
        for lane in range(32):
            for warp in range(4):
                col = (lane % 4) * 4 + r
                row = (lane // 4) + 8 * warp
                assert ll.apply(r, lane, warp) == (row, col)


def test_repetition_in_registers():
    lay = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    ll = lay.to_linear((64, 32))
    # the 32x16 tile repeats along columns (fastest dim first), then rows
    assert ll.bases["register"] == ((0, 1), (0, 2), (0, 16), (32, 0))
    held = owners(ll)
    assert set(held) == all_coords((64, 32))
    assert all(len(v) == 1 for v in held.values())
    assert ll.is_bijective()


def test_broadcast_smaller_tensor():
    lay = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    ll = lay.to_linear((8, 2))
    held = owners(ll)
    assert set(held) == all_coords((8, 2))
    # 4 registers x 32 lanes x 4 warps = 512 slots hold 16 elements: 32 copies each
    assert all(len(v) == 32 for v in held.values())
    assert ll.is_surjective() and not ll.is_injective()
    # registers 2, 3 repeat registers 0, 1 (column 2..3 wrap to 0..1)
    assert ll.bases["register"] == ((0, 1), (0, 0))
    assert ll.bases["warp"] == ((0, 0), (0, 0))


def test_owner_is_unique_for_broadcast():
    ll = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)).to_linear((8, 2))
    masks = ll.free_masks(("register", "lane", "warp"))
    held = owners(ll)
    for coord, holders in held.items():
        owning = [h for h in holders
                  if not h[0] & masks["register"] and not h[1] & masks["lane"]
                  and not h[2] & masks["warp"]]
        assert len(owning) == 1, coord
        assert ll.solve(coord) == dict(zip(("register", "lane", "warp"), owning[0]))


@pytest.mark.parametrize("shape", [(16,), (128,), (1024,), (4096,)])
@pytest.mark.parametrize("warp", [32, 64])
def test_blocked_1d_covers(shape, warp):
    lay = blocked_for(shape, 4, warp, size_per_thread=(4,))
    ll = lay.to_linear(shape)
    assert ll.in_size("lane") == warp and ll.in_size("warp") == 4
    held = owners(ll)
    assert set(held) == all_coords(shape)
    if shape[0] >= 4 * warp * 4:
        assert all(len(v) == 1 for v in held.values())


@pytest.mark.parametrize("shape", [(1, 1), (2, 64), (64, 2), (32, 32), (128, 16), (4, 4, 8)])
@pytest.mark.parametrize("warp,nw", [(32, 4), (64, 4), (32, 8), (64, 1), (8, 2)])
def test_default_layouts_are_surjective(shape, warp, nw):
    lay = blocked_for(shape, nw, warp)
    ll = lay.to_linear(shape)
    held = owners(ll)
    assert set(held) == all_coords(shape)
    n = ll.in_size("register") * warp * nw
    numel = int(np.prod(shape))
    assert len(ll.bases["lane"]) == warp.bit_length() - 1
    # each element is held equally often; exactly once when the tensor fills the threads
    counts = {len(v) for v in held.values()}
    assert counts == {n // numel}


@pytest.mark.parametrize("dim", [0, 1])
def test_slice_layout(dim):
    parent = BlockedLayout((2, 2), (4, 8), (2, 2), (1, 0))
    full = parent.to_linear((16, 64))
    shape = (64,) if dim == 0 else (16,)
    sl = SliceLayout(dim, parent).to_linear(shape)
    held = owners(sl)
    assert set(held) == all_coords(shape)
    # every thread holds exactly the projections of what it holds in the parent
    for lane in range(32):
        for warp in range(4):
            mine = {sl.apply(r, lane, warp) for r in range(sl.in_size("register"))}
            proj = {tuple(c for d, c in enumerate(full.apply(r, lane, warp)) if d != dim)
                    for r in range(full.in_size("register"))}
            assert mine == proj
    assert all(any(v) for v in sl.bases["register"])  # no duplicate registers


@pytest.mark.parametrize("op_idx,shape", [(0, (32, 8)), (1, (8, 64)), (0, (64, 16))])
def test_dot_operand_layout_holds_all_of_k(op_idx, shape):
    parent = BlockedLayout((2, 4), (4, 8), (2, 2), (1, 0))
    acc_shape = (shape[0], 64) if op_idx == 0 else (32, shape[1])
    acc = parent.to_linear(acc_shape)
    op = DotOperandLayout(op_idx, parent).to_linear(shape)
    k = shape[1] if op_idx == 0 else shape[0]
    for lane in range(32):
        for warp in range(4):
            held = {op.apply(r, lane, warp) for r in range(op.in_size("register"))}
            for r in range(acc.in_size("register")):
                m, n = acc.apply(r, lane, warp)
                for kk in range(k):
                    need = (m, kk) if op_idx == 0 else (kk, n)
                    assert need in held


@pytest.mark.parametrize("vec,per_phase,max_phase", [(1, 1, 1), (4, 1, 8), (8, 2, 4), (2, 1, 4)])
@pytest.mark.parametrize("shape", [(8, 32), (16, 64), (32, 16)])
def test_shared_layout_swizzle(vec, per_phase, max_phase, shape):
    lay = SharedLayout(vec, per_phase, max_phase, (1, 0))
    ll = lay.to_linear(shape)
    assert ll.is_bijective()
    rows, cols = shape
    seen = set()
    for off in range(rows * cols):
        r, c = ll.apply(offset=off)
        # the defining formula: element (r, c) is stored in row r at the swizzled column
        groups = max(cols // vec, 1)
        col = (((c // vec) ^ ((r // per_phase) % max_phase)) % groups) * vec + c % vec
        assert off == r * cols + col
        seen.add((r, c))
    assert seen == all_coords(shape)


def test_linear_encoding_round_trip_and_transforms():
    base = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)).to_linear((32, 16))
    t = base.permute([1, 0])
    for r in range(4):
        for lane in range(32):
            for warp in range(4):
                a, b = base.apply(r, lane, warp)
                assert t.apply(r, lane, warp) == (b, a)
    rs = base.reshape((512,))
    for r in range(4):
        for lane in range(32):
            a, b = base.apply(r, lane, 0)
            assert rs.apply(r, lane, 0) == (a * 16 + b,)
    enc = LinearEncoding.from_linear(rs)
    assert enc.to_linear((512,)) == rs
    assert parse_layout(str(enc)) == enc


@pytest.mark.parametrize("layout", [
    BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)),
    SliceLayout(1, BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))),
    DotOperandLayout(0, BlockedLayout((2, 2), (4, 8), (4, 1), (1, 0)), 0),
    SharedLayout(4, 1, 8, (1, 0)),
    LinearEncoding(((0, 1),), ((1, 0), (2, 0)), ()),
    SliceLayout(0, SliceLayout(2, BlockedLayout((1, 1, 2), (2, 4, 4), (1, 2, 2), (2, 1, 0)))),
])
def test_print_parse_round_trip(layout):
    text = str(layout)
    assert text.startswith(f"#{layout.mnemonic}<")
    assert parse_layout(text) == layout
    t = parse_type(f"tensor<32x16xf32, {text}>")
    assert t.layout == layout and str(t) == f"tensor<32x16xf32, {text}>"


@pytest.mark.parametrize("text,msg", [
    ("#blocked<sizePerThread = [1, 3], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
     "order = [1, 0]>", "power"),
    ("#blocked<sizePerThread = [1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
     "order = [1, 0]>", "2 entries"),
    ("#blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
     "order = [1, 1]>", "permutation"),
    ("#blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1]>",
     "order"),
    ("#slice<dim = 0, parent = 3>", "parent"),
    ("#dot_operand<opIdx = 2, parent = #blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], "
     "warpsPerCTA = [4, 1], order = [1, 0]>>", "opIdx"),
    ("#shared<vec = 3, perPhase = 1, maxPhase = 1, order = [1, 0]>", "power"),
    ("#blocked<sizePerThread = [1, 1], bogus = 1>", "bogus"),
])
def test_bad_layout_text(text, msg):
    with pytest.raises(IRError, match=msg):
        parse_layout(text)


def test_rank_mismatch_is_an_error():
    with pytest.raises(IRError, match="rank"):
        BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)).to_linear((16,))
    with pytest.raises(IRError, match="power-of-two"):
        BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)).to_linear((12, 16))


@pytest.mark.parametrize("layout, shape", [
    (BlockedLayout((1, 8), (4, 8), (4, 1), (1, 0)), (128, 64)),
    (BlockedLayout((2, 4), (8, 4), (2, 2), (0, 1)), (32, 256)),
    (BlockedLayout((4,), (32,), (2,), (0,)), (64,)),              # registers repeat
])
def test_flat_values_table_is_apply_flat_per_input(layout, shape):
    """The cached per-input table (``flat_values``, used by relabelling and shared-memory
    addressing) holds exactly ``apply_flat`` of each input, for every dim of the layout."""
    ll = layout.to_linear(shape)
    for dim in ll.in_dims:
        table = ll.flat_values(dim)
        assert table == tuple(ll.apply_flat(**{dim: i}) for i in range(ll.in_size(dim)))
        assert ll.flat_values(dim) is table                       # kept with the layout
    assert ll.flat_values("no-such-dim") == (0,)
