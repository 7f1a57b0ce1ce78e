"""TMA for tensor descriptors on sm_90 (naiad_nvidia.runtime.tensor_map, passes.tma_ring,
lowering.tma).

Without a GPU: the tensor-map encoder's arguments (a pure function) for each swizzle width and
every reason TMA declines; an independent model of where TMA writes each element of a box
(the map's swizzle) against where wgmma's descriptors read it; compiled kernels (the TMA companion of a descriptor kernel, built
as the launch path builds it) use ``cp.async.bulk.tensor`` completed on mbarriers, feed wgmma
from the ring (B K-major for ``b.T``), store by TMA, and nvJitLink links them; a descriptor
that stays portable says why at its source line. On the H200 (``gpu`` tests): numerics
against numpy for loads feeding a pipelined dot, TMA stores and a persistent loop, on shapes
that are not multiples of the block (the hardware's zero fill and clipping).
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cuda.bindings import driver as real_cu

import naiad
import naiad.language as tl
from naiad.runtime.descriptor_args import _companion_class
from naiad.tools.tensor_descriptor import TensorDescriptor
from naiad_nvidia.lowering.tma import copy_boxes
from naiad_nvidia.passes import tma_store_rule
from naiad_nvidia.runtime.tensor_map import NotTmaLegal, tensor_map_args

OK = real_cu.CUresult.CUDA_SUCCESS

# -- kernels ---------------------------------------------------------------------------------


@naiad.jit
def tma_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, B_T: tl.constexpr):
    """C = A @ B with A [M, K]; B [N, K] read as ``b.T`` (B_T) or B [K, N]."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        if B_T:
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        else:
            b = b_desc.load([k * BK, pid_n * BN])
            acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@naiad.jit
def persistent_tma_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr):
    """Every program loops over output tiles, as tutorial 09's persistent kernels do (the
    TMA ring runs across the tiles: test_nv_tma_persistent.py)."""
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        pid_m = tile // tiles_n
        pid_n = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@naiad.jit
