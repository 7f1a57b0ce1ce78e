"""Tutorial 02's per-call host sequence on the NVIDIA target, without a GPU (the fake driver of
test_nv_warm_launch runs ``vector_add`` in numpy): ``kernel.warmup(...)``, ``_init_handles()``,
``n_regs``, ``metadata.shared``, then ``compiled[grid](...)``. The warm paths must give what
the general paths give (same kernel, same results, recompiles when the specialisation changes)
and their errors must name the user's call line. One test runs the real sequence on a GPU."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import naiad
import naiad.compiler
from naiad.runtime import compiled_launch
from naiad.runtime.launch import KernelRuntime

from test_nv_warm_launch import fake_gpu, vector_add  # noqa: F401  (fixture)

THIS_FILE = __file__.rsplit("/", 1)[-1]


@pytest.fixture
def gpu(fake_gpu, monkeypatch):   # noqa: F811
    """fake_gpu, with register and shared-memory counts in the compiled metadata (as the real
    compiler reports them), counters on the general paths and on module loads."""
    launcher, cu, compiled = fake_gpu
    compile_fake = naiad.compiler.compile

    def compile_with_resources(*a, **kw):
        kernel = compile_fake(*a, **kw)
        kernel.metadata.update(registers=40, shared=2048)
        kernel.arg_names = tuple(a[0].arg_names)    # as naiad.compiler.compile sets them
        return kernel

    monkeypatch.setattr(naiad.compiler, "compile", compile_with_resources)
    slow = {"warmup": 0, "launch": 0, "loads": 0}

    def counting(name, fn):
        def wrapper(*a, **kw):
            slow[name] += 1
            return fn(*a, **kw)
        return wrapper

    # patched before the fast paths are generated: they capture these as their fallbacks
    monkeypatch.setattr(KernelRuntime, "warmup_slow",
                        counting("warmup", KernelRuntime.warmup_slow))
    monkeypatch.setattr(compiled_launch, "launch", counting("launch", compiled_launch.launch))
    load = cu.cuModuleLoadData
    cu.cuModuleLoadData = counting("loads", load)
    vector_add.cache_clear()
    yield launcher, cu, compiled, slow
    vector_add.cache_clear()


def _arrays(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = naiad.to_device(np.full(n, np.nan, np.float32))   # poisoned: unwritten shows
    return x, y, naiad.to_device(x), naiad.to_device(y), out


def _softmax_style_call(dx, dy, out, n):
    """The shape of tutorial 02's ``softmax()`` body, on vector_add."""
    kernel = vector_add.warmup(dx, dy, out, n, BLOCK=256, num_warps=8, grid=(1,))
    kernel._init_handles()
    n_regs, shared = kernel.n_regs, kernel.metadata.shared
    kernel[(naiad.cdiv(n, 256), 1, 1)](dx, dy, out, n, 256)
    return kernel, n_regs, shared


def test_the_tutorial_sequence_runs_on_the_warm_paths(gpu):
    launcher, cu, compiled, slow = gpu
    kernels = set()
    for seed in range(6):
        x, y, dx, dy, out = _arrays(4096, seed)
        kernel, n_regs, shared = _softmax_style_call(dx, dy, out, 4096)
        np.testing.assert_array_equal(out.numpy(), x + y)
        assert (n_regs, shared) == (40, 2048)
        assert cu.launches[-1][:3] == ((16, 1, 1), (256, 1, 1), 2048)
        kernels.add(id(kernel))
    assert len(kernels) == 1 and len(compiled) == 1 and slow["loads"] == 1
    # new arrays each call, same types: the first warmup misses, the second records its warm
    # key, the rest hit; the compiled launch takes its general path once
    assert slow["warmup"] == 2 and slow["launch"] == 1
    assert compiled[0]["options"] == {"num_warps": 8}
    assert compiled[0]["specialization"]["n"] == {"divisibility": 16}


