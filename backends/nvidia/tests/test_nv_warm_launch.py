"""The NVIDIA launcher's warm path without a GPU: ``bind_launch``, argument buffers under
threads, ``pointer_getter``, ``kernel[grid](...)`` end to end through the runtime on a fake CUDA
driver (numpy runs the kernel), torch tensors and streams, and device-event timing for
``naiad.testing.do_bench``."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from cuda.bindings import driver as real_cu

import naiad
from naiad.errors import DeviceError
from naiad.plugins import hookimpl
from naiad_nvidia.options import NvidiaOptions
from naiad_nvidia import plugin as nv_plugin
from naiad_nvidia.runtime.device_array import DeviceArray
from naiad_nvidia.runtime.driver import CudaDriver
from naiad_nvidia.runtime.event_timer import FLUSH_BYTES
from naiad_nvidia.runtime.launcher import NvidiaLauncher

from test_nv_launcher import CUBIN, OK, SIG, TARGET, FakeCu, _read_params


class EventCu(FakeCu):
    """FakeCu plus events and memsets on a virtual GPU clock: a launch takes 0.25 ms per program,
    a memset 2 ms; launches with made-up addresses are only recorded.

    ``launch_delay``: a launch reads its parameters, sleeps (other threads run, as while a real
    driver call has released the GIL) and reads them again; a buffer shared between threads
    shows up in ``mismatches``."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.clock = 0.0
        self.events = {}
        self.destroyed = []
        self.memsets = []
        self.next_event = 1
        self.launch_delay = 0.0
        self.mismatches = 0

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        before = _read_params(params, SIG)
        if self.launch_delay:
            time.sleep(self.launch_delay)
            if _read_params(params, SIG) != before:
                self.mismatches += 1
        if before[3] and before[0] not in self.mem:    # made-up addresses: record only
            self.launches.append(((gx, gy, gz), (bx, by, bz), shmem, stream, tuple(before)))
            out = (OK,)
        else:                                            # device arrays: run it in numpy
            out = super().cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params,
                                         extra)
        self.clock += 0.25 * gx * gy * gz
        return out

    def cuEventCreate(self, flags):
        event = self.next_event
        self.next_event += 1
        self.events[event] = None
        return OK, event

    def cuEventRecord(self, event, stream):
        assert event in self.events and event not in self.destroyed
        self.events[event] = (self.clock, int(stream))
        return (OK,)

    def cuEventSynchronize(self, event):
        return (OK,)

    def cuEventElapsedTime(self, start, end):
        return OK, self.events[end][0] - self.events[start][0]

    def cuEventDestroy(self, event):
        self.destroyed.append(event)
        return (OK,)

    def cuMemsetD32Async(self, ptr, value, count, stream):
        assert ptr in self.mem and len(self.mem[ptr]) >= 4 * count
        self.memsets.append((ptr, value, count, int(stream)))
        self.clock += 2.0
        return (OK,)


def _launcher(cu=None):
    cu = cu or EventCu()
    return NvidiaLauncher(TARGET, driver=CudaDriver("nvidia:sm_90", cu=cu)), cu


# ----------------------------------------------------------------------------- bind_launch

def test_bind_launch_packs_each_call_and_reuses_its_buffer():
    launcher, cu = _launcher()
    handle = launcher.load(CUBIN, "vector_add")
    go = launcher.bind_launch(handle, 2, 0, SIG)
    for n in (5, 6, 7):
        go((n, 2, 1), [0x1000 * n, 0x2000, 0x3000, n])
        assert cu.launches[-1] == ((n, 2, 1), (64, 1, 1), 0, 0, (0x1000 * n, 0x2000, 0x3000, n))
    packer = handle.packers[SIG]
    assert len(packer.spare) == 1        # one buffer, taken and given back each launch
    with pytest.raises(DeviceError, match="at most 1024 threads"):
        launcher.bind_launch(handle, 64, 0, SIG)


def test_bind_launch_coerces_arrays_and_names_bad_values():
    launcher, cu = _launcher()
    handle = launcher.load(CUBIN, "vector_add")
    go = launcher.bind_launch(handle, 4, 0, SIG)
    x = launcher.to_device(np.arange(4, dtype=np.float32))
    go((1, 1, 1), [x, x, x, 4])
    assert cu.launches[-1][4] == (x.ptr, x.ptr, x.ptr, 4)
    with pytest.raises(DeviceError, match=r"argument 3 .* i32 .* does not fit"):
        go((1, 1, 1), [0, 0, 0, 2 ** 40])
    go((1, 1, 1), [0, 0, 0, 3])          # the launcher still works after the error
    assert cu.launches[-1][4] == (0, 0, 0, 3)


