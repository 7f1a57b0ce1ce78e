"""Benchmark helpers: ``naiad.testing.do_bench`` times a callable like Triton's.

Timings are in milliseconds. Before reading the clock the target's work is waited for through
the launcher's ``synchronize()`` when it has one (GPU backends); interpreters (the reference
executor) are synchronous, so plain ``time.perf_counter`` is exact there.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

from .errors import NaiadError, OptionError

_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _synchronizer(target=None) -> Callable[[], None]:
    """The current target's ``launcher.synchronize`` or a no-op."""
    from .runtime.targets import state_for

    try:
        launcher = state_for(target).launcher
    except NaiadError:
        return lambda: None
    sync = getattr(launcher, "synchronize", None)
    return sync if callable(sync) else (lambda: None)


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
    sync = _synchronizer(target)
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
    estimate_ms = max((clock() - start) * 1e3 / n_est, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms)) if warmup > 0 else 0
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    sync()
    times = []
    for _ in range(n_repeat):
        t0 = clock()
        fn()
        sync()
        times.append((clock() - t0) * 1e3)

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


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) without importing numpy."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
