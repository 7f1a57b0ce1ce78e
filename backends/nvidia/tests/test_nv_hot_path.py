"""The shape of the warm launch of a tiny kernel with a torch tensor, without a GPU (issue #9's
"host launch overhead after the benchmarks"): after many other kernels were compiled and launched,
``kernel[(1,)](x, 1)`` still takes the generated fast path, runs only the few naiad functions of
that path, leaves no GC-tracked object behind (so no collection scans the program's live objects
because of launches), follows torch's current stream as it changes, and a bad argument after
all that still gets the general path's clear error."""
from __future__ import annotations

import gc
import sys

import pytest
from cuda.bindings import driver as real_cu

import naiad
import naiad.language as tl
from naiad.runtime.launch import runtime_of

from test_nv_launcher import OK
from test_nv_warm_launch import fake_gpu  # noqa: F401  (the fixture)

torch = pytest.importorskip("torch")

#: the naiad functions a warm ``kernel[grid](tensor, int)`` runs, in order: JITFunction.__getitem__,
#: the generated launch (the target lookup inline), the torch binder and its pointer read, the
#: launcher's bound launch. Anything else (current_state, the slow path's bind/_classify/_grid3,
#: a stream lookup in Python) is host time added to every launch.
WARM_PATH = ("__getitem__", "launch", "bind_array", "torch_pointer", "go")


@naiad.jit
def tiny_kernel(x_ptr, n):
    pass     # never compiled here: the fake compiler hands back a stand-in cubin


@naiad.jit
def other_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass


@pytest.fixture
def torch_on_fake_gpu(fake_gpu, monkeypatch):
    """fake_gpu with CPU tensors posing as CUDA ones, torch's current stream a settable handle,
    and a driver launch that records nothing (so only naiad's own allocations remain)."""
    launcher, cu, compiled = fake_gpu
    current = {"stream": 0x5000}
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream",
                        lambda device: current["stream"], raising=False)
    cu.CUstream = real_cu.CUstream
    cu.cuModuleGetFunction = lambda module, name: (OK, "fn:" + name.decode())
    cu.cuLaunchKernel = lambda f, gx, gy, gz, bx, by, bz, sh, stream, params, extra: (OK,)
    tiny_kernel.cache_clear()
    other_kernel.cache_clear()
    yield launcher, cu, compiled, current


def _compile_many(n: int) -> None:
    """``n`` other specialisations compiled and launched (as the benchmarks leave a process)."""
    a = torch.empty(1024, dtype=torch.float32)
    for block in range(n):
        other_kernel[(4,)](a, a, 1024, BLOCK=16 * (block + 1))


def test_fast_path_after_many_kernels(torch_on_fake_gpu):
    launcher, cu, compiled, current = torch_on_fake_gpu
    _compile_many(24)
    x = torch.empty(64, dtype=torch.int32)
    tiny_kernel[(1,)](x, 1)
    tiny_kernel[(1,)](x, 1)          # the second call records the fast key
    rt = runtime_of(tiny_kernel)
    before = (rt.warm_launches, rt.stats.launches, rt.stats.compiles, len(compiled))
    for _ in range(300):
        tiny_kernel[(1,)](x, 1)
    assert rt.warm_launches == before[0] + 300        # every one by the generated warm path
    assert (rt.stats.launches, rt.stats.compiles, len(compiled)) == before[1:]


def test_warm_launch_runs_only_the_warm_path_functions(torch_on_fake_gpu):
    _compile_many(8)
    x = torch.empty(64, dtype=torch.int32)
    for _ in range(3):
        tiny_kernel[(1,)](x, 1)
    called = []

    def profile(frame, event, arg):
        if event == "call" and "naiad" in frame.f_code.co_filename.replace("\\", "/") \
                and "/tests/" not in frame.f_code.co_filename:
            called.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        tiny_kernel[(1,)](x, 1)
    finally:
        sys.setprofile(None)
    assert tuple(called) == WARM_PATH, f"naiad functions run by one warm launch: {called}"


def test_warm_launches_leave_no_gc_tracked_objects(torch_on_fake_gpu):
    _compile_many(8)
    x = torch.empty(64, dtype=torch.int32)
    for _ in range(3):
        tiny_kernel[(1,)](x, 1)
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for _ in range(2000):
            tiny_kernel[(1,)](x, 1)
        after = len(gc.get_objects())
    finally:
        gc.enable()
    # one object kept per launch would show as 2000; a few may come from the counting itself
    assert after - before < 20, f"{after - before} GC-tracked objects left by 2000 launches"


def test_launches_follow_torchs_current_stream(torch_on_fake_gpu):
    launcher, cu, _, current = torch_on_fake_gpu
    seen = []
    cu.cuLaunchKernel = lambda f, gx, gy, gz, bx, by, bz, sh, stream, params, extra: (
        seen.append(stream) or (OK,))
    x = torch.empty(64, dtype=torch.int32)
    for raw in (0x5000, 0x5000, 0x7000, 0x5000, 0x7000):
        current["stream"] = raw
        tiny_kernel[(1,)](x, 1)
        assert int(seen[-1]) == raw and isinstance(seen[-1], real_cu.CUstream)
        assert launcher.current_stream() is seen[-1]     # what the event timer records on
    assert seen[0] is seen[1] is seen[3]                  # one stream object per handle
    assert seen[2] is seen[4]
    tiny_kernel[(1,)](x, 1, stream=0x6000)                # an explicit stream wins
    assert seen[-1] == 0x6000


def test_bad_arguments_after_the_warm_path_still_name_the_problem(torch_on_fake_gpu,
                                                                   monkeypatch):
    _compile_many(4)
    x = torch.empty(64, dtype=torch.int32)
    for _ in range(3):
        tiny_kernel[(1,)](x, 1)
    with pytest.raises(naiad.NaiadError, match=r"tiny_kernel: argument 'x_ptr'.*str"):
        tiny_kernel[(1,)]("x", 1)
    with pytest.raises(naiad.NaiadError, match=r"integer 18446744073709551616 does not fit"):
        tiny_kernel[(1,)](x, 2 ** 64)
    for grid in (None, "1", (1, 2, 3, 4)):
        with pytest.raises(naiad.NaiadError, match=r"a grid"):
            tiny_kernel[grid](x, 1)
        with pytest.raises(naiad.NaiadError, match=r"a grid"):
            tiny_kernel.warmup(x, 1)[grid](x, 1)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: False))
    with pytest.raises(naiad.NaiadError, match="on cpu was passed .* move it to the GPU"):
        tiny_kernel[(1,)](x, 1)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    rt = runtime_of(tiny_kernel)
    warm = rt.warm_launches
    tiny_kernel[(1,)](x, 1)
    assert rt.warm_launches == warm + 1                   # the errors left the fast path intact