def test_concurrent_launches_never_share_an_argument_buffer():
    launcher, cu = _launcher()
    cu.launch_delay = 0.0005             # another thread runs while the "driver" reads
    handle = launcher.load(CUBIN, "vector_add")
    go = launcher.bind_launch(handle, 4, 0, SIG)
    errors = []

    def worker(k):
        try:
            for i in range(20):
                go((1, 1, 1), [0, 0, 0, 1000 * k + i])
        except Exception as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cu.mismatches == 0
    ns = sorted(launch[4][3] for launch in cu.launches)
    assert ns == sorted(1000 * k + i for k in range(6) for i in range(20))


# ----------------------------------------------------------------------------- pointers

def test_pointer_getter_per_type():
    launcher, _ = _launcher()
    arr = DeviceArray(launcher.driver, 0x4000, (4,), np.float32, owner=False)
    assert launcher.pointer_getter(DeviceArray)(arr) == 0x4000
    assert launcher.pointer_getter(np.ndarray) is None
    assert launcher.pointer_getter(int) is None
    assert not launcher._torch_seen


# ----------------------------------------------------------------------------- through the runtime

class FakeNvidiaPlugin:
    """The real NVIDIA targets and options, and a launcher over a fake driver."""

    def __init__(self, launcher):
        self.launcher = launcher

    @hookimpl
    def naiad_targets(self):
        return nv_plugin.naiad_targets()

    @hookimpl
    def naiad_options(self, target, options):
        return nv_plugin.naiad_options(target, options)

    @hookimpl
    def naiad_launcher(self, target):
        return self.launcher


def fake_nvidia_target(monkeypatch, tmp_path, record, cu=None):
    """The body of a fixture: nvidia:sm_90 as the current target on a fake driver (``cu``,
    else an EventCu), the compiler replaced by one returning the fake cubin; each compile
    appends ``record(cu, signature, constexprs, options, specialization)`` to the list the
    fixture yields with the launcher and driver."""
    import naiad.compiler
    from naiad.compiler import CompiledKernel
    from naiad.plugins import manager
    from naiad.runtime import targets

    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path / "cache"))
    pm = manager.create_plugin_manager(load_entrypoints=False)
    monkeypatch.setattr(manager, "_manager", pm)
    manager.generation += 1
    for name in ("_env_request", "_default_request", "_default_state"):
        monkeypatch.setattr(targets, name, None)
    launcher, cu = _launcher(cu)
    pm.register(FakeNvidiaPlugin(launcher), name="fake-nvidia")
    compiled = []

    def compile(fn, signature, constexprs=None, target=None, options=None,
                specialization=None):
        compiled.append(record(cu, signature, constexprs or {}, options, specialization))
        return CompiledKernel(fn.__name__, target, dict(signature), dict(constexprs or {}),
                              options, asm=dict(CUBIN.stages), binary_stage="cubin",
                              metadata={"num_warps": options.num_warps, "shared": 0,
                                        "arch": "sm_90"})

    monkeypatch.setattr(naiad.compiler, "compile", compile)
    with naiad.target("nvidia:sm_90"):
        yield launcher, cu, compiled
    manager.generation += 1


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """nvidia:sm_90 as the current target, on an EventCu driver; the compiler replaced by one
    that records its calls and returns the fake cubin."""
    def record(cu, signature, constexprs, options, specialization):
        # the runtime hands over the validated options object; record what differs from
        # the defaults (what the test asked for)
        asked = {k: v for k, v in options.as_dict().items()
                 if getattr(NvidiaOptions(), k) != v}
        return {"signature": dict(signature), "specialization": specialization,
                "constexprs": dict(constexprs), "options": asked}

    yield from fake_nvidia_target(monkeypatch, tmp_path, record)


@naiad.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
    pass     # never compiled here: the fake driver runs "vector_add" in numpy


def test_kernel_launches_end_to_end_on_the_warm_path(fake_gpu):
    launcher, cu, compiled = fake_gpu
    vector_add.cache_clear()
    rng = np.random.default_rng(21)
    for n in (1000, 4096, 777, 64):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        dx, dy = naiad.to_device(x), naiad.to_device(y)
        out = naiad.to_device(np.full(n, np.nan, np.float32))
        vector_add[(naiad.cdiv(n, 128),)](dx, dy, out, n, BLOCK=128)
        np.testing.assert_array_equal(out.numpy(), x + y)
        assert cu.launches[-1][:4] == ((naiad.cdiv(n, 128), 1, 1), (128, 1, 1), 0, 0)
    # n = 1000 and 777: neither 1 nor a multiple of 16; 4096 and 64: multiples of 16
    assert [c["specialization"].get("n") for c in compiled] == [None, {"divisibility": 16}]
    assert all(c["signature"] == dict(zip(("x_ptr", "y_ptr", "out_ptr", "n"), SIG))
               for c in compiled)
    info = vector_add.cache_info()
    assert info["launches"] == 4 and info["hits"] == 2 and info["compiles"] == 2


