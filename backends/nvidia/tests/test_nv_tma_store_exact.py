"""TMA descriptor stores never write outside the view (``passes/tma_store_rule``).

Without a GPU: the rule under both clipping hypotheses; which path each store takes in the PTX
(``cp.async.bulk.tensor`` store or the masked one) for in-kernel maps (constexpr, specialised
and unknown column counts) and host maps (the launch's ``block_gcd`` fact), and the remark at
the store's line; the host fact in the specialisation key (a padded view and an exact one
compile two variants, a repeat compiles none); the reference backend's results unchanged. On
the H200 (``gpu``): padding columns and guard rows poisoned, both map kinds, all survive.
"""
from __future__ import annotations

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.tools.tensor_descriptor import TensorDescriptor
from naiad_nvidia.passes import tma_store_rule
from naiad_nvidia.passes.tma_store_rule import tma_store_is_exact

from test_nv_descriptor_launch import descriptor_gpu  # noqa: F401  (fixture)
from test_nv_tma import compile_companion

TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta"


@naiad.jit
def _program_block(x_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """This program's [BM, BN] block of the dense x (one block per program) and its offset."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    return pm * BM, pn * BN, tl.load(x_ptr + rows[:, None] * (BN * tl.num_programs(1))
                                     + cols[None, :])


@naiad.jit
def store_in_kernel(x_ptr, y_ptr, M, N, S, BM: tl.constexpr, BN: tl.constexpr):
    """y[:M, :N] (rows S apart) = x, one [BM, BN] block per program, via an in-kernel map."""
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[S, 1], block_shape=[BM, BN])
    row, col, x = _program_block(x_ptr, BM, BN)
    dst.store([row, col], x)


@naiad.jit
def store_head_dim(x_ptr, y_ptr, M, HEAD_DIM: tl.constexpr, BM: tl.constexpr):
    """Tutorial 06's ``desc_o``: the column count is the constexpr head dim, one block wide."""
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, HEAD_DIM], strides=[HEAD_DIM, 1],
                                    block_shape=[BM, HEAD_DIM])
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    x = tl.load(x_ptr + rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :])
    dst.store([tl.program_id(0) * BM, 0], x)


@naiad.jit
def store_host(x_ptr, dst, BM: tl.constexpr, BN: tl.constexpr):
    """``store_in_kernel`` through a host ``TensorDescriptor``."""
    row, col, x = _program_block(x_ptr, BM, BN)
    dst.store([row, col], x)


@naiad.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    """Tutorial 06's helper: a host descriptor crosses the @jit call unchanged."""
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@naiad.jit
def store_host_via_helper(x_ptr, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """``store_host`` with the descriptor passed through a @jit helper first."""
    dst = _maybe_make_tensor_desc(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * (BN * tl.num_programs(1)) + cols[None, :])
    dst.store([pm * BM, pn * BN], x)


@pytest.fixture(params=["box", "16B"])
def clip(request, monkeypatch):
    """Each hypothesis in turn (AOT compiles do not use the disk cache)."""
    monkeypatch.setattr(tma_store_rule, "INNER_CLIP", request.param)
    return request.param


def _store_remarks(k) -> list[str]:
    return [r for r in k.metadata["remarks"] if r.startswith("desc.store")]


def _line_of(remark: str) -> str:
    line = int(remark.split(":")[1].split()[0])
    return open(__file__).read().splitlines()[line - 1]


# -- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("block,elem,extents,offsets,box,b16", [
    ([16, 16], 4, [37, 45], [16, 16], False, False),     # the H200 run: 45 floats = 180 B
    ([16, 16], 4, [37, 44], [16, 16], False, True),      # 176 B rows, box still crosses
    ([16, 16], 4, [37, 48], [16, 16], True, True),
    ([64, 64], 2, [1, 16], [64, 64], False, True),       # N % 16 known, not N % 64
    ([64, 64], 2, [1, 64], [64, 16], False, True),       # the column offset may cross
    ([64, 64], 2, [1, 64], [64, 64], True, True),
    ([32, 8], 2, [1, 8], [32, 8], True, True),
    ([16, 16], 4, [1, 1], [16, 16], False, False),       # nothing known
])
def test_rule_under_both_hypotheses(monkeypatch, block, elem, extents, offsets, box, b16):
    for setting, want in (("box", box), ("16B", b16)):
        monkeypatch.setattr(tma_store_rule, "INNER_CLIP", setting)
        why = tma_store_is_exact(block, elem, extents, offsets)
        assert (why is None) == want, (setting, why)
        if why is not None:
            assert "16 bytes" in why if setting == "16B" else f"{block[1]} columns" in why