def mixed_matmul(a_desc, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    """A through a descriptor, B through pointers: the cp.async ring takes both."""
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([tl.program_id(0) * BM, k * BK])
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@naiad.jit
def tma_copy(src_desc, dst_desc, row, col, BR: tl.constexpr, BC: tl.constexpr):
    """One block of ``src`` at (row, col) stored at the same place in ``dst``."""
    block = src_desc.load([row, col])
    dst_desc.store([row, col], block + 1)


@naiad.jit
def shifted_copy(src_desc, dst_desc, row, col, BR: tl.constexpr, BC: tl.constexpr):
    """``tma_copy`` storing one column further: the store's column offset is not known to be
    16-byte aligned, so it stays masked pointer stores."""
    block = src_desc.load([row, col])
    dst_desc.store([row, col + 1], block + 1)


# -- the tensor-map encoder's arguments (pure) ---------------------------------------------------


@pytest.mark.parametrize("element,block,box,swizzle", [
    ("fp16", [128, 64], (64, 128), "128B"),     # one 128-byte panel
    ("fp16", [128, 128], (64, 128), "128B"),    # two panels: two boxes of 64 columns
    ("bf16", [64, 32], (32, 64), "64B"),
    ("fp32", [32, 8], (8, 32), "32B"),
    ("fp16", [16, 8], (8, 16), "NONE"),         # 16-byte rows: no swizzle
    ("fp8e4nv", [64, 128], (128, 64), "128B"),  # bytes
])
def test_tensor_map_args_box_and_swizzle(element, block, box, swizzle):
    args = tensor_map_args(element, 0x10000, [1000, 272], [272, 1], block)
    assert args.box_dims == box and args.swizzle == swizzle
    elem = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8e4nv": 1}[element]
    assert args.global_dims == (272, 1000)            # innermost first
    assert args.global_strides == (272 * elem,)        # bytes, dimensions 1..
    assert args.element_strides == (1, 1) and args.oob_fill == "NONE"
    assert args.box_bytes == box[0] * box[1] * elem


def test_tensor_map_args_rank3_and_nan_fill():
    args = tensor_map_args("fp32", 0x2000, [4, 30, 40], [1280, 40, 1], [2, 16, 32],
                           padding="nan", round_f32_to_tf32=True)
    # (tf32 rounding is not encoded: stores through the map must not round)
    assert args.data_type == "FLOAT32" and args.oob_fill == "NAN_REQUEST_ZERO_FMA"
    assert args.global_dims == (40, 30, 4) and args.global_strides == (160, 5120)
    assert args.box_dims == (32, 16, 2)


@pytest.mark.parametrize("kwargs,reason", [
    (dict(address=0x1008), "not 16-byte aligned"),
    (dict(strides=[100, 1], shape=[64, 100]), "multiples of 16"),
    (dict(block=[512, 64]), "over 256 elements"),
    (dict(arch="sm_80"), "TMA needs sm_90"),
    (dict(element="fp8e4b15"), "cannot move fp8e4b15"),
    (dict(strides=[264, 2]), "not contiguous"),
])
def test_tensor_map_args_says_why_not(kwargs, reason):
    a = dict(element="fp16", address=0x10000, shape=[1000, 264], strides=[264, 1],
             block=[128, 64], arch="sm_90")
    a.update(kwargs)
    with pytest.raises(NotTmaLegal, match=reason):
        tensor_map_args(a["element"], a["address"], a["shape"], a["strides"], a["block"],
                        arch=a["arch"])


def test_copy_boxes_follow_the_wgmma_panels():
    # 128 x 128 fp16: two panels of 64 columns, the second after all 128 rows of the first
    assert copy_boxes(128, 128, 2) == [(0, 0), (64, 128 * 128)]
    assert copy_boxes(64, 32, 2) == [(0, 0)]
    assert copy_boxes(64, 64, 4) == [(0, 0), (32, 64 * 128)]


# -- what TMA writes is what wgmma reads (independent models, no GPU) -------------------------------


def tma_box_address(start: int, row: int, col: int, rows: int, cols: int, elem: int) -> int:
    """Byte address TMA writes element (row, col) of a ``rows x cols`` block to, for the map
    :func:`tensor_map_args` builds: box ``col // W`` (``W`` = 128 / elem columns at most) starts
    after the previous boxes' rows, rows of ``W * elem`` bytes, then the map's swizzle (CUDA's
    ``CU_TENSOR_MAP_SWIZZLE_{128,64,32}B``: bits 4.. XOR bits 7.., from a 1024-aligned start)."""
    from test_nv_wgmma import _swizzle

    width = min(cols, 128 // elem)
    box, c = divmod(col, width)
    return _swizzle(start + box * rows * width * elem + row * width * elem + c * elem,
                    width * elem)


@pytest.mark.parametrize("m,n,k,warps,b_t", [
    (128, 128, 64, 4, True), (128, 256, 64, 8, True), (64, 64, 32, 4, True),
    (128, 128, 128, 8, True), (64, 64, 16, 4, True), (128, 128, 64, 4, False),
    (128, 64, 128, 4, False)])
def test_tma_boxes_hold_what_wgmma_reads(m, n, k, warps, b_t):
    from naiad_nvidia.ir.wgmma_smem import WgmmaStage
    from naiad_nvidia.lowering.wgmma import plan
    from test_nv_wgmma import k_major_address, mn_major_address

    stage = WgmmaStage(m, n, k, "f16", b_k_major=b_t)
    base = 2 * stage.bytes   # ring slot 2
    args_a = tensor_map_args("fp16", 0x1000, [4096, 4096], [4096, 1], [m, k])
    assert args_a.box_dims == (min(k, 64), m)
    rng = np.random.default_rng(m + n + k)
    for group in range(warps // 4):
        a_base = base + stage.a.start_byte(64 * group, 0)
        for ins in plan(m, n, k, warps, "f16", b_t):
            da = stage.a.descriptor_bits() | (((a_base + ins.a_byte) & 0x3FFFF) >> 4)
            db = stage.b.descriptor_bits() | (((base + stage.b_offset + ins.b_byte)
                                                & 0x3FFFF) >> 4)
            row0 = ins.row0 + 64 * group
            for i, j in zip(rng.integers(0, 64, 40), rng.integers(0, 16, 40)):
                i, j = int(i), int(j)
                assert k_major_address(da, i, j) == tma_box_address(base, row0 + i, ins.kk + j,
                                                                    m, k, 2)
            for kb, nb in zip(rng.integers(0, 16, 40), rng.integers(0, ins.n, 40)):
                kb, nb = int(kb), int(nb)
                if b_t:   # the [N, K] block as TMA wrote it, read K-major
                    want = tma_box_address(base + stage.b_offset, ins.n0 + nb, ins.kk + kb,
                                           n, k, 2)
                    assert k_major_address(db, nb, kb) == want
                else:     # the [K, N] block, read N-major
                    want = tma_box_address(base + stage.b_offset, ins.kk + kb, ins.n0 + nb,
                                           k, n, 2)
                    assert mn_major_address(db, kb, nb) == want
    # and the lowering's boxes are at those places
    assert copy_boxes(m, k, 2) == [(p * min(k, 64), p * m * min(k, 64) * 2)
                                   for p in range(k // min(k, 64))]


# -- the launcher's tensor maps, on a fake driver ----------------------------------------------------


class TensorMapDriver:
    """Mixed into a fake driver: an encoder that records its arguments and returns a map
    whose 16 words are recognisable (each map its own: the encoder call's number), and
    asynchronous copies that only happen when the queue runs (``run_queue``, or a
    synchronisation): a copy reads its page-locked source then, so a source reused or
    freed too early shows. ``log`` lists the stream-ordered and synchronising calls."""

    CUtensorMapDataType = real_cu.CUtensorMapDataType
    CUtensorMapInterleave = real_cu.CUtensorMapInterleave
    CUtensorMapSwizzle = real_cu.CUtensorMapSwizzle
    CUtensorMapL2promotion = real_cu.CUtensorMapL2promotion
    CUtensorMapFloatOOBfill = real_cu.CUtensorMapFloatOOBfill
    cuuint32_t = real_cu.cuuint32_t
    cuuint64_t = real_cu.cuuint64_t

    def __init__(self, **kw):
        super().__init__(**kw)
        self.encoded, self.log, self.queue = [], [], []
        self.pinned, self.events = {}, {}

    def cuTensorMapEncodeTiled(self, *args):
        self.encoded.append(args)
        tmap = real_cu.CUtensorMap()
        tag = len(self.encoded) << 32
        tmap.opaque = [real_cu.cuuint64_t(tag + 0x1111 * (i + 1)) for i in range(16)]
        return self.CUresult.CUDA_SUCCESS, tmap

    def cuMemAllocHost(self, n):
        buf = ctypes.create_string_buffer(n)
        self.pinned[ctypes.addressof(buf)] = buf
        return OK, ctypes.addressof(buf)

    def cuMemFreeHost(self, ptr):
        assert not self.queue, "staging freed while a copy from it is queued"
        del self.pinned[ptr]
        return (OK,)

    def _pinned(self, src, n):
        return any(a <= src and src + n <= a + len(b) for a, b in self.pinned.items())

    def cuMemcpyHtoDAsync(self, dst, src, n, stream):
        assert self._pinned(src, n), "asynchronous copy from pageable memory"
        self.log.append(("copy", dst, stream))
        self.queue.append((dst, src, n))
        return (OK,)

    def at(self, ptr):
        """The allocation holding device address ``ptr``, and the offset in it."""
        (base,) = [b for b, buf in self.mem.items() if b <= ptr < b + len(buf)]
        return self.mem[base], ptr - base

    def run_queue(self):
        for dst, src, n in self.queue:
            buf, at = self.at(dst)
            buf[at:at + n] = ctypes.string_at(src, n)
        self.queue.clear()

    def cuMemcpyHtoD(self, dst, src, n):
        self.log.append(("synchronous copy", dst))
        return super().cuMemcpyHtoD(dst, src, n)

    def cuCtxSynchronize(self):
        self.log.append(("synchronize",))
        self.run_queue()
        return (OK,)

    def cuEventCreate(self, flags):
        event = len(self.events) + 1
        self.events[event] = "created"
        return OK, event

    def cuEventRecord(self, event, stream):
        self.log.append(("record", event, stream))
        self.events[event] = "recorded"
        return (OK,)

    def cuEventQuery(self, event):
        return (self.CUresult.CUDA_ERROR_NOT_READY if self.queue else OK,)

    def cuEventDestroy(self, event):
        self.events[event] = "destroyed"
        return (OK,)

    def cuStreamWaitEvent(self, stream, event, flags):
        self.log.append(("wait", stream, event))
        return (OK,)



def _tensor_map_launcher(arch="sm_90", limit=None, chunk_maps=None):
    from naiad.plugins import Target
    from naiad_nvidia.runtime.driver import CudaDriver
    from naiad_nvidia.runtime.launcher import NvidiaLauncher
    from naiad_nvidia.runtime.tensor_map import TensorMapCache
    from test_nv_launcher import FakeCu

    class TensorMapCu(TensorMapDriver, FakeCu):
        pass

    cu = TensorMapCu()
    launcher = NvidiaLauncher(Target("nvidia", arch, 32),
                              driver=CudaDriver(f"nvidia:{arch}", cu=cu))
    if limit is not None or chunk_maps is not None:
        launcher._tensor_maps = TensorMapCache(launcher.driver.ensure(), limit, chunk_maps)
    return launcher, cu


def _words(cu, device_map):
    buf, at = cu.at(device_map.ptr)
    return list(np.frombuffer(bytes(buf[at:at + 128]), np.uint64))


def test_launcher_encodes_each_distinct_map_once():
    from cuda.bindings import driver as real_cu

    launcher, cu = _tensor_map_launcher()
    x = launcher.to_device(np.zeros((300, 264), np.float16))
    device_map, reason = launcher.tensor_map(TensorDescriptor(x, [300, 264], [264, 1], [128, 64]))
    assert reason == "" and device_map.nbytes == 128
    cu.run_queue()
    assert _words(cu, device_map) == [(1 << 32) + 0x1111 * (i + 1) for i in range(16)]
    (args,) = cu.encoded
    kind, rank, address, dims, strides, box, elem_strides, _, swizzle, _, fill = args
    assert kind == real_cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    assert rank == 2 and address == x.ptr
    assert [int(d) for d in dims] == [264, 300] and [int(s) for s in strides] == [528]
    assert [int(b) for b in box] == [64, 128] and [int(e) for e in elem_strides] == [1, 1]
    assert swizzle == real_cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert fill == real_cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    # the same descriptor again (a new object, as tutorial code makes per call): no new map
    again, _ = launcher.tensor_map(TensorDescriptor(x, [300, 264], [264, 1], [128, 64]))
    assert again is device_map and len(cu.encoded) == 1
    other, _ = launcher.tensor_map(TensorDescriptor(x, [300, 264], [264, 1], [64, 64]))
    assert other is not device_map and len(cu.encoded) == 2


def test_a_new_map_is_queued_on_the_launch_stream_without_synchronising():
    """A miss (a tensor at a new address, as a fresh output each call can be) copies the map
    asynchronously on the stream the kernel will run on, from page-locked memory that outlives
    the copy; nothing waits for the device."""
    launcher, cu = _tensor_map_launcher()
    x = launcher.to_device(np.zeros((256, 256), np.float16))
    cu.log.clear()                    # (the test's own upload)
    maps = []
    for row in range(4):   # four new maps queued before any runs: each keeps its own source
        view = TensorDescriptor(x, [256 - 16 * row, 256], [256, 1], [64, 64])
        maps.append(launcher.tensor_map(view, stream=7)[0])
    assert not any(op[0] in ("synchronous copy", "synchronize") for op in cu.log), cu.log
    copies = [op for op in cu.log if op[0] == "copy"]
    assert [(dst, stream) for _, dst, stream in copies] == [(m.ptr, 7) for m in maps]
    assert not [op for op in cu.log if op[0] == "record"]   # no event: no other stream asked
    assert all(not any(_words(cu, m)) for m in maps)                 # still queued
    cu.run_queue()
    for i, m in enumerate(maps):
        assert _words(cu, m) == [((i + 1) << 32) + 0x1111 * (j + 1) for j in range(16)]


def test_a_map_still_queued_is_waited_for_on_another_stream():
    """A later launch on another stream waits for the copy on the device (an event recorded
    on the copy's stream when that stream first asks), not on the host; once the copy is
    known done, no stream waits any more."""
    launcher, cu = _tensor_map_launcher()
    x = launcher.to_device(np.zeros((256, 256), np.float16))
    cu.log.clear()
    desc = TensorDescriptor(x, [256, 256], [256, 1], [64, 64])
    first, _ = launcher.tensor_map(desc, stream=7)
    again, _ = launcher.tensor_map(desc, stream=7)          # same stream: ordered already
    assert again is first and not [op for op in cu.log if op[0] in ("wait", "record")]
    other, _ = launcher.tensor_map(desc, stream=9)
    (record,) = [op for op in cu.log if op[0] == "record"]
    assert record[2] == 7 and cu.log.index(record) > cu.log.index(("copy", first.ptr, 7))
    assert other is first and [op for op in cu.log if op[0] == "wait"] == \
        [("wait", 9, record[1])]
    assert not any(op[0] in ("synchronous copy", "synchronize") for op in cu.log)
    cu.run_queue()
    launcher.tensor_map(desc, stream=11)
    launcher.tensor_map(desc, stream=13)
    assert len([op for op in cu.log if op[0] in ("wait", "record")]) == 2
    assert cu.events[record[1]] == "destroyed"


def test_the_map_cache_is_bounded_without_waiting_for_the_device():
    """Past its limit the cache starts afresh without synchronising or freeing (both wait for
    the device): the old chunks are retired, and reused -- no new allocation -- only once no
    map of them is held, an event after that on every stream served has completed and every
    copy into them is done (the fake refuses to free staging a queued copy still reads)."""
    launcher, cu = _tensor_map_launcher(limit=2, chunk_maps=2)
    x = launcher.to_device(np.zeros((256, 256), np.float16))
    cu.log.clear()

    def new_map(i, stream=3):
        return launcher.tensor_map(TensorDescriptor(x, [256, 256 - 16 * i], [256, 1], [64, 64]),
                                   stream=stream)[0]

    made = [new_map(0), new_map(1, stream=5)]             # chunk A
    chunks, staging = len(cu.mem), len(cu.pinned)
    made.append(new_map(2))         # past the limit: afresh; A's maps are held: a new chunk B
    assert len(launcher._tensor_maps._maps) == 1 and len(cu.mem) == chunks + 1
    assert not any(op[0] in ("synchronize", "synchronous copy") for op in cu.log), cu.log
    cu.run_queue()
    assert _words(cu, made[2])[0] == (3 << 32) + 0x1111
    first_chunk = made[0].chunk.ptr
    del made[:2]                    # no map of A is held any more
    made.append(new_map(3))         # B's second slot
    records = len(cu.log)
    made.append(new_map(4))         # afresh: A gets events on streams 3 and 5, still pending
    assert sorted(op[2] for op in cu.log[records:] if op[0] == "record") == [3, 5]
    assert len(cu.mem) == chunks + 2 and made[-1].chunk.ptr != first_chunk
    made.append(new_map(5))
    cu.run_queue()                  # the device caught up
    made.append(new_map(6))         # afresh: A is reused, nothing allocated
    assert made[-1].chunk.ptr == first_chunk and len(cu.mem) == chunks + 2
    assert len(cu.pinned) == staging + 2    # (B and C): its staging is reused too
    assert not any(op[0] in ("synchronize", "synchronous copy") for op in cu.log)
    cu.run_queue()
    assert _words(cu, made[-1])[0] == (7 << 32) + 0x1111   # the 7th encoding, intact


def test_launcher_declines_with_the_reason():
    launcher, _ = _tensor_map_launcher()
    x = launcher.to_device(np.zeros((300, 264), np.float16))
    got, reason = launcher.tensor_map(TensorDescriptor(x, [300, 264], [264, 1], [512, 64]))
    assert got is None and "over 256 elements" in reason
    old, _ = _tensor_map_launcher("sm_80")
    y = old.to_device(np.zeros((300, 264), np.float16))
    got, reason = old.tensor_map(TensorDescriptor(y, [300, 264], [264, 1], [128, 64]))
    assert got is None and reason == "TMA needs sm_90 or newer (target is sm_80)"


# -- compiled kernels (no GPU: nvJitLink links for sm_90a) -----------------------------------------

DESCS = ("a_desc", "b_desc", "c_desc")


def compile_companion(fn, blocks: dict, constexprs: dict, maps=DESCS, portable=None,
                      target="nvidia:sm_90", options=None, elements=None, block_gcd=None,
                      extra_signature=None, divisible=(), wide_columns=False,
                      no_map_reason=None):
    """The TMA companion of ``fn`` as the launch path builds it, compiled ahead of time;
    ``block_gcd``: per descriptor, the launch's fact gcd(extent, block) per dimension
    (default: the block, as for a view the blocks tile exactly); ``extra_signature``: types of
    further parameters (pointers taken 16-byte aligned, ints named in ``divisible`` multiples
    of 16); ``wide_columns``: every descriptor's column count is a multiple of 16;
    ``no_map_reason``: the ``__portable`` reason of a descriptor left out of ``maps``."""
    ranks = {d: 2 for d in blocks}
    has_map = {d: d in maps for d in blocks} if portable is None else \
        {d: False for d in blocks}
    kernel = _companion_class()(fn, ranks, has_map)
    sig, spec, ce = {}, {}, dict(constexprs)
    for d, block in blocks.items():
        sig[f"{d}__base"] = f"*{(elements or {}).get(d, 'fp16')}"
        spec[f"{d}__base"] = {"divisibility": 16}
        for i in range(2):
            sig[f"{d}__shape_{i}"] = "i32"
            sig[f"{d}__stride_{i}"] = "i64"
        spec[f"{d}__stride_0"] = {"divisibility": 16}
        spec[f"{d}__stride_1"] = {"equal_to": 1}
        if wide_columns:
            spec[f"{d}__shape_1"] = {"divisibility": 16}
        ce[f"{d}__block"] = tuple(block)
        ce[f"{d}__padding"] = "zero"
        if has_map[d]:
            sig[f"{d}__tensor_map"] = "*u8"
            ce[f"{d}__block_gcd"] = (block_gcd or {}).get(d, tuple(block))
        elif (portable or no_map_reason) is not None:
            ce[f"{d}__portable"] = portable or no_map_reason
    for name in ("M", "N", "K", "row", "col"):
        if name in kernel.arg_names:
            sig[name] = "i32"
            spec[name] = {"divisibility": 16}   # as a launch with multiples of 16 specialises
    for name, kind in (extra_signature or {}).items():
        sig[name] = kind
        if kind.startswith("*") or name in divisible:
            spec[name] = {"divisibility": 16}
    return naiad.compile(kernel, signature=sig, constexprs=ce, target=target,
                         options=options or {"num_warps": 4, "num_stages": 3},
                         specialization=spec)


def matmul_blocks(bm, bn, bk, b_t=True):
    return {"a_desc": (bm, bk), "b_desc": (bn, bk) if b_t else (bk, bn), "c_desc": (bm, bn)}


@pytest.mark.parametrize("bm,bn,bk,warps,stages,b_t,boxes", [
    (128, 128, 64, 4, 3, True, 2),
    (128, 256, 64, 8, 3, True, 2),
    (64, 64, 32, 4, 4, True, 2),
    (128, 128, 128, 8, 2, True, 4),    # two 128-byte panels per operand
    (128, 128, 64, 4, 3, False, 3),    # B [K, N] N-major: two panels along N
])
def test_descriptor_matmul_uses_the_tma_ring(bm, bn, bk, warps, stages, b_t, boxes):
    k = compile_companion(tma_matmul, matmul_blocks(bm, bn, bk, b_t),
                          dict(BM=bm, BN=bn, BK=bk, B_T=b_t),
                          options={"num_warps": warps, "num_stages": stages})
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    loop = gpu[gpu.index(" = for "):gpu.index("yield")]
    assert loop.index("nvidia.tma_wait") < loop.index("barrier") < loop.index("wgmma_ring")
    assert loop.count("nvidia.tma_copy") == 2 and "nvidia.cp_async" not in gpu
    assert "descriptor_access" not in gpu and k.metadata["remarks"] == []
    copy = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    # the prologue fills num_stages - 1 slots, the loop one: boxes per fill
    assert ptx.count(copy) == boxes * stages
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx
    assert "mbarrier.init.shared::cta.b64" in ptx and "mbarrier.inval" in ptx
    trans_b = "0" if b_t else "1"
    assert f"f32.f16.f16" in ptx and f", 1, 1, 0, {trans_b};" in ptx
    # the epilogue by TMA store, from shared memory fenced for the async proxy
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "cp.async.bulk.wait_group.read 0;" in ptx and "fence.proxy.async.shared::cta;" in ptx
    assert "ld.local" not in ptx and k.metadata["spill_bytes"] == 0


def test_late_copies_when_they_add_a_cta_per_sm():
    """128x128x64 at 4 warps, 2 stages: ~154 registers let 3 CTAs share an SM if the ring
    keeps num_stages slots (late copies, 64 KiB), 2 with early copies' extra slot (96 KiB) --
    Triton's footprint is the 64 KiB one."""
    k = compile_companion(tma_matmul, matmul_blocks(128, 128, 64), dict(BM=128, BN=128, BK=64,
                                                                       B_T=True),
                          options={"num_warps": 4, "num_stages": 2})
    gpu = k.asm["gpu"]
    loop = gpu[gpu.index(" = for "):gpu.index("yield")]
    assert loop.index("wgmma_ring") < loop.index("nvidia.tma_copy")    # copies after the dot
    assert k.metadata["shared"] < 2 * 32768 + 1024, k.metadata["shared"]
    assert k.metadata["registers"] * 128 * 3 <= 65536


def test_mixed_operands_keep_the_cp_async_ring():
    kernel = _companion_class()(mixed_matmul, {"a_desc": 2}, {"a_desc": True})
    sig = {"a_desc__base": "*fp16", "a_desc__shape_0": "i32", "a_desc__shape_1": "i32",
           "a_desc__stride_0": "i64", "a_desc__stride_1": "i64", "a_desc__tensor_map": "*u8",
           "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    spec = {n: {"divisibility": 16} for n in sig if not n.endswith("stride_1")}
    spec["a_desc__stride_1"] = {"equal_to": 1}
    k = naiad.compile(kernel, signature=sig, target="nvidia:sm_90", specialization=spec,
                      constexprs=dict(BM=128, BN=128, BK=64, a_desc__block=(128, 64),
                                      a_desc__padding="zero", a_desc__block_gcd=(128, 64)),
                      options={"num_warps": 4, "num_stages": 3})
    assert "nvidia.cp_async" in k.asm["gpu"] and "nvidia.tma_copy" not in k.asm["gpu"]
    (remark,) = k.metadata["remarks"]
    assert remark.startswith("desc.load at test_nv_tma.py:") and \
        "operand B of its dot is not a tensor-descriptor load" in remark


def test_loads_outside_a_dot_stay_portable_with_a_remark():
    k = compile_companion(tma_copy, {"src_desc": (32, 64), "dst_desc": (32, 64)},
                          dict(BR=32, BC=64), maps=("src_desc", "dst_desc"),
                          elements={"src_desc": "fp32", "dst_desc": "fp32"})
    (remark,) = [r for r in k.metadata["remarks"] if r.startswith("desc.load")]
    assert remark.startswith("desc.load at test_nv_tma.py:")
    line = int(remark.split(":")[1].split()[0])
    assert "src_desc.load" in open(__file__).read().splitlines()[line - 1]
    assert "only descriptor loads feeding a dot" in remark
    # (the store's path: test_nv_tma_store_exact.py)


def test_portable_descriptor_says_why_at_each_access():
    k = compile_companion(tma_matmul, matmul_blocks(64, 64, 32), dict(BM=64, BN=64, BK=32,
                          B_T=True), portable="TMA needs sm_90 or newer (target is sm_80)",
                          target="nvidia:sm_80")
    assert "cp.async.bulk" not in k.asm["ptx"]
    remarks = [r for r in k.metadata["remarks"] if r.startswith("desc.")]
    assert len(remarks) == 3 and all("TMA needs sm_90" in r for r in remarks)


@naiad.jit
def in_kernel_descriptor(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc.store([0, 0], x_desc.load([0, 0]) * 2)


@pytest.mark.parametrize("arch,says", [("sm_90", True), ("sm_80", False)])
def test_in_kernel_descriptors_without_a_dot_ring_stay_masked(arch, says):
    """Only dot rings move in-kernel descriptors' loads by TMA (test_nv_device_maps.py), and
    stores only where the view's column count is known to fit the boxes (N is not here): on
    sm_90 the load and the store say why at their lines; sm_80 has no TMA, nothing to say."""
    k = naiad.compile(in_kernel_descriptor, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                       "M": "i32", "N": "i32"},
                      constexprs=dict(BM=16, BN=32), target=f"nvidia:{arch}")
    remarks = sorted(r for r in k.metadata["remarks"] if r.startswith("desc."))
    assert "cp.async.bulk.tensor" not in k.asm["ptx"]
    if not says:
        assert remarks == []
        return
    assert len(remarks) == 2 and "wgmma ring pipelines" in remarks[0], remarks
    assert "column count is not known to" in remarks[1], remarks
    lines = open(__file__).read().splitlines()
    for remark, source in zip(remarks, ("x_desc.load", "y_desc.store")):
        assert source in lines[int(remark.split(":")[1].split()[0]) - 1]


def test_store_at_an_unaligned_column_stays_portable_with_a_remark():
    k = compile_companion(shifted_copy, {"src_desc": (32, 64), "dst_desc": (32, 64)},
                          dict(BR=32, BC=64), maps=("src_desc", "dst_desc"),
                          elements={"src_desc": "fp32", "dst_desc": "fp32"})
    store = [r for r in k.metadata["remarks"] if r.startswith("desc.store at test_nv_tma.py:")]
    assert len(store) == 1 and "multiple of 16 bytes" in store[0], k.metadata["remarks"]
    assert "cp.async.bulk.tensor" not in k.asm["ptx"]


def test_launch_without_tensor_maps_is_unchanged():
    """The reference backend's launcher has no tensor maps: no companion parameters."""
    kernel = _companion_class()(tma_copy, {"src_desc": 2, "dst_desc": 2})
    assert not any(n.endswith(("__tensor_map", "__portable")) for n in kernel.arg_names)


# -- on the H200 ----------------------------------------------------------------------------------


def _host(dtype, shape, rng):
    import ml_dtypes

    x = rng.uniform(-1, 1, shape).astype(np.float32)
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


def _desc(array, block):
    return TensorDescriptor(array, list(array.shape), [array.shape[1], 1], list(block))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mnk,blocks,warps,stages,b_t", [
    ((300, 200, 264), (128, 128, 64), 4, 3, True),    # edges in M, N and K: zero fill, clip
    ((300, 200, 264), (128, 128, 64), 4, 2, True),    # late copies
    ((256, 512, 512), (128, 256, 64), 8, 3, True),
    ((200, 136, 520), (64, 64, 32), 4, 4, True),
    ((136, 256, 384), (128, 128, 128), 8, 2, True),
    ((300, 200, 264), (128, 128, 64), 4, 3, False),   # B [K, N]
    ((64, 64, 16), (64, 64, 32), 4, 3, True),         # K < BK
])
def test_tma_matmul_on_gpu(dtype, mnk, blocks, warps, stages, b_t):
    m, n, k = mnk
    bm, bn, bk = blocks
    rng = np.random.default_rng(m + 7 * n + k)
    a, b = _host(dtype, (m, k), rng), _host(dtype, (n, k) if b_t else (k, n), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float32))
    da, db = naiad.to_device(a), naiad.to_device(b)
    kern = tma_matmul[(naiad.cdiv(m, bm), naiad.cdiv(n, bn))](
        _desc(da, (bm, bk)), _desc(db, (bn, bk) if b_t else (bk, bn)), _desc(c, (bm, bn)),
        m, n, k, BM=bm, BN=bn, BK=bk, B_T=b_t, num_warps=warps, num_stages=stages)
    assert "cp.async.bulk.tensor" in kern.asm["ptx"], kern.metadata["remarks"]
    want = a.astype(np.float64) @ (b.astype(np.float64).T if b_t else b.astype(np.float64))
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-3, atol=1e-3 * max(k, 1) ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("warps,stages", [(4, 3), (4, 4), (8, 3)])
def test_persistent_tma_matmul_on_gpu(warps, stages):
    m, n, k = 520, 392, 200      # 20 tiles over 7 programs; edges in M, N and K
    rng = np.random.default_rng(5)
    a, b = _host("float16", (m, k), rng), _host("float16", (n, k), rng)
    c = naiad.to_device(np.full((m, n), np.nan, np.float16))
    da, db = naiad.to_device(a), naiad.to_device(b)
    kern = persistent_tma_matmul[(7,)](_desc(da, (128, 64)), _desc(db, (128, 64)),
                                       _desc(c, (128, 128)), m, n, k, BM=128, BN=128, BK=64,
                                       num_warps=warps, num_stages=stages)
    assert "nvidia.tma_init" in kern.asm["gpu"]
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * k ** 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,row,col", [(tma_copy, 0, 0), (tma_copy, 48, 48),
                                            (shifted_copy, -8, -16), (shifted_copy, 48, 39)])
def test_tma_store_clips_and_portable_load_fills_on_gpu(kernel, row, col):
    """A block hanging over the tensor's edges: the load reads zeros outside, the TMA store
    writes only inside; everything else keeps its sentinel."""
    rng = np.random.default_rng(row + col + 100)
    src = rng.uniform(-1, 1, (70, 100)).astype(np.float32)
    sentinel = np.float32(-777.0)
    dst = naiad.to_device(np.full((70, 100), sentinel, np.float32))
    kern = kernel[(1,)](_desc(naiad.to_device(src), (32, 64)), _desc(dst, (32, 64)), row, col,
                        BR=32, BC=64)
    tma_store = "cp.async.bulk.tensor.2d.global.shared::cta" in kern.asm["ptx"]
    # a negative store offset would fault: not tested; a 64-wide box at a column offset only
    # known divisible by 16 may cross the 100th column: TMA only if stores clip at 16 bytes
    assert tma_store == (kernel is tma_copy and tma_store_rule.INNER_CLIP == "16B")
    want = np.full((70, 100), sentinel, np.float32)
    shift = int(kernel is shifted_copy)
    block = np.zeros((32, 64), np.float32)   # the load: zeros outside the tensor
    r0, r1 = max(row, 0), min(row + 32, 70)
    c0, c1 = max(col, 0), min(col + 64, 100)
    if r0 < r1 and c0 < c1:
        block[r0 - row:r1 - row, c0 - col:c1 - col] = src[r0:r1, c0:c1]
    # the store at (row, col + shift): only what lies inside the tensor
    for i in range(32):
        for j in range(64):
            r, c = row + i, col + shift + j
            if 0 <= r < 70 and 0 <= c < 100:
                want[r, c] = block[i, j] + 1
    np.testing.assert_array_equal(dst.numpy(), want)
