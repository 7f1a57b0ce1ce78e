"""Host ``TensorDescriptor`` launches end to end on the NVIDIA launcher, without a GPU: the
real runtime, binders, argument packing and tensor-map cache over a fake driver (tensor maps
encoded by a stand-in, copies queued per stream). The descriptor fast path must put in the
kernel's parameter buffer exactly what the general route does, maps included, and a map made
for one stream must be waited for (on the device) by a launch on another."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
from naiad.tools.tensor_descriptor import TensorDescriptor

from test_nv_launcher import OK, _read_params
from test_nv_tma import TensorMapDriver, _words
from test_nv_warm_launch import EventCu, fake_nvidia_target


class DescriptorCu(TensorMapDriver, EventCu):
    """Records each launch's stream and parameter values, read back at the launch (the
    argument buffer is reused) with ``types``, the signature last compiled."""

    types = ()

    def cuModuleGetFunction(self, mod, name):
        return OK, f"fn:{name}"

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        self.launches.append({"grid": (gx, gy, gz), "stream": stream,
                              "params": _read_params(params, self.types)})
        self.log.append(("launch", stream))
        return (OK,)


@pytest.fixture
def descriptor_gpu(monkeypatch, tmp_path):
    """nvidia:sm_90 on a DescriptorCu driver; the compiler replaced by one that records its
    calls (signature in parameter order) and returns a fake cubin."""
    def record(cu, signature, constexprs, options, specialization):
        cu.types = tuple(str(t) for t in signature.values())
        return {"signature": dict(signature), "constexprs": dict(constexprs)}

    yield from fake_nvidia_target(monkeypatch, tmp_path, record, DescriptorCu())


@naiad.jit
def tile_copy(src_desc, dst_desc, row, BR: "tl.constexpr"):
    pass     # never compiled here


def test_fast_path_packs_what_the_general_route_packs(descriptor_gpu):
    from naiad.runtime import descriptor_args

    launcher, cu, compiled = descriptor_gpu
    rng = np.random.default_rng(11)
    a = naiad.to_device(rng.standard_normal((96, 64)).astype(np.float16))
    b = naiad.to_device(np.full((96, 64), np.nan, np.float16))
    cu.log.clear()                          # (the test's own uploads)

    def descs():
        return (TensorDescriptor(a, [96, 64], [64, 1], [32, 64]),
                TensorDescriptor(b, [96, 64], [64, 1], [32, 64]))

    tile_copy[(3,)](*descs(), 17, BR=32)          # general route (learns)
    tile_copy[(3,)](*descs(), 17, BR=32)          # fast path
    descriptor_args.launch_spread(tile_copy, (3,), descs() + (17,), {"BR": 32}, None)
    assert len(compiled) == 1
    sig = compiled[0]["signature"]
    assert sig["src_desc__tensor_map"] == sig["dst_desc__tensor_map"] == "*u8"
    first, fast, general = (launch["params"] for launch in cu.launches[-3:])
    assert first == fast == general
    maps = launcher._tensor_maps._maps
    (a_map,), (b_map,) = ([m.array for k, m in maps.items() if k.global_address == x.ptr]
                          for x in (a, b))
    assert fast == [a.ptr, 96, 64, 64, 1, a_map.ptr, b.ptr, 96, 64, 64, 1, b_map.ptr, 17]
    # each map was queued once, before the first launch, and holds its own encoding
    ops = [op[0] for op in cu.log]
    assert ops.count("copy") == 2 and ops.index("launch") > max(
        i for i, op in enumerate(ops) if op == "copy")
    assert "synchronize" not in ops and "synchronous copy" not in ops
    cu.run_queue()
    assert {_words(cu, m)[0] >> 32 for m in (a_map, b_map)} == {1, 2}   # encoder calls 1, 2


def test_a_launch_on_another_stream_waits_for_a_queued_map(descriptor_gpu):
    launcher, cu, compiled = descriptor_gpu
    a = naiad.to_device(np.ones((64, 64), np.float16))
    cu.log.clear()

    def launch(**kw):
        tile_copy[(1,)](TensorDescriptor(a, [64, 64], [64, 1], [16, 64]),
                        TensorDescriptor(a, [64, 64], [64, 1], [16, 64]), 0, BR=16, **kw)

    launch()
    launch()
    assert [op[0] for op in cu.log].count("wait") == 0
    launch(stream=0x77)                 # the map's copy (stream 0) may still be queued
    waits = [op for op in cu.log if op[0] == "wait"]
    assert [w[1] for w in waits] == [0x77]
    assert cu.launches[-1]["stream"] == 0x77 and cu.log[-1] == ("launch", 0x77)
    cu.run_queue()                      # copied: a launch on yet another stream need not wait
    launch(stream=0x99)
    assert len([op for op in cu.log if op[0] == "wait"]) == 1
    assert "synchronize" not in [op[0] for op in cu.log]


def test_stream_objects_reach_the_map_copy_as_handles(descriptor_gpu):
    """``stream=`` may be any object the launch accepts (here one with ``__cuda_stream__``,
    as torch/CuPy streams have); the map's copy is queued on its handle."""
    launcher, cu, compiled = descriptor_gpu
    a = naiad.to_device(np.ones((64, 64), np.float16))
    cu.log.clear()

    class Stream:
        def __cuda_stream__(self):
            return (0, 0x4242)

    tile_copy[(1,)](TensorDescriptor(a, [64, 64], [64, 1], [16, 64]),
                    TensorDescriptor(a, [64, 64], [64, 1], [32, 64]), 0, BR=16,
                    stream=Stream())
    assert [op[2] for op in cu.log if op[0] == "copy"] == [0x4242, 0x4242]
    assert cu.launches[-1]["stream"] == 0x4242