def test_outer_dimension_switch(monkeypatch):
    """Rows beyond the view are dropped by default; if the probe shows otherwise, one
    constant makes row counts and offsets count too."""
    args = ([16, 16], 4, [37, 48], [16, 16])
    assert tma_store_is_exact(*args) is None
    monkeypatch.setattr(tma_store_rule, "OUTER_CLIPPED", False)
    assert "16 rows" in tma_store_is_exact(*args)
    assert tma_store_is_exact([16, 16], 4, [48, 48], [16, 16]) is None


# -- in-kernel maps (PTX) ----------------------------------------------------------------------


def _compile_in_kernel(bn, n_spec, element="fp32", bm=16):
    sig = {"x_ptr": f"*{element}", "y_ptr": f"*{element}", "M": "i32", "N": "i32", "S": "i32"}
    spec = {"x_ptr": {"divisibility": 16}, "y_ptr": {"divisibility": 16},
            "S": {"divisibility": 16}}
    if n_spec is not None:
        spec["N"] = n_spec
    return naiad.compile(store_in_kernel, signature=sig, constexprs=dict(BM=bm, BN=bn),
                         target="nvidia:sm_90", specialization=spec)


@pytest.mark.parametrize("bn,n_spec,by_box,by_16b", [
    (16, {"divisibility": 16}, True, True),      # N % 16 == 0 and the box is 16 wide
    (64, {"divisibility": 16}, False, True),     # tutorial 09's c store: N % BLOCK_N unknown
    (16, None, False, False),                    # nothing known about N (45 would be one)
])
def test_in_kernel_store_path(clip, bn, n_spec, by_box, by_16b):
    k = _compile_in_kernel(bn, n_spec)
    want = by_box if clip == "box" else by_16b
    assert (TMA_STORE in k.asm["ptx"]) == want
    assert (k.metadata.get("global_scratch_size") == 128) == want   # the map only for TMA
    remarks = _store_remarks(k)
    if want:
        assert remarks == []
        return
    (remark,) = remarks
    assert "dst.store(" in _line_of(remark)
    assert "uses masked pointer accesses, not TMA" in remark
    assert ("16-byte chunks" if clip == "16B" else f"block's {bn} columns") in remark


@pytest.mark.parametrize("head_dim", [64, 128])
def test_tutorial_06_output_store_goes_by_tma(clip, head_dim):
    k = naiad.compile(store_head_dim, signature={"x_ptr": "*fp16", "y_ptr": "*fp16",
                                                 "M": "i32"},
                      constexprs=dict(HEAD_DIM=head_dim, BM=64), target="nvidia:sm_90",
                      specialization={"x_ptr": {"divisibility": 16},
                                      "y_ptr": {"divisibility": 16}})
    assert TMA_STORE in k.asm["ptx"] and _store_remarks(k) == []


# -- host maps: the launch's fact --------------------------------------------------------------


@pytest.mark.parametrize("gcd,by_box,by_16b", [
    ((16, 16), True, True),    # 48 columns: the blocks tile the view
    ((16, 4), False, True),    # 44 columns: 176-byte rows
    ((16, 1), False, False),   # 45 columns (the H200 run)
])
def test_host_store_path_follows_block_gcd(clip, gcd, by_box, by_16b):
    k = compile_companion(store_host, {"dst": (16, 16)}, dict(BM=16, BN=16), maps=("dst",),
                          elements={"dst": "fp32"}, block_gcd={"dst": gcd},
                          extra_signature={"x_ptr": "*fp32"})
    want = by_box if clip == "box" else by_16b
    assert (TMA_STORE in k.asm["ptx"]) == want
    remarks = _store_remarks(k)
    assert remarks == [] if want else "dst.store(" in _line_of(remarks[0])


