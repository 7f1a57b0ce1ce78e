"""A target without shared-memory atomics (``TargetInfo.shared_atomics = False``): a histogram
is a clear error naming the kernel line and the way out, and the backend that selects the core
pass ``expand_histogram`` by name counts with the one-hot compare-and-sum instead (checked on
the CPU SIMT device against numpy)."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
import simt
from naiad.backend import default_lowering_passes, expand_histogram, insert_passes
from naiad.errors import CodegenError
from naiad.plugins import hookimpl
from simt import run
from test_backend_hooks import plugin_manager


class OneHotHistogramBackend:
    @hookimpl
    def naiad_lowering_passes(self, target, options):
        return insert_passes(default_lowering_passes(target, options), [expand_histogram],
                             before="assign_layouts")


@naiad.jit
def histogram_kernel(x_ptr, out_ptr, n, M: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)  # the histogram line
    tl.store(out_ptr + tl.arange(0, BINS), h)


def _inputs(m, bins, seed):
    x = np.random.default_rng(seed).integers(-3, bins + 3, m, dtype=np.int64).astype(np.int16)
    return x, np.full(bins, -7, np.int32)


def test_histogram_without_shared_atomics_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(simt.CpuTargetInfo, "shared_atomics", False, raising=False)
    x, out = _inputs(64, 16, 1)
    with pytest.raises(CodegenError) as info:
        run(histogram_kernel, (1,), [x, out, 50], {"M": 64, "BINS": 16}, warp_size=8,
            num_warps=2)
    message = str(info.value)
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if text.endswith("# the histogram line"))
    assert f"test_histogram_fallback.py:{line}:" in message
    assert "shared_atomics is False" in message and "expand_histogram" in message


@pytest.mark.parametrize("m, n, bins", [(64, 50, 16), (512, 500, 64)])   # 512 x 64: split in halves
def test_selected_one_hot_fallback_counts_without_atomics(monkeypatch, m, n, bins):
    monkeypatch.setattr(simt.CpuTargetInfo, "shared_atomics", False, raising=False)
    x, out = _inputs(m, bins, m + bins)
    k = run(histogram_kernel, (1,), [x, out, n], {"M": m, "BINS": bins}, warp_size=8,
            num_warps=2, pm=plugin_manager(OneHotHistogramBackend()))
    keep = x[:n][(x[:n] >= 0) & (x[:n] < bins)]
    np.testing.assert_array_equal(out, np.bincount(keep, minlength=bins).astype(np.int32))
    assert " = histogram " not in k.lowered.gpu_text
    assert "atomicrmw" not in k.lowered.llvm_ir
