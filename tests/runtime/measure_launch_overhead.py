"""Host overhead of a warm ``kernel[grid](...)`` launch, in microseconds.

    PYTHONPATH=core:backends/reference python tests/runtime/measure_launch_overhead.py

Two figures:
* ``runtime``: naiad's own warm path (bind, specialise, cache lookup, grid, launcher call) with a
  launcher that does nothing -- what the runtime adds on top of any backend;
* ``reference``: a full launch of a tiny kernel (1 program, 16 elements) on the reference executor,
  i.e. runtime + the numpy interpreter (needs the frontend and the reference backend).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import naiad  # noqa: E402
from naiad.plugins import manager  # noqa: E402


def _per_call_us(fn, n=20000, repeats=5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


class NullLauncher(naiad.plugins.Launcher):
    def load(self, result, kernel_name):
        return kernel_name

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        return None


def measure_runtime() -> float:
    import naiad.compiler
    from naiad_stub_backend import FakeCompiler, StubBackend

    plugin = StubBackend("null")
    plugin.launcher = NullLauncher()
    manager.register(plugin, name="null-plugin")
    real_compile = naiad.compiler.compile
    naiad.compiler.compile = FakeCompiler()
    try:
        @naiad.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
            pass

        x = np.ones(16, np.float32)
        y = np.ones(16, np.float32)
        out = np.empty(16, np.float32)
        with naiad.target("null"):
            add[(1,)](x, y, out, 16, BLOCK=16)
            return _per_call_us(lambda: add[(1,)](x, y, out, 16, BLOCK=16))
    finally:
        naiad.compiler.compile = real_compile
        manager.unregister(name="null-plugin")


def measure_reference() -> float | None:
    try:
        from naiad.demo import vector_add
    except Exception as exc:  # noqa: BLE001
        print(f"reference: skipped ({type(exc).__name__}: {exc})")
        return None
    x = np.ones(16, np.float32)
    y = np.ones(16, np.float32)
    out = np.empty(16, np.float32)
    try:
        with naiad.target("reference"):
            vector_add[(1,)](x, y, out, 16, BLOCK=16)
            return _per_call_us(lambda: vector_add[(1,)](x, y, out, 16, BLOCK=16), n=2000)
    except Exception as exc:  # noqa: BLE001 -- frontend or reference backend not usable yet
        print(f"reference: skipped ({type(exc).__name__}: {exc})")
        return None


def main() -> None:
    os.environ.setdefault("NAIAD_CACHE_DIR", tempfile.mkdtemp(prefix="naiad-overhead-"))
    import warnings

    warnings.simplefilter("ignore")
    print(f"runtime warm path (no-op launcher): {measure_runtime():.2f} us per launch")
    ref = measure_reference()
    if ref is not None:
        print(f"reference target, tiny vector add:  {ref:.2f} us per launch")


if __name__ == "__main__":
    main()
