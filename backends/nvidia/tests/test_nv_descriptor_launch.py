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
