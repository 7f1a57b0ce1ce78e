"""Benchmark helpers: ``naiad.testing.do_bench`` times a callable like Triton's.

Timings are in milliseconds. Two clocks:

* **device events**, when the target's launcher offers ``event_timer()`` (the NVIDIA backend):
  each repeat is timed between two events recorded on the launch stream, so the figure is GPU
  time, and the L2 cache is flushed before each repeat (a 256 MB buffer overwritten, as Triton
  does) so no repeat runs on data the previous one left in cache. The timer object has
  ``reserve(n)`` (create n events ahead), ``record() -> event``, ``elapsed_ms(start, end)``,
  ``synchronize()``, ``flush_l2()`` and ``close()``;
* **the host clock** otherwise: ``time.perf_counter`` around each call, after waiting for the
  target's work through the launcher's ``synchronize()`` when it has one; interpreters (the
  reference executor) are synchronous, so this is exact there.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

from .errors import NaiadError, OptionError

_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _launcher(target=None):
    """The target's launcher, or None when it has none."""
    from .runtime.targets import state_for

    try:
        return state_for(target).launcher
    except NaiadError:
        return None


def _synchronizer(launcher) -> Callable[[], None]:
    """The launcher's ``synchronize`` or a no-op."""
    return launcher.synchronize if launcher is not None else (lambda: None)


def _event_timer(launcher):
    """The launcher's device event timer, or None (no method, or no device to time on)."""
    if launcher is None:
        return None
    try:
        return launcher.event_timer()
    except NaiadError:      # e.g. no driver here: time with the host clock
        return None


def do_bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100,
             quantiles: Sequence[float] | None = None, return_mode: str = "median",
             target=None):
    """Run ``fn`` repeatedly and return its time per call in ms.

    ``warmup`` and ``rep`` are time budgets in ms (as in Triton): the number of warm-up and timed
    calls is derived from a first estimate, with at least one of each. ``quantiles`` (e.g.
    ``(0.5, 0.2, 0.8)``) returns that list of quantiles; otherwise ``return_mode`` picks
    ``min``/``max``/``mean``/``median`` or ``all`` (every timing).
    """
    if return_mode not in _RETURN_MODES:
        raise OptionError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, "
                          f"not {return_mode!r}")
    if quantiles is not None and not all(0.0 <= q <= 1.0 for q in quantiles):
        raise OptionError(f"quantiles must lie in [0, 1], got {list(quantiles)}")
    if warmup < 0 or rep <= 0:
        raise OptionError(f"warmup must be >= 0 and rep > 0 (ms), got {warmup} and {rep}")
    launcher = _launcher(target)
    timer = _event_timer(launcher)
    if timer is None:
        times = _host_times(fn, warmup, rep, _synchronizer(launcher))
    else:
        try:
            times = _event_times(fn, warmup, rep, timer)
        finally:
            timer.close()

    if quantiles is not None:
        return [_quantile(times, q) for q in quantiles]
    if return_mode == "all":
        return times
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "mean":
        return statistics.fmean(times)
    return statistics.median(times)


def _counts(estimate_ms: float, warmup: float, rep: float,
            floor_ms: float = 1e-6) -> tuple[int, int]:
    """Warm-up and timed calls for budgets of ``warmup`` and ``rep`` ms (at least one timed),
    from a per-call estimate taken as at least ``floor_ms``."""
    estimate_ms = max(estimate_ms, floor_ms)
    n_warmup = max(1, int(warmup / estimate_ms)) if warmup > 0 else 0
    return n_warmup, max(1, int(rep / estimate_ms))


def _host_times(fn, warmup: float, rep: float, sync) -> list[float]:
    """Per-call times by the host clock, waiting for the device after each call."""
    clock = time.perf_counter
    # estimate: the first call may compile; time a few more after it
    fn()
    sync()
    start = clock()
    n_est = 0
    while True:
        fn()
        n_est += 1
        if n_est >= 5 or (clock() - start) * 1e3 > max(rep, 1.0) / 4:
            break
    sync()
    n_warmup, n_repeat = _counts((clock() - start) * 1e3 / n_est, warmup, rep)
    for _ in range(n_warmup):
        fn()
    sync()
    times = []
    for _ in range(n_repeat):
        t0 = clock()
        fn()
        sync()
        times.append((clock() - t0) * 1e3)
    return times


def _event_times(fn, warmup: float, rep: float, timer) -> list[float]:
    """Per-call GPU times between device events, with the L2 flushed before each call."""
    fn()                      # the first call may compile
    timer.synchronize()
    start = timer.record()
    for _ in range(5):
        timer.flush_l2()
        fn()
    end = timer.record()
    # events resolve about 0.5 us: a smaller estimate would only multiply the repeats
    n_warmup, n_repeat = _counts(timer.elapsed_ms(start, end) / 5, warmup, rep, floor_ms=1e-3)
    timer.reserve(2 * n_repeat)
    for _ in range(n_warmup):
        fn()
    marks = []
    for _ in range(n_repeat):
        timer.flush_l2()
        begin = timer.record()
        fn()
        marks.append((begin, timer.record()))
    timer.synchronize()
    return [timer.elapsed_ms(begin, end) for begin, end in marks]


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) without importing numpy."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
