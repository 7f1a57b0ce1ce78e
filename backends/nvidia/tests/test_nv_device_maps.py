"""Tensor maps of in-kernel ``tl.make_tensor_descriptor`` built on the device (sm_90):
``naiad_nvidia.passes.device_tensor_maps``, ``lowering.device_tensor_map``,
``runtime.tensor_map.device_map_fields`` and the launch's global scratch
(``naiad.runtime.global_scratch``).

Without a GPU: the compile-time fields of a map (a pure function) against the PTX ISA's codes
and the host encoder's box and swizzle; the PTX of kernels making descriptors (every field
written by ``tensormap.replace``, the tensormap-proxy fences, the hidden scratch parameter, the
TMA ring and store reading the maps), the targets and blocks that keep the masked accesses;
the launch wrapper's allocation and its errors. On the H200 (``gpu`` tests): numerics against
numpy on shapes that are not multiples of the block, several descriptors per kernel, bases
loaded per program from a pointer table, and the error without an allocator.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.runtime.global_scratch import NoAllocatorError, with_global_scratch
from naiad_nvidia.lowering.device_tensor_map import replace_lines
from naiad_nvidia.passes import tma_store_rule
from naiad_nvidia.runtime.tensor_map import NotTmaLegal, device_map_fields, tensor_map_args

# -- kernels ---------------------------------------------------------------------------------


@naiad.jit
def scaled_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2 x, one [BM, BN] block per program, through two in-kernel descriptors."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    y_desc.store([row, col], x_desc.load([row, col]) * 2)


@naiad.jit
def in_kernel_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    """C = A @ B.T (A [M, K], B [N, K]) with three in-kernel descriptors, as tutorial 09's
    matmul_kernel_descriptor_persistent makes them: the TMA ring moves A and B."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@naiad.jit
def load_tile(desc, row, col):
    return desc.load([row, col])