def test_init_handles_is_idempotent_and_n_regs_metadata_read_the_report(gpu):
    launcher, cu, compiled, slow = gpu
    _, _, dx, dy, out = _arrays(64, 1)
    kernel = vector_add.warmup(dx, dy, out, 64, BLOCK=64, grid=(1,))
    assert slow["loads"] == 0                     # warmup compiles, it does not load
    for _ in range(3):
        kernel._init_handles()
    assert slow["loads"] == 1
    assert kernel.n_regs == 40 and kernel.metadata.shared == 2048
    assert kernel.metadata.num_warps == kernel.metadata["num_warps"] == 4
    with pytest.raises(AttributeError, match="no 'num_regs'; it has .*registers"):
        kernel.metadata.num_regs


def test_a_changed_specialisation_recompiles_on_the_warm_warmup(gpu):
    launcher, cu, compiled, slow = gpu
    _, _, dx, dy, out = _arrays(1024, 2)
    hx = naiad.to_device(np.zeros(1024, np.float16))

    def warm(*args, **kw):
        return vector_add.warmup(*args, grid=(1,), **kw)

    base = warm(dx, dy, out, 1024, BLOCK=128)
    for _ in range(3):
        assert warm(dx, dy, out, 1024, BLOCK=128) is base
    variants = [
        (lambda: warm(hx, dy, out, 1024, BLOCK=128), "signature", {"x_ptr": "*fp16"}),
        (lambda: warm(dx, dy, out, 1000, BLOCK=128), "specialization", {"n": None}),
        (lambda: warm(dx, dy, out, 1, BLOCK=128), "specialization", {"n": {"equal_to": 1}}),
        (lambda: warm(dx, dy, out, 1024, BLOCK=64), "constexprs", {"BLOCK": 64}),
        (lambda: warm(dx, dy, out, 1024, BLOCK=128, num_warps=2), "options",
         {"num_warps": 2}),
    ]
    seen = {id(base)}
    for make, field, expected in variants:
        kernel = make()
        assert id(kernel) not in seen, (field, expected)
        assert make() is kernel and make() is kernel      # then the warm key hits it
        seen.add(id(kernel))
        got = compiled[-1][field]
        for name, value in expected.items():
            assert got.get(name) == value, (field, got)
    assert len(compiled) == 1 + len(variants)
    assert warm(dx, dy, out, 1024, BLOCK=128) is base


def test_compiled_launch_checks_every_call_and_names_the_call_line(gpu):
    launcher, cu, compiled, slow = gpu
    x, y, dx, dy, out = _arrays(512, 3)
    kernel, _, _ = _softmax_style_call(dx, dy, out, 512)
    np.testing.assert_array_equal(out.numpy(), x + y)
    hx = naiad.to_device(np.zeros(512, np.float16))
    cases = [
        (lambda: kernel[(2, 1, 1)](dx, dy, out, 2.5, 256),
         r"argument 'n' is fp32, but this compiled kernel was specialised for i32"),
        (lambda: kernel[(2, 1, 1)](hx, dy, out, 512),
         r"argument 'x_ptr' is \*fp16, but this compiled kernel was specialised for \*fp32"),
        (lambda: kernel[(2, 1, 1)](dx, dy, out),
         r"takes 4 runtime arguments \(x_ptr, y_ptr, out_ptr, n\) or all 5 parameters"),
        (lambda: kernel[(2, -1, 1)](dx, dy, out, 512), r"must not be negative"),
        (lambda: kernel[(2, 1, 1)](dx, dy, "out", 512), r"argument 'out_ptr'"),
    ]
    for call, message in cases:
        with pytest.raises(naiad.NaiadError, match=message) as info:
            call()
        assert "[vector_add[grid](...) called at " in str(info.value)
        assert f"/{THIS_FILE}:" in str(info.value)
    # still launching right after the errors, through the warm path; other grid forms too
    launches = len(cu.launches)
    for grid in ((2, 1, 1), (2,), lambda meta: (naiad.cdiv(meta["n"], 256),)):
        x, y, dx, dy, out = _arrays(512, 4)
        kernel[grid](dx, dy, out, 512, 256)
        np.testing.assert_array_equal(out.numpy(), x + y)
    kernel[(0, 1, 1)](dx, dy, out, 512)          # an empty grid launches nothing
    assert len(cu.launches) == launches + 3


