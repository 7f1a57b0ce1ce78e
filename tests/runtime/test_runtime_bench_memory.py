"""naiad.testing.do_bench and the memory API (to_device / empty / zeros)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import naiad
from naiad.runtime.memory import as_numpy_dtype
from naiad.testing import do_bench
from naiad_stub_backend import StubBackend


def test_do_bench_measures_milliseconds(stub):
    calls = []

    def work():
        calls.append(1)
        time.sleep(0.002)

    median = do_bench(work, warmup=2, rep=30)
    assert 1.9 <= median < 10.0                 # 2 ms of sleep, in ms, with scheduler slack
    assert len(calls) >= 1 + 1 + 1 + 5          # first call, estimate, warmup, repeats
    lo, mid, hi = do_bench(work, warmup=0, rep=20, quantiles=(0.2, 0.5, 0.8))
    assert lo <= mid <= hi
    every = do_bench(work, rep=20, return_mode="all")
    assert isinstance(every, list) and len(every) >= 2 and min(every) >= 1.9
    assert stub.launcher.syncs > 0              # the launcher's synchronize() was used


def test_do_bench_without_synchronize(isolated_pm):
    plugin = StubBackend("nosync")
    # a launcher that does not override synchronize: the base class's no-op
    plugin.launcher.synchronize = naiad.plugins.Launcher.synchronize.__get__(plugin.launcher)
    isolated_pm.register(plugin, name="nosync")
    with naiad.target("nosync"):
        assert do_bench(lambda: None, warmup=1, rep=2) >= 0.0


class ScriptedTimer:
    """An event timer over a virtual device clock: each call of the benchmarked function
    advances it by the next scripted duration, each L2 flush by 100 ms (which must never
    show in a timing)."""

    def __init__(self, durations):
        self.clock = 0.0
        self.durations = list(durations)
        self.calls = 0
        self.log = []           # "flush", "record", "fn": the order do_bench used them in
        self.reserved = 0
        self.closed = False

    def run(self):
        self.log.append("fn")
        self.clock += self.durations[self.calls % len(self.durations)]
        self.calls += 1

    def reserve(self, n):
        self.reserved += n

    def record(self):
        self.log.append("record")
        return self.clock

    def elapsed_ms(self, start, end):
        return end - start

    def synchronize(self):
        pass

    def flush_l2(self):
        self.log.append("flush")
        self.clock += 100.0

    def close(self):
        self.closed = True


def test_do_bench_times_with_device_events(stub):
    durations = [0.5, 0.25, 1.5, 0.75]
    timer = ScriptedTimer(durations)
    stub.launcher.event_timer = lambda: timer
    times = do_bench(timer.run, warmup=1, rep=20, return_mode="all")
    assert timer.closed
    # the estimate over 5 flushed calls is ~100 ms per call: 1 warm-up call, 1 timed call
    assert len(times) == 1
    # every timed call is exactly one scripted duration: flushes fall outside the events
    first_timed = 1 + 5 + 1     # the compile call, the estimate, the warm-up
    assert times == [durations[first_timed % len(durations)]]
    tail = timer.log[-4:]
    assert tail == ["flush", "record", "fn", "record"]
    assert timer.reserved >= 2 * len(times)


def test_do_bench_with_events_returns_every_statistic(stub):
    durations = [4 / 1024, 1 / 1024, 2 / 1024, 3 / 1024]   # exact in binary: sums stay exact
    timer = ScriptedTimer(durations)
    timer.flush_l2 = lambda: timer.log.append("flush")     # a free flush: many repeats
    stub.launcher.event_timer = lambda: timer
    every = do_bench(timer.run, warmup=0, rep=0.05, return_mode="all")
    assert len(every) > 4 and sorted(set(every)) == sorted(durations)
    assert timer.log.count("flush") == 5 + len(every)      # estimate + one per repeat
    assert do_bench(timer.run, warmup=0, rep=0.05, return_mode="min") == 1 / 1024
    assert do_bench(timer.run, warmup=0, rep=0.05, return_mode="max") == 4 / 1024
    lo, hi = do_bench(timer.run, warmup=0, rep=0.05, quantiles=(0.0, 1.0))
    assert (lo, hi) == (1 / 1024, 4 / 1024)
    assert stub.launcher.syncs == 0            # events, not the host clock


def test_do_bench_falls_back_to_the_host_clock_without_a_device(stub):
    def no_device():
        raise naiad.DeviceError("no driver here")

    stub.launcher.event_timer = no_device
    median = do_bench(lambda: time.sleep(0.002), warmup=0, rep=10)
    assert 1.9 <= median < 10.0
    assert stub.launcher.syncs > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"return_mode": "p99"}, "return_mode"),
    ({"quantiles": (0.5, 1.5)}, "quantiles"),
    ({"rep": 0}, "rep > 0"),
])
def test_do_bench_rejects_bad_options(stub, kwargs, message):
    with pytest.raises(naiad.OptionError, match=message):
        do_bench(lambda: None, **kwargs)


def test_memory_api_on_an_interpreter(stub):
    host = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    dev = naiad.to_device(host)
    assert isinstance(dev, np.ndarray) and dev is not host
    np.testing.assert_array_equal(dev, host)
    e = naiad.empty((4, 2), "fp16")
    assert e.shape == (4, 2) and e.dtype == np.float16
    z = naiad.zeros(7, np.int32)
    assert z.shape == (7,) and z.dtype == np.int32 and not z.any()


def test_memory_api_uses_the_launcher(isolated_pm):
    plugin = StubBackend("dev", compiled=True, archs=("d1",))
    made = []

    def to_device(array):
        made.append(("to_device", array.shape, array.dtype))
        return ("device", array.copy())

    def empty(shape, dtype):
        made.append(("empty", shape, dtype))
        return ("device-empty", shape, dtype)

    plugin.launcher.to_device = to_device
    plugin.launcher.empty = empty
    isolated_pm.register(plugin, name="dev")
    with naiad.target("dev"):
        assert naiad.to_device(np.arange(3))[0] == "device"
        assert naiad.empty([2, 3], "bf16")[0] == "device-empty"
        kind, copy = naiad.zeros(4, "float64")   # no launcher.zeros: host zeros copied over
        assert kind == "device" and copy.dtype == np.float64 and not copy.any()
    import ml_dtypes

    assert made[1] == ("empty", (2, 3), np.dtype(ml_dtypes.bfloat16))


def test_memory_api_errors(stub):
    with pytest.raises(naiad.NaiadError, match="negative dimension"):
        naiad.empty((2, -1))
    with pytest.raises(naiad.NaiadError, match="not a dtype"):
        naiad.zeros(3, "float37")
    with pytest.raises(naiad.NaiadError, match="numeric array"):
        naiad.to_device(np.array([object()]))
    with pytest.raises(naiad.TargetError):
        naiad.empty(3, target="nowhere")


@pytest.mark.parametrize("spelling, expected", [
    ("fp32", np.float32), ("float16", np.float16), ("i64", np.int64), ("u8", np.uint8),
    (np.float64, np.float64), (np.dtype(np.int16), np.int16), ("i1", np.bool_),
])
def test_dtype_spellings(spelling, expected):
    assert as_numpy_dtype(spelling) == np.dtype(expected)


def test_language_and_ir_dtypes():
    from naiad.ir import types

    assert as_numpy_dtype(types.f16) == np.float16
    tl = pytest.importorskip("naiad.language")
    assert as_numpy_dtype(tl.float32) == np.float32
    assert as_numpy_dtype(tl.int8) == np.int8
