"""GPU-side timing for ``naiad.testing.do_bench``: CUDA events and an L2 flush.

Why: timing a kernel with the host clock measures launch overhead and synchronisation as much as
the kernel. CUDA events are recorded on the stream the kernels run on, and the driver reports the
time between two of them on the GPU itself. Between repeats, ``flush_l2`` overwrites a 256 MB
buffer so each timed run starts with a cold L2 (as Triton's ``do_bench`` does), not with the
previous run's data still cached.
"""
from __future__ import annotations

#: Bytes written by ``flush_l2``: well above the L2 of any current NVIDIA GPU (H200: 50 MB).
FLUSH_BYTES = 256 << 20


class EventTimer:
    """Records CUDA events on the launcher's current launch stream.

    Events are created on demand (or ahead with :meth:`reserve`) and destroyed by :meth:`close`.
    """

    def __init__(self, launcher):
        self.launcher = launcher
        self.driver = launcher._ready()
        self._free: list = []      # created, not recorded yet
        self._all: list = []       # every event this timer created (destroyed by close)

    def _stream(self):
        return self.launcher.current_stream()

    def reserve(self, n: int) -> None:
        """Create ``n`` events now, so that recording them later costs no allocation."""
        d = self.driver
        flags = d.cu.CUevent_flags.CU_EVENT_DEFAULT
        for _ in range(n):
            event = d.call("cuEventCreate", flags)
            self._free.append(event)
            self._all.append(event)

    def record(self):
        """Record an event on the launch stream now; returns it (for :meth:`elapsed_ms`)."""
        if not self._free:
            self.reserve(1)
        event = self._free.pop()
        self.driver.call("cuEventRecord", event, self._stream())
        return event

    def elapsed_ms(self, start, end) -> float:
        """Milliseconds of GPU time between two recorded events (waits for ``end``)."""
        d = self.driver
        d.call("cuEventSynchronize", end)
        return float(d.call("cuEventElapsedTime", start, end))

    def synchronize(self) -> None:
        self.driver.synchronize()

    def flush_l2(self) -> None:
        """Overwrite a 256 MB device buffer on the launch stream (evicts the L2 cache)."""
        launcher = self.launcher
        buf = launcher._flush_buffer
        if buf is None:
            buf = launcher._flush_buffer = launcher.empty(FLUSH_BYTES // 4, "i32")
        self.driver.call("cuMemsetD32Async", buf.ptr, 0, FLUSH_BYTES // 4, self._stream())

    def close(self) -> None:
        """Destroy every event this timer created."""
        cu = self.driver.cu
        for event in self._all:
            try:
                cu.cuEventDestroy(event)
            except Exception:  # noqa: BLE001 -- best effort at teardown
                pass
        self._all.clear()
        self._free.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