def test_the_host_fact_crosses_a_jit_call(clip):
    """The launch's block_gcd stays with the descriptor through a helper (tutorial 06's
    ``_maybe_make_tensor_desc``): an exact view still stores by TMA, a padded one not."""
    for gcd, want in (((16, 64), True), ((16, 1), False)):
        k = compile_companion(store_host_via_helper, {"dst": (16, 64)}, dict(BM=16, BN=64),
                              maps=("dst",), elements={"dst": "fp16"}, block_gcd={"dst": gcd},
                              extra_signature={"x_ptr": "*fp16"})
        assert (TMA_STORE in k.asm["ptx"]) == want, k.metadata["remarks"]


@naiad.jit
def tile_store(src_desc, dst_desc, BR: "tl.constexpr"):
    pass     # never compiled here (the fixture records the compile calls)


def test_padded_and_exact_views_compile_their_own_variants(descriptor_gpu):
    """The fact is part of the specialisation key: a padded view after an exact one compiles
    another variant, each repeat (fast path included) none."""
    launcher, cu, compiled = descriptor_gpu
    a = naiad.to_device(np.ones((96, 64), np.float32))

    def launch(cols):
        tile_store[(3,)](TensorDescriptor(a, [96, 64], [64, 1], [32, 16]),
                         TensorDescriptor(a, [96, cols], [64, 1], [32, 16]), BR=32)

    for cols in (64, 64, 45, 45, 64, 44, 45):
        launch(cols)
    facts = [c["constexprs"]["dst_desc__block_gcd"] for c in compiled]
    assert facts == [(32, 16), (32, 1), (32, 4)]
    assert all(c["constexprs"]["src_desc__block_gcd"] == (32, 16) for c in compiled)


# -- the reference backend: descriptors' results unchanged ---------------------------------------


@pytest.mark.parametrize("n", [45, 44, 48])
def test_reference_results_unchanged(n):
    rng = np.random.default_rng(n)
    m, stride, guard = 37, 48, 5
    grid = (naiad.cdiv(m, 16), naiad.cdiv(n, 16))
    x = rng.standard_normal((grid[0] * 16, grid[1] * 16)).astype(np.float32)
    with naiad.target("reference"):
        for way in ("in-kernel", "host"):
            y = naiad.to_device(np.full((m + guard, stride), np.nan, np.float32))
            if way == "host":
                store_host[grid](naiad.to_device(x), TensorDescriptor(y, [m, n], [stride, 1],
                                                                      [16, 16]), BM=16, BN=16)
            else:
                store_in_kernel[grid](naiad.to_device(x), y, m, n, stride, BM=16, BN=16)
            out = naiad.to_host(y)
            np.testing.assert_array_equal(out[:m, :n], x[:m, :n])
            assert np.isnan(out[:m, n:]).all() and np.isnan(out[m:]).all(), way


# -- on the H200 ---------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("n", [37, 44, 45, 48])
@pytest.mark.parametrize("way", ["in-kernel", "host"])
def test_padding_and_guard_rows_survive_on_gpu(device_allocator, way, n):
    """A 37 x n view of rows 48 floats apart, 16 guard rows after it: every element outside
    the view keeps its poison, whichever path the store took."""
    m, stride, guard, poison = 37, 48, 16, np.float32(-777.0)
    grid = (naiad.cdiv(m, 16), naiad.cdiv(n, 16))
    rng = np.random.default_rng(n)
    x = rng.standard_normal((grid[0] * 16, grid[1] * 16)).astype(np.float32)
    y = naiad.to_device(np.full((m + guard, stride), poison, np.float32))
    if way == "host":
        kern = store_host[grid](naiad.to_device(x), TensorDescriptor(y, [m, n], [stride, 1],
                                                                     [16, 16]), BM=16, BN=16)
    else:
        kern = store_in_kernel[grid](naiad.to_device(x), y, m, n, stride, BM=16, BN=16)
    out = naiad.to_host(y)
    np.testing.assert_array_equal(out[:m, :n], x[:m, :n])
    assert (out[:m, n:] == poison).all(), f"padding written ({kern.metadata['remarks']})"
    assert (out[m:] == poison).all(), "guard rows written"