def test_num_warps_and_shared_memory_reach_the_driver(fake_gpu):
    launcher, cu, compiled = fake_gpu
    d = naiad.to_device(np.zeros(8, np.float32))
    for _ in range(2):
        vector_add[(1,)](d, d, d, 0, BLOCK=16, num_warps=8)
    assert cu.launches[-1][1] == (256, 1, 1)
    assert compiled[-1]["options"] == {"num_warps": 8}


def test_torch_tensors_and_streams(fake_gpu, monkeypatch):
    torch = pytest.importorskip("torch")
    launcher, cu, compiled = fake_gpu
    cu.cuLaunchKernel = lambda f, gx, gy, gz, bx, by, bz, sh, stream, params, extra: (
        cu.launches.append((stream, _read_params(params, ("*fp16", "*fp16", "*fp16", "i32"))))
        or (OK,))
    x = torch.arange(64, dtype=torch.float16)
    with pytest.raises(naiad.NaiadError, match="move it to the GPU first"):
        vector_add[(1,)](x, x, x, 64, BLOCK=64)      # a CPU tensor on a GPU target
    # CPU tensors pose as CUDA ones; torch's current stream is 0x5000
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0x5000,
                        raising=False)
    for _ in range(3):
        vector_add[(1,)](x, x, x, 64, BLOCK=64)
    assert len(compiled) == 1 and compiled[-1]["signature"]["x_ptr"] == "*fp16"
    aligned = {"divisibility": 16} if x.data_ptr() % 16 == 0 else None
    assert compiled[-1]["specialization"].get("x_ptr") == aligned
    stream, params = cu.launches[-1]
    assert params == [x.data_ptr(), x.data_ptr(), x.data_ptr(), 64]
    assert stream == 0x5000
    vector_add[(1,)](x, x, x, 64, BLOCK=64, stream=0x6000)     # an explicit stream wins
    assert cu.launches[-1][0] == 0x6000
    odd = torch.arange(65, dtype=torch.float16)[1:]             # 2 bytes past a 16-byte boundary
    vector_add[(1,)](odd, x, x, 64, BLOCK=64)
    assert "x_ptr" not in compiled[-1]["specialization"]
    assert cu.launches[-1][1][0] == odd.data_ptr()


def test_cuda_stream_objects_are_reused():
    """With the real bindings' CUstream type, the launcher passes stream objects, built once per
    stream handle."""
    cu = EventCu()
    cu.CUstream = real_cu.CUstream
    launcher, _ = _launcher(cu)
    handle = launcher.load(CUBIN, "vector_add")
    go = launcher.bind_launch(handle, 4, 0, SIG)
    go((1, 1, 1), [0, 0, 0, 0])
    first = cu.launches[-1][3]
    assert isinstance(first, real_cu.CUstream) and int(first) == 0
    go((1, 1, 1), [0, 0, 0, 0])
    assert cu.launches[-1][3] is first


# ----------------------------------------------------------------------------- timing

def test_synchronize_waits_on_the_context():
    launcher, cu = _launcher()
    calls = []
    cu.cuCtxSynchronize = lambda: calls.append(1) or (OK,)
    launcher.synchronize()
    assert calls == [1]


def test_event_timer_records_on_the_launch_stream_and_flushes_l2():
    launcher, cu = _launcher()
    timer = launcher.event_timer()
    start = timer.record()
    cu.clock += 1.5
    end = timer.record()
    assert timer.elapsed_ms(start, end) == 1.5
    timer.flush_l2()
    timer.flush_l2()
    (ptr, value, count, stream), second = cu.memsets
    assert count * 4 == FLUSH_BYTES and value == 0 and stream == 0 and second[0] == ptr
    assert len(cu.mem[ptr]) == FLUSH_BYTES       # one buffer, allocated once
    timer.reserve(3)
    timer.close()
    assert sorted(cu.destroyed) == sorted(cu.events)


def test_do_bench_uses_device_events_on_nvidia(fake_gpu, monkeypatch):
    from naiad.testing import do_bench
    from naiad_nvidia.runtime import event_timer

    monkeypatch.setattr(event_timer, "FLUSH_BYTES", 1 << 20)   # a smaller fake buffer
    launcher, cu, _ = fake_gpu
    d = naiad.to_device(np.zeros(8, np.float32))

    def run():
        vector_add[(4,)](d, d, d, 0, BLOCK=16)

    # 4 programs at 0.25 ms each on the virtual clock; the 2 ms flushes fall outside the events
    times = do_bench(run, warmup=1, rep=10, return_mode="all")
    assert times == [1.0] * len(times) and len(times) >= 2
    assert len(cu.memsets) == 5 + len(times)
    assert sorted(cu.destroyed) == sorted(cu.events)