def test_warmup_errors_name_the_call_line(gpu):
    _, _, dx, dy, out = _arrays(64, 5)
    line = sys._getframe().f_lineno + 3
    with pytest.raises(naiad.NaiadError, match=rf"argument 'n'.*vector_add\.warmup\(\.\.\.\) "
                                               rf"called at .*{THIS_FILE}:{line}\]"):
        vector_add.warmup(dx, dy, out, "64", BLOCK=64, grid=(1,))
    with pytest.raises(naiad.NaiadError, match="missing argument"):
        vector_add.warmup(dx, dy, BLOCK=64, grid=(1,))


@pytest.mark.gpu
def test_tutorial_sequence_on_the_gpu_matches_torch():
    """The real thing: tutorial 02's kernel and its ``softmax()`` body (warmup, handles,
    resources, persistent grid from them, compiled launch) on CUDA tensors, output poisoned."""
    torch = pytest.importorskip("torch", reason="torch is a peer, not a dependency")
    import naiad.language as tl
    from naiad.runtime import driver

    @naiad.jit
    def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows,
                       n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
        row_start = tl.program_id(0)
        row_step = tl.num_programs(0)
        for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
            offs = tl.arange(0, BLOCK_SIZE)
            mask = offs < n_cols
            row = tl.load(input_ptr + row_idx * input_row_stride + offs, mask=mask,
                          other=-float("inf"))
            num = tl.exp(row - tl.max(row, axis=0))
            tl.store(output_ptr + row_idx * output_row_stride + offs,
                     num / tl.sum(num, axis=0), mask=mask)

    with naiad.target("nvidia"):
        props = driver.active.utils.get_device_properties(0)
        for seed, (rows, cols) in enumerate([(1823, 781), (256, 1024), (97, 2048)] * 2):
            g = torch.Generator().manual_seed(seed)
            x = torch.randn(rows, cols, generator=g).cuda()
            y = torch.full_like(x, float("nan"))
            block = triton_next_power_of_2(cols)
            kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), rows, cols,
                                           BLOCK_SIZE=block, num_stages=4, num_warps=8,
                                           grid=(1,))
            kernel._init_handles()
            assert kernel.n_regs > 0 and kernel.metadata.shared >= 0
            occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * 8)
            if kernel.metadata.shared:
                occupancy = min(occupancy, props["max_shared_mem"] // kernel.metadata.shared)
            programs = min(props["multiprocessor_count"] * max(occupancy, 1), rows)
            kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), rows, cols, block, 4)
            torch.testing.assert_close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-5)


def triton_next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def test_target_and_stream_keywords_leave_the_warm_warmup(gpu):
    """``target=`` compiles for that target (never the hot entry of the current one); ``stream=``
    is ignored by warmup, so it finds the same kernel."""
    launcher, cu, compiled, slow = gpu
    _, _, dx, dy, out = _arrays(256, 6)
    hot = [vector_add.warmup(dx, dy, out, 256, BLOCK=64, grid=(1,)) for _ in range(3)][-1]
    other = vector_add.warmup(dx, dy, out, 256, BLOCK=64, grid=(1,), target="nvidia:sm_80")
    assert other is not hot and str(other.target) == "nvidia:sm_80"
    assert str(hot.target) == "nvidia:sm_90" and len(compiled) == 2
    assert vector_add.warmup(dx, dy, out, 256, BLOCK=64, grid=(1,), stream=0x7000) is hot
    assert vector_add.warmup(dx, dy, out, 256, BLOCK=64, grid=(1,)) is hot
    assert len(compiled) == 2
