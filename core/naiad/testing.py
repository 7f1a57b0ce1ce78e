"""Benchmark and test helpers with Triton's names: ``do_bench``, ``do_bench_cudagraph``,
``perf_report``/``Benchmark`` and ``assert_close``.

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
             grad_to_none=None, quantiles: Sequence[float] | None = None,
             return_mode: str = "median", target=None):
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
    _clear_grads(grad_to_none)
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


def do_bench_cudagraph(fn: Callable[[], object], rep: float = 20, grad_to_none=None,
                       quantiles: Sequence[float] | None = None, return_mode: str = "mean",
                       target=None):
    """Triton's CUDA-graph benchmark, measured without a graph: naiad times ``fn`` with
    :func:`do_bench` (device events on a GPU target). Launch overhead is therefore included, so
    the figure is an upper bound of what a graph replay would take."""
    _clear_grads(grad_to_none)
    return do_bench(fn, warmup=min(rep, 25), rep=rep, quantiles=quantiles,
                    return_mode=return_mode, target=target)


def _clear_grads(grad_to_none) -> None:
    for t in grad_to_none or ():
        if hasattr(t, "grad"):
            t.grad = None


def _to_numpy(x):
    """A host numpy array from numpy, torch (any device), naiad device arrays, DLPack or
    scalars."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    if hasattr(x, "numpy") and callable(x.numpy):
        return np.asarray(x.numpy())
    if hasattr(x, "get") and callable(x.get):      # CuPy
        return np.asarray(x.get())
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg: str = "") -> None:
    """Assert ``x`` and ``y`` are elementwise close (numpy's rule ``|x-y| <= atol + rtol*|y|``).

    Accepts numpy, torch, CuPy and naiad arrays and scalars. ``atol``/``rtol`` default to
    1e-2 / 0 as in Triton and may be callables of the dtype."""
    import numpy as np

    a, b = _to_numpy(x), _to_numpy(y)
    atol = atol(a.dtype) if callable(atol) else (1e-2 if atol is None else atol)
    rtol = rtol(a.dtype) if callable(rtol) else (0.0 if rtol is None else rtol)
    if a.size > 1 or b.size > 1:
        a, b = np.broadcast_arrays(a, b)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind == "f" else a,
                               b.astype(np.float64) if b.dtype.kind == "f" else b,
                               atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)


class Benchmark:
    """One performance sweep for :func:`perf_report` (Triton's fields and meanings).

    ``x_names``/``x_vals``: the swept argument(s) and their values; ``line_arg``/``line_vals``:
    the argument distinguishing the lines (providers); ``line_names``/``styles``: their labels
    and plot styles; ``ylabel``, ``plot_name``; ``args``: fixed keyword arguments; ``x_log``/
    ``y_log``: log axes."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None):
        if not x_names or not isinstance(x_names, (list, tuple)):
            raise OptionError(f"Benchmark x_names must be a non-empty list, got {x_names!r}")
        if len(line_vals) != len(line_names):
            raise OptionError(f"Benchmark has {len(line_vals)} line_vals but "
                              f"{len(line_names)} line_names")
        self.x_names, self.x_vals = list(x_names), list(x_vals)
        self.line_arg, self.line_vals, self.line_names = line_arg, list(line_vals), list(line_names)
        self.plot_name, self.args = plot_name, dict(args or {})
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log, self.styles = x_log, y_log, styles


class Mark:
    """A function decorated by :func:`perf_report`: call it directly, or ``.run(...)`` the
    sweep(s) and print one table per benchmark."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _run_one(self, bench: Benchmark, save_path, print_data, diff_col=False, **kwargs):
        rows = []
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row = list(xs)
            for line in bench.line_vals:
                out = self.fn(**x_args, **{bench.line_arg: line}, **bench.args, **kwargs)
                if isinstance(out, (list, tuple)):
                    row.append(float(out[0]))
                else:
                    row.append(float(out))
            rows.append(row)
        header = list(bench.x_names) + list(bench.line_names)
        if print_data:
            print(bench.plot_name + ":")
            print(_format_table(header, rows))
        if save_path:
            import csv
            import os

            os.makedirs(save_path, exist_ok=True)
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                csv.writer(f).writerows([header] + rows)
        return _frame(header, rows)

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs):
        """Run every sweep; print tables (``print_data``), write CSVs under ``save_path``.
        Plots are not drawn (naiad does not depend on matplotlib). With ``return_df`` the
        results come back as pandas DataFrames when pandas is installed, else as lists of
        row dicts."""
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        results = [self._run_one(b, save_path, print_data, **kwargs) for b in benches]
        if return_df:
            return results[0] if len(results) == 1 else results
        return None


def _format_table(header, rows) -> str:
    cells = [[str(h) for h in header]] + [[_cell(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def _cell(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _frame(header, rows):
    try:
        import pandas as pd
    except ImportError:
        return [dict(zip(header, r)) for r in rows]
    return pd.DataFrame(rows, columns=header)


def perf_report(benchmarks):
    """``@naiad.testing.perf_report(naiad.testing.Benchmark(...))`` (Triton's decorator)."""
    return lambda fn: Mark(fn, benchmarks)
