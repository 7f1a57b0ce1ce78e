"""On an NVIDIA GPU: vector add, math accuracy, warp ops, limits and launch overhead.

Every test here is marked ``gpu`` and skipped (with the reason) where no driver/device exists.
"""
from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import DeviceError
from naiad.plugins import Target
from naiad_nvidia.codegen import NvidiaCodegen
from naiad_nvidia.runtime.launcher import NvidiaLauncher

from nv_kernels import GPU_ARCH, attrs_for, math_kernel, vector_add, warp_ops_kernel
from test_nv_math_host import F32_ULPS, F64_ULPS, REFS, _inputs, _ref, ulp_error

pytestmark = pytest.mark.gpu

BLOCK = 128  # 4 warps, one element per thread


@pytest.fixture(scope="module")
def target():
    return Target("nvidia", GPU_ARCH or "sm_90", 32)


@pytest.fixture(scope="module")
def codegen(target):
    return NvidiaCodegen(target)


@pytest.fixture(scope="module")
def launcher(target):
    return NvidiaLauncher(target)


def _grid(n):
    return ((n + BLOCK - 1) // BLOCK, 1, 1)


@pytest.fixture(scope="module")
def vadd(codegen, launcher, target):
    res = codegen.compile_llvm(vector_add(codegen.target_info, attrs_for(target)), "vector_add",
                               {"num_warps": 4})
    return launcher.load(res, "vector_add")


@pytest.mark.parametrize("n", [1, 1000, 1 << 20, 12345])
def test_vector_add(launcher, vadd, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    pad = 64
    out = launcher.to_device(np.full(n + pad, np.nan, np.float32))  # poisoned
    dx, dy = launcher.to_device(x), launcher.to_device(y)
    launcher.launch(vadd, _grid(n), 4, 0, [dx.ptr, dy.ptr, out.ptr, n],
                    ("*fp32", "*fp32", "*fp32", "i32"))
    got = out.numpy()
    np.testing.assert_array_equal(got[:n], x + y)
    assert np.isnan(got[n:]).all(), "wrote past the mask"
    np.testing.assert_array_equal(dx.numpy(), x)


def _run_math(codegen, launcher, target, name, elem, inputs):
    src = math_kernel(codegen.target_info, attrs_for(target), name, elem, len(inputs))
    handle = launcher.load(codegen.compile_llvm(src, "kern", {"num_warps": 4}), "kern")
    n = inputs[0].size
    dev_in = [launcher.to_device(a) for a in inputs]
    out = launcher.to_device(np.full(n, np.nan, inputs[0].dtype))
    tname = {"f32": "*fp32", "f64": "*fp64", "f16": "*fp16", "bf16": "*bf16"}.get(elem, "*i32")
    launcher.launch(handle, _grid(n), 4, 0, [a.ptr for a in dev_in] + [out.ptr, n],
                    (tname,) * (len(inputs) + 1) + ("i32",))
    return out.numpy()


# Device bounds: host-measured expansion error + the hardware approximations (ex2.approx.f32 and
# rsqrt.approx.f32: <= 2 ulp).
DEV_F32 = dict(F32_ULPS, exp=3.5, exp2=2.5, log2=2.5, sin=2.5, cos=2.5, erf=2.5)


@pytest.mark.parametrize("elem,dtype,bounds", [("f32", np.float32, DEV_F32),
                                                ("f64", np.float64, F64_ULPS)])
@pytest.mark.parametrize("name", sorted(REFS))
def test_math_accuracy(codegen, launcher, target, name, elem, dtype, bounds):
    x = _inputs(name, dtype)
    got = _run_math(codegen, launcher, target, name, elem, [x])
    err = ulp_error(got, _ref(REFS[name], x), dtype)
    worst = int(np.argmax(err))
    assert err.max() <= bounds[name], (
        f"{name}/{elem} on {target}: {err.max():.2f} ulp at x={x[worst]!r}: got {got[worst]!r}")


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("name,ref,ulps", [
    ("sqrt", np.sqrt, 0.5), ("rsqrt", lambda v: 1 / np.sqrt(v), 2.0),
    ("floor", np.floor, 0), ("ceil", np.ceil, 0), ("abs", np.abs, 0)])
def test_simple_math(codegen, launcher, target, name, ref, ulps, elem, dtype):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-100, 100, 5000), np.exp(rng.uniform(-80, 80, 5000))])
    if name in ("sqrt", "rsqrt"):
        x = np.abs(x)
    x = x.astype(dtype)
    got = _run_math(codegen, launcher, target, name, elem, [x])
    bound = ulps if not (name == "rsqrt" and elem == "f64") else 1.5
    assert ulp_error(got, _ref(ref, x), dtype).max() <= bound