@naiad.jit
def helper_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    """in_kernel_matmul with both loads through one @jit helper (inlined twice)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = load_tile(a_desc, tl.program_id(0) * BM, k * BK)
        b = load_tile(b_desc, tl.program_id(1) * BN, k * BK)
        acc = tl.dot(a, b.T, acc)
    c_desc.store([tl.program_id(0) * BM, tl.program_id(1) * BN], acc.to(tl.float16))


@naiad.jit
def grouped_copy(src_ptrs, dst_ptrs, rows, cols, GROUPS: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr):
    """Per group g (a loop, as tutorial 08): descriptors of the tensors whose addresses are
    loaded from the tables; each program copies its row block of every group, plus 1."""
    for g in range(GROUPS):
        m = tl.load(rows + g)
        n = tl.load(cols + g)
        src = tl.load(src_ptrs + g).to(tl.pointer_type(tl.float16))
        dst = tl.load(dst_ptrs + g).to(tl.pointer_type(tl.float16))
        s_desc = tl.make_tensor_descriptor(src, shape=[m, n], strides=[n, 1], block_shape=[BM, BN])
        d_desc = tl.make_tensor_descriptor(dst, shape=[m, n], strides=[n, 1], block_shape=[BM, BN])
        row = tl.program_id(0) * BM
        d_desc.store([row, 0], s_desc.load([row, 0]) + 1)


@naiad.jit
def wide_block_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc.store([0, 0], x_desc.load([0, 0]))


COPY_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32", "N": "i32"}
DIV16 = {"divisibility": 16}


def compile_copy(kernel=scaled_copy, arch="sm_90", blocks=(64, 64), element="fp16"):
    sig = {k: (f"*{element}" if v.startswith("*") else v) for k, v in COPY_SIG.items()}
    return naiad.compile(kernel, signature=sig, constexprs=dict(BM=blocks[0], BN=blocks[1]),
                         target=f"nvidia:{arch}", specialization={n: DIV16 for n in sig})


# -- the map's fields --------------------------------------------------------------------------


@pytest.mark.parametrize("element,block,padding,elemtype,box,swizzle,fill", [
    ("fp16", [128, 64], "zero", 6, (64, 128), 3, 0),        # one 128-byte panel per row
    ("bf16", [64, 128], "zero", 10, (64, 64), 3, 0),        # two panels: the box is one
    ("fp32", [32, 16], "nan", 7, (16, 32), 2, 1),           # 64-byte rows, NaN fill
    ("fp8e4nv", [64, 32], "zero", 0, (32, 64), 1, 0),       # bytes: 32-byte swizzle
    ("i32", [2, 16, 8], "zero", 3, (8, 16, 2), 1, 0),       # rank 3
])
def test_device_map_fields_use_the_ptx_codes(element, block, padding, elemtype, box, swizzle,
                                             fill):
    f = device_map_fields(element, block, padding)
    assert (f.elemtype, f.box_dims, f.swizzle, f.fill) == (elemtype, box, swizzle, fill)
    assert f.rank == len(block) - 1 and f.element_strides == (1,) * len(block)
    # the same box and swizzle a host TensorDescriptor of such blocks gets from the encoder
    host = tensor_map_args(element, 1 << 20, [1000] * len(block),
                           [1024] * (len(block) - 1) + [1], block, padding)
    assert host.box_dims == f.box_dims
    assert {"NONE": 0, "32B": 1, "64B": 2, "128B": 3}[host.swizzle] == f.swizzle


@pytest.mark.parametrize("element,block,arch,why", [
    ("fp16", [512, 64], "sm_90", "over 256"),
    ("fp16", [64, 64], "sm_80", "sm_90 or newer"),
    ("i1", [16, 8], "sm_90", "multiple of 16 bytes"),
])
def test_device_map_fields_say_why_not(element, block, arch, why):
    with pytest.raises(NotTmaLegal, match=why):
        device_map_fields(element, block, arch=arch)


def test_replace_lines_write_every_constant_field():
    lines = [text for text, _ in replace_lines(1, (64, 128), (1, 1), 6, 3, 0)]
    assert lines[0] == "@$1 tensormap.replace.tile.rank.global.b1024.b32 [$0], 1;"
    assert "@$1 tensormap.replace.tile.box_dim.global.b1024.b32 [$0], 0, 64;" in lines
    assert "@$1 tensormap.replace.tile.box_dim.global.b1024.b32 [$0], 1, 128;" in lines
    assert sum("element_stride" in t and t.endswith(", 1;") for t in lines) == 2
    for field, value in (("elemtype", 6), ("interleave_layout", 0), ("swizzle_mode", 3),
                         ("fill_mode", 0)):
        assert f"@$1 tensormap.replace.tile.{field}.global.b1024.b32 [$0], {value};" in lines


# -- compiled kernels (PTX) ------------------------------------------------------------------------


def _field_writes(ptx: str, field: str) -> int:
    return ptx.count(f"tensormap.replace.tile.{field}.global.b1024")


def test_a_store_through_a_map_built_in_the_kernel_follows_the_store_rule():
    """A TMA store goes only where it cannot write past the view (tma_store_rule): a 64-column
    block over a column count known divisible by 16 may cross it under the "box" rule (the
    store is the masked one, its remark says why, and a copy without a dot ring needs no map
    and no scratch memory); under the "16B" rule the rows are whole 16-byte chunks: TMA."""
    k = compile_copy()
    ptx = k.asm["ptx"]
    stores = [r for r in k.metadata["remarks"] if r.startswith("desc.store")]
    if tma_store_rule.INNER_CLIP == "16B":
        assert stores == [] and "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
        return
    assert "tensormap" not in ptx and "cp.async.bulk" not in ptx
    assert "global_scratch_size" not in k.metadata
    assert len(stores) == 1 and "multiple of the block's 64 columns" in stores[0], stores
    assert "test_nv_device_maps.py" in stores[0]


MATMUL_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
              "K": "i32"}


def test_matmul_descriptors_feed_the_tma_ring():
    k = naiad.compile(in_kernel_matmul, signature=MATMUL_SIG,
                      constexprs=dict(BM=128, BN=128, BK=64), target="nvidia:sm_90",
                      options={"num_warps": 4, "num_stages": 3},
                      specialization={n: DIV16 for n in MATMUL_SIG})
    ptx, gpu = k.asm["ptx"], k.asm["gpu"]
    # A's and B's maps are built in the kernel; C's store stays masked (see the test above)
    assert [r for r in k.metadata["remarks"] if not r.startswith("desc.store")] == []
    # C's store by TMA only under the "16B" rule (N is known divisible by 16, not by BN)
    c_by_tma = tma_store_rule.INNER_CLIP == "16B"
    assert k.metadata["global_scratch_size"] == (2 + c_by_tma) * 128
    assert gpu.count("nvidia.tensormap_make") == 2 + c_by_tma and "descriptor_make" not in gpu
    assert ".target sm_90a" in ptx   # tensormap.replace is an sm_90a instruction
    maps = 2 + c_by_tma
    assert _field_writes(ptx, "global_address") == maps and _field_writes(ptx, "rank") == maps
    assert _field_writes(ptx, "global_dim") == 2 * maps
    assert _field_writes(ptx, "global_stride") == maps and _field_writes(ptx, "box_dim") == 2 * maps
    for field in ("elemtype", "interleave_layout", "swizzle_mode", "fill_mode"):
        assert _field_writes(ptx, field) == maps
    copy = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    assert ptx.count(copy) > 0 and "wgmma.mma_async" in ptx
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == maps
    release = ptx.index("fence.proxy.tensormap::generic.release.gpu;")
    acquire = ptx.index("fence.proxy.tensormap::generic.acquire.gpu")
    assert ptx.index("tensormap.replace") < release < acquire < ptx.index(copy)
    assert ptx.count("st.global.v2.b64") >= 16   # each map zeroed before its fields are set
    # an unaligned base or stride traps (no call: ptxas would serialize the kernel's wgmma)
    assert "trap;" in ptx and "call" not in ptx
    assert k.metadata["spill_bytes"] == 0
    assert "serialized" not in k.metadata.get("jit_log", "")   # ptxas keeps wgmma async


def test_a_helper_inlined_twice_keeps_each_access_on_its_own_map():
    """Both loads come from one source site of ``load_tile``: each TMA copy must still read
    its own descriptor's map (A's copies map 0, B's map 1), not the first access's."""
    k = naiad.compile(helper_matmul, signature=MATMUL_SIG, constexprs=dict(BM=128, BN=128, BK=64),
                      target="nvidia:sm_90", options={"num_warps": 4, "num_stages": 3},
                      specialization={n: DIV16 for n in MATMUL_SIG})
    gpu = k.asm["gpu"]
    maps = {}
    for line in gpu.splitlines():
        if "nvidia.tensormap_make" in line:
            maps[line.split("=")[0].strip()] = line.split(",")[1].strip()   # -> base
    by_offset = {}
    for line in gpu.splitlines():
        if "nvidia.tma_copy" in line:
            tmap = line.split("nvidia.tma_copy")[1].split(",")[2].strip()
            offset = re.search(r"[{ ]offset = (\d+)", line).group(1)
            by_offset.setdefault(offset, set()).add(maps[tmap])
    assert by_offset == {"0": {"%a_ptr"}, "16384": {"%b_ptr"}}, gpu
    assert [r for r in k.metadata["remarks"] if not r.startswith("desc.store")] == []


def test_descriptors_made_in_a_loop_from_loaded_pointers():
    """Per group a descriptor of loaded pointers (tutorial 08's shape): without a dot ring
    both accesses stay masked, each with a remark at its line, and no map is built."""
    sig = {"src_ptrs": "*i64", "dst_ptrs": "*i64", "rows": "*i32", "cols": "*i32"}
    k = naiad.compile(grouped_copy, signature=sig, constexprs=dict(GROUPS=3, BM=32, BN=64),
                      target="nvidia:sm_90")
    assert "tensormap" not in k.asm["ptx"] and "global_scratch_size" not in k.metadata
    kinds = sorted(r.split(" at ")[0] for r in k.metadata["remarks"] if r.startswith("desc."))
    assert kinds == ["desc.load", "desc.store"], k.metadata["remarks"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_no_maps_without_tma(arch):
    k = compile_copy(arch=arch)
    assert "tensormap" not in k.asm["ptx"] and "cp.async.bulk" not in k.asm["ptx"]
    assert "global_scratch_size" not in k.metadata
    assert [r for r in k.metadata["remarks"] if r.startswith("desc.")] == []


def test_blocks_tma_cannot_move_stay_masked_with_a_remark():
    k = compile_copy(wide_block_copy, blocks=(512, 16), element="fp32")
    assert "tensormap" not in k.asm["ptx"] and "global_scratch_size" not in k.metadata
    remarks = [r for r in k.metadata["remarks"] if r.startswith("desc.")]
    assert len(remarks) == 2 and all("over 256" in r for r in remarks), remarks


# -- the launch's scratch memory ------------------------------------------------------------------


class _Compiled:
    """What ``with_global_scratch`` reads of a compiled kernel."""

    name = "k"

    def __init__(self, size):
        self.metadata = {"global_scratch_size": size, "global_scratch_align": 128,
                         "global_scratch_user": "kern.py:7:5"}


def test_scratch_is_asked_per_program_and_appended(allocator):
    asked, launched = [], []
    allocator(lambda size, align, stream: asked.append((size, align, stream)) or 4096 * 7)
    go = with_global_scratch(lambda grid, args, stream: launched.append((grid, args, stream)),
                             _Compiled(384), lambda buffer: buffer)
    go((3, 2, 1), [11, 22], "s")
    assert asked == [(384 * 6, 128, "s")]
    assert launched == [((3, 2, 1), [11, 22, 4096 * 7], "s")]


def test_no_allocator_names_the_line(allocator):
    allocator(None)
    go = with_global_scratch(lambda *a: pytest.fail("launched"), _Compiled(128), int)
    with pytest.raises(NoAllocatorError, match=r"kern\.py:7:5: .*no allocator was set.*"
                                               r"set_allocator"):
        go((1, 1, 1), [], None)


def test_unaligned_or_addressless_scratch_is_refused(allocator):
    allocator(lambda size, align, stream: 4096 + 64)
    go = with_global_scratch(lambda *a: pytest.fail("launched"), _Compiled(128), int)
    with pytest.raises(NoAllocatorError, match="not aligned to 128"):
        go((1, 1, 1), [], None)
    go = with_global_scratch(lambda *a: pytest.fail("launched"), _Compiled(128), lambda b: None)
    with pytest.raises(NoAllocatorError, match="no device address"):
        go((1, 1, 1), [], None)


# -- on the H200 ----------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("shape,blocks", [((200, 136), (64, 64)), ((64, 64), (64, 64)),
                                          ((37, 296), (32, 128))])
def test_scaled_copy_on_gpu(device_allocator, shape, blocks):
    """Ragged edges: the store (masked, or TMA where tma_store_rule proves it exact) writes
    exactly the tensor, the sentinel outside stays."""
    rng = np.random.default_rng(sum(shape))
    x = rng.uniform(-1, 1, shape).astype(np.float16)
    sentinel = np.float16(-777.0)
    y = naiad.to_device(np.full(shape, sentinel, np.float16))
    kern = scaled_copy[(naiad.cdiv(shape[0], blocks[0]), naiad.cdiv(shape[1], blocks[1]))](
        naiad.to_device(x), y, shape[0], shape[1], BM=blocks[0], BN=blocks[1])
    np.testing.assert_array_equal(y.numpy(), x * 2)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [in_kernel_matmul, helper_matmul])
@pytest.mark.parametrize("mnk", [(300, 200, 264), (256, 256, 512), (64, 64, 16)])
def test_in_kernel_matmul_on_gpu(device_allocator, mnk, kernel):
    m, n, k = mnk
    rng = np.random.default_rng(m + n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, k)).astype(np.float16)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    kern = kernel[(naiad.cdiv(m, 128), naiad.cdiv(n, 128))](
        naiad.to_device(a), naiad.to_device(b), c, m, n, k, BM=128, BN=128, BK=64,
        num_warps=4, num_stages=3)
    assert "cp.async.bulk.tensor" in kern.asm["ptx"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)


@pytest.mark.gpu
def test_grouped_copy_per_program_bases_on_gpu(device_allocator):
    rng = np.random.default_rng(8)
    shapes = [(70, 64), (33, 64), (128, 64)]
    srcs = [naiad.to_device(rng.uniform(-1, 1, s).astype(np.float16)) for s in shapes]
    dsts = [naiad.to_device(np.full(s, np.nan, np.float16)) for s in shapes]
    table = [naiad.to_device(np.array([t.ptr for t in ts], np.int64)) for ts in (srcs, dsts)]
    rows = naiad.to_device(np.array([s[0] for s in shapes], np.int32))
    cols = naiad.to_device(np.array([s[1] for s in shapes], np.int32))
    grouped_copy[(naiad.cdiv(128, 32),)](*table, rows, cols, GROUPS=3, BM=32, BN=64)
    for src, dst in zip(srcs, dsts):
        np.testing.assert_array_equal(dst.numpy(), src.numpy() + np.float16(1))


@pytest.mark.gpu
def test_launch_without_allocator_raises_on_gpu(allocator):
    allocator(None)
    a = naiad.to_device(np.ones((128, 64), np.float16))
    c = naiad.to_device(np.full((128, 128), np.nan, np.float16))
    with pytest.raises(NoAllocatorError, match=r"test_nv_device_maps\.py:\d+.*no allocator"):
        in_kernel_matmul[(1, 1)](a, a, c, 128, 128, 64, BM=128, BN=128, BK=64, num_warps=4,
                                 num_stages=3)
    assert np.isnan(c.numpy()).all()   # nothing launched