# -- tutorial 09's pattern: dummy blocks a config's pre_hook fixes, tensors at new addresses ------
def _launched_map(cu, launch, index):
    """The encoder arguments of the map a launch was given as its parameter ``index`` (the
    fake encoder tags each map with its call number)."""
    cu.run_queue()
    (number,) = {_words(cu, _At(launch["params"][index]))[0] >> 32}
    kind, rank, address, dims, strides, box, *_ = cu.encoded[number - 1]
    return {"address": address, "dims": [int(d) for d in dims], "box": [int(b) for b in box],
            "kind": kind}


class _At:
    def __init__(self, ptr):
        self.ptr = ptr


@naiad.jit
def two_tiles(src_desc, dst_desc, row, BR: "tl.constexpr", BC: "tl.constexpr"):
    pass     # never compiled here


def _set_blocks(nargs):       # tutorial 09's matmul_tma_set_block_size_hook, in small
    nargs["src_desc"].block_shape = [nargs["BR"], nargs["BC"]]
    nargs["dst_desc"].block_shape = [nargs["BR"], nargs["BC"]]


def _autotuned(config_blocks):
    """``two_tiles`` autotuned over configs of these (BR, BC) with the block-setting pre_hook;
    the stand-in benchmark prefers the first config."""
    order = iter(range(100))

    def bench(call):
        call()
        return [float(next(order))] * 3

    return naiad.autotune(configs=[naiad.Config({"BR": br, "BC": bc}, pre_hook=_set_blocks)
                                   for br, bc in config_blocks],
                          key=["row"], do_bench=bench, cache_results=False)(two_tiles)