@pytest.mark.parametrize("elem,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("name", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                                  "erf", "floor", "ceil", "abs"])
def test_half_math(codegen, launcher, target, name, elem, dtype):
    rng = np.random.default_rng(3)
    lo = 0.01 if name in ("log", "log2", "sqrt", "rsqrt") else -8.0
    x = rng.uniform(lo, 8.0, 4096).astype(dtype)
    got = _run_math(codegen, launcher, target, name, elem, [x]).astype(np.float64)
    ref_fn = dict(REFS, sqrt=np.sqrt, rsqrt=lambda v: 1 / np.sqrt(v), floor=np.floor,
                  ceil=np.ceil, abs=np.abs)[name]
    ref = _ref(ref_fn, x.astype(np.float32)).astype(dtype).astype(np.float64)
    # computed in f32 then rounded once: within one narrow ulp of the rounded reference
    spacing = np.abs(ref) * (2.0 ** -10 if elem == "f16" else 2.0 ** -7)
    assert np.all(np.abs(got - ref) <= np.maximum(spacing, 1e-7)), name


def test_fma_and_int_math(codegen, launcher, target):
    rng = np.random.default_rng(5)
    a, b, c = (rng.uniform(-1, 1, 4096).astype(np.float32) for _ in range(3))
    got = _run_math(codegen, launcher, target, "fma", "f32", [a, b, c])
    np.testing.assert_array_equal(got, (a.astype(np.float64) * b + c).astype(np.float32))
    u = rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32)
    v = rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32)
    got = _run_math(codegen, launcher, target, "umulhi", "u32", [u, v])
    np.testing.assert_array_equal(got, ((u.astype(np.uint64) * v) >> 32).astype(np.uint32))
    s = rng.integers(-2 ** 31, 2 ** 31, 4096, dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(_run_math(codegen, launcher, target, "abs", "i32", [s]),
                                  np.abs(s))


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32), ("i64", np.int64),
                                        ("f64", np.float64)])
def test_warp_ops(codegen, launcher, target, elem, dtype):
    src = warp_ops_kernel(codegen.target_info, attrs_for(target), elem)
    handle = launcher.load(codegen.compile_llvm(src, "warp", {"num_warps": 4}), "warp")
    x = np.arange(BLOCK).astype(dtype) * 3 + 1
    dx = launcher.to_device(x)
    out = launcher.to_device(np.zeros(BLOCK, dtype))
    ptr_t = "*fp32" if elem == "f32" else "*i64"
    launcher.launch(handle, (1, 1, 1), 4, 0, [dx.ptr, out.ptr], (ptr_t, ptr_t))
    # xor-1 shuffle, identity idx shuffle, then broadcast of lane 0 of each warp
    expect = x[(np.arange(BLOCK) // 32) * 32 + 1]
    np.testing.assert_array_equal(out.numpy(), expect)


def test_shared_memory_over_limit_is_clear(launcher, vadd):
    with pytest.raises(DeviceError, match="shared memory"):
        launcher.launch(vadd, (1, 1, 1), 4, 16 << 20, [0, 0, 0, 0],
                        ("*fp32", "*fp32", "*fp32", "i32"))


def test_too_many_warps_is_clear(launcher, vadd):
    with pytest.raises(DeviceError, match="threads per program"):
        launcher.launch(vadd, (1, 1, 1), 8, 0, [0, 0, 0, 0], ("*fp32", "*fp32", "*fp32", "i32"))


def test_warm_launch_overhead(launcher, vadd, capsys):
    n = 1024
    dx = launcher.to_device(np.ones(n, np.float32))
    out = launcher.empty(n, np.float32)
    args, types = [dx.ptr, dx.ptr, out.ptr, n], ("*fp32", "*fp32", "*fp32", "i32")
    for _ in range(100):
        launcher.launch(vadd, (8, 1, 1), 4, 0, args, types)
    launcher.driver.synchronize()
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        launcher.launch(vadd, (8, 1, 1), 4, 0, args, types)
    per = (time.perf_counter() - t0) / reps
    launcher.driver.synchronize()
    with capsys.disabled():
        print(f"\n[nvidia] warm launch host time: {per * 1e6:.2f} us/launch")
    np.testing.assert_array_equal(out.numpy(), np.full(n, 2, np.float32))
    assert per < 100e-6


def test_torch_interop(launcher, vadd):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.randn(5000, device="cuda")
    y = torch.randn(5000, device="cuda")
    out = torch.full((5000,), float("nan"), device="cuda")
    ptrs = [launcher.data_pointer(t) for t in (x, y, out)]
    launcher.launch(vadd, _grid(5000), 4, 0, ptrs + [5000], ("*fp32", "*fp32", "*fp32", "i32"))
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    with pytest.raises(DeviceError, match="torch tensor"):
        launcher.data_pointer(torch.zeros(3))


@naiad.jit
def _add_jit(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_jit_launches_follow_torchs_current_stream():
    """``kernel[grid](tensors)`` runs on torch's current stream, also when it switches between a
    side stream and back (the launcher keeps one stream object per handle): the kernel waits
    for the torch work queued before it there. On the wrong stream it would read ``x`` before
    the delayed fill (a torch side stream does not wait for the legacy default stream)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    n = 1 << 20
    y = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    with naiad.target("nvidia"):
        for i, stream in enumerate((side, torch.cuda.current_stream(), side, side)):
            x = torch.empty(n, device="cuda")
            out = torch.full_like(y, float("nan"))
            torch.cuda.synchronize()
            with torch.cuda.stream(stream):
                torch.cuda._sleep(20_000_000)      # ~10 ms of device time before the fill
                x.fill_(i + 1.5)
                _add_jit[(naiad.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
            torch.cuda.synchronize()
            assert torch.equal(out, y + (i + 1.5)), f"launch {i} did not wait for the fill"