def test_pre_hook_blocks_reach_the_map_and_the_kernel(descriptor_gpu):
    """Descriptors made with a dummy [1, 1] block get the config's block from the pre_hook
    on every call: the map's box, the grid and the packed arguments match a descriptor built
    with that block (fast path and general route alike)."""
    from naiad.runtime import descriptor_args

    launcher, cu, compiled = descriptor_gpu
    src = naiad.to_device(np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16))
    dst = naiad.to_device(np.full((64, 64), np.nan, np.float16))
    kernel = _autotuned([(16, 32), (32, 64)])

    def call(row):      # (from_tensor's fields: DeviceArrays have no strides())
        kernel[lambda meta: (64 // meta["BR"],)](TensorDescriptor(src, [64, 64], [64, 1], [1, 1]),
                                                 TensorDescriptor(dst, [64, 64], [64, 1], [1, 1]),
                                                 row)

    for row in (5, 5, 5):
        call(row)
    assert {c["constexprs"]["src_desc__block"] for c in compiled} == {(16, 32), (32, 64)}
    assert cu.launches[-1]["grid"] == (4, 1, 1)
    fast = cu.launches[-1]["params"]
    descriptor_args.launch_spread(two_tiles, (4,), (
        TensorDescriptor(src, [64, 64], [64, 1], [16, 32]),
        TensorDescriptor(dst, [64, 64], [64, 1], [16, 32]), 5), {"BR": 16, "BC": 32}, None)
    assert cu.launches[-1]["params"] == fast
    got = _launched_map(cu, cu.launches[-1], 5)
    assert got["box"] == [32, 16] and got["address"] == src.ptr and got["dims"] == [64, 64]
    # another key picks the second config: its pre_hook's block, a new map, no stale one
    kernel.configs.reverse()
    for row in (6, 6):
        call(row)
    assert cu.launches[-1]["grid"] == (2, 1, 1)
    got = _launched_map(cu, cu.launches[-1], 5)
    assert got["box"] == [64, 32] and got["address"] == src.ptr
    assert "synchronize" not in [op[0] for op in cu.log]


def test_a_changed_block_or_base_gets_its_own_map(descriptor_gpu):
    """The same descriptor object launched again after its block_shape changed, and a
    descriptor of another tensor of the same shape: each launch carries a map of its own
    block and base (never the previous call's)."""
    launcher, cu, compiled = descriptor_gpu
    a = naiad.to_device(np.ones((64, 64), np.float16))
    b = naiad.to_device(np.ones((64, 64), np.float16))
    desc = TensorDescriptor(a, [64, 64], [64, 1], [16, 64])
    seen = []
    for base, block in ((a, [16, 64]), (a, [16, 64]), (a, [32, 64]), (b, [32, 64]),
                        (a, [16, 64])):
        desc.base, desc.block_shape = base, block
        tile_copy[(1,)](desc, TensorDescriptor(a, [64, 64], [64, 1], [16, 64]), 0,
                        BR=block[0])
        launch = cu.launches[-1]
        got = _launched_map(cu, launch, 5)
        assert launch["params"][0] == base.ptr
        assert got["address"] == base.ptr and got["box"] == [64, block[0]]
        seen.append(launch["params"][5])
    assert seen[0] == seen[1] == seen[4] and len(set(seen)) == 3


def test_an_address_reused_after_free_gets_a_correct_map(descriptor_gpu):
    """A tensor freed and another placed at its address (as a caching allocator does): a new
    tensor of another shape or element type there gets its own map; one of the same shape
    and type may share the old map, whose bytes describe it exactly."""
    from naiad_nvidia.runtime.device_array import DeviceArray

    launcher, cu, compiled = descriptor_gpu
    a = naiad.to_device(np.ones((64, 64), np.float16))
    keep = naiad.to_device(np.ones((64, 64), np.float16))
    ptr = a.ptr

    def launch(base, shape, block):
        tile_copy[(1,)](TensorDescriptor(base, shape, [shape[1], 1], block),
                        TensorDescriptor(keep, [64, 64], [64, 1], [16, 64]), 0, BR=block[0])
        return _launched_map(cu, cu.launches[-1], 5), cu.launches[-1]["params"][5]

    first, first_map = launch(a, [64, 64], [16, 64])
    same = DeviceArray(launcher.driver, ptr, (64, 64), np.float16, owner=False)
    again, again_map = launch(same, [64, 64], [16, 64])
    assert again == first          # the same 128 bytes: sharing the map is exact
    wider = DeviceArray(launcher.driver, ptr, (32, 128), np.float16, owner=False)
    got, wider_map = launch(wider, [32, 128], [16, 64])
    assert wider_map != first_map and got["address"] == ptr and got["dims"] == [128, 32]
    floats = DeviceArray(launcher.driver, ptr, (64, 32), np.float32, owner=False)
    got, float_map = launch(floats, [64, 32], [16, 32])
    from cuda.bindings import driver as real_cu

    assert float_map not in (first_map, wider_map)
    assert got["kind"] == real_cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert got["dims"] == [32, 64] and got["address"] == ptr
