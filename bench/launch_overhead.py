"""Host time of a warm ``kernel[grid](...)`` launch on the NVIDIA target, without a GPU.

    PYTHONPATH=core:backends/reference:backends/nvidia:backends/amd \\
        .venv/bin/python bench/launch_overhead.py [--driver fake|noop] [--profile CASE]
        [--cases I,J,...]

Why this exists: the warm launch path is naiad's hot loop, and on a GPU its cost hides behind
the driver's. Here everything naiad does per launch runs for real -- binding, type detection of
torch tensors / naiad DeviceArrays / ints, specialisation, the cache lookup, the grid, the
NVIDIA launcher (stream, packing, the cuLaunchKernel call) -- and only the driver does nothing:

* ``--driver fake`` (default when a C compiler is found): a stand-in ``libcuda.so.1``
  (bench/fake_libcuda.c) is loaded before cuda-python, so cuda-python's own cuLaunchKernel
  wrapper runs and the "driver" returns at once;
* ``--driver noop``: the launcher's driver is a Python fake and its cuLaunchKernel is a no-op.

The compiler is replaced by a stand-in producing a "cubin" (never executed). torch CPU tensors
pose as CUDA tensors: ``torch.Tensor.is_cuda`` is patched to True and
``torch._C._cuda_getCurrentRawStream`` to a C-level callable returning stream 0 (CPU builds lack
it). Each case prints the best of several batches in microseconds per launch. The descriptor
cases build three ``TensorDescriptor``s per call as Triton's tutorials do; the last of them puts
each on a tensor at a new address every call, so every tensor map is a cache miss (encoded,
staged and queued for an asynchronous copy).
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import operator
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
for p in ("core", "backends/reference", "backends/nvidia", "backends/amd"):
    if str(ROOT / p) not in sys.path:
        sys.path.insert(0, str(ROOT / p))

TARGET = "nvidia:sm_90"


# ------------------------------------------------------------------------------ fake drivers

def load_fake_libcuda() -> bool:
    """Build bench/fake_libcuda.c and load it as libcuda.so.1 (before cuda-python looks)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return False
    out = pathlib.Path(tempfile.mkdtemp(prefix="naiad-fakecuda-")) / "libcuda.so.1"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(out),
                    str(HERE / "fake_libcuda.c")], check=True)
    # loaded by its soname: cuda-python's later dlopen("libcuda.so.1") finds this one
    ctypes.CDLL(str(out), mode=ctypes.RTLD_GLOBAL)
    return True


class PythonFakeCu:
    """Just enough of cuda.bindings.driver for the launcher; cuLaunchKernel does nothing."""

    def __init__(self):
        from cuda.bindings import driver as real

        self.CUresult = real.CUresult
        self.CUdevice_attribute = real.CUdevice_attribute
        self.CUfunction_attribute = real.CUfunction_attribute
        self.CUstream = real.CUstream
        for name in ("CUevent_flags", "CUtensorMapDataType", "CUtensorMapInterleave",
                     "CUtensorMapSwizzle", "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill",
                     "cuuint32_t", "cuuint64_t", "CUtensorMap"):
            setattr(self, name, getattr(real, name))
        ok = (real.CUresult.CUDA_SUCCESS,)
        self._ok = ok
        self.cuLaunchKernel = lambda *a: ok
        self._mem = {}

    def __getattr__(self, name):          # every other call succeeds and returns nothing
        return lambda *a: self._ok

    def cuDeviceGetCount(self):
        return self._ok[0], 1

    def cuDeviceGet(self, i):
        return self._ok[0], 0

    def cuDeviceGetAttribute(self, attr, dev):
        a = self.CUdevice_attribute
        return self._ok[0], {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
                             a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
                             a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
                             a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
                             a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132}.get(attr, 0)

    def cuDeviceGetName(self, n, dev):
        return self._ok[0], b"Python fake\0"

    def cuDevicePrimaryCtxRetain(self, dev):
        return self._ok[0], "ctx"

    def cuModuleLoadData(self, image):
        return self._ok[0], "module"

    def cuModuleGetFunction(self, mod, name):
        return self._ok[0], "function"

    def cuFuncGetAttribute(self, attr, fn):
        a = self.CUfunction_attribute
        return self._ok[0], 1024 if attr == a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK else 0

    def cuMemAlloc(self, n):
        buf = ctypes.create_string_buffer(max(int(n), 1))
        self._mem[ctypes.addressof(buf)] = buf
        return self._ok[0], ctypes.addressof(buf)

    cuMemAllocHost = cuMemAlloc

    def cuTensorMapEncodeTiled(self, *args):
        return self._ok[0], self.CUtensorMap()

    def cuEventCreate(self, flags):
        return self._ok[0], 1


def fake_compile(fn, signature, constexprs=None, target=None, options=None,
                 specialization=None):
    """Stands in for naiad.compiler.compile: a 'cubin' the fake drivers accept."""
    from naiad.compiler import CompiledKernel
    from naiad.runtime.targets import resolve_target

    tgt, _ = resolve_target(target)
    if not isinstance(options, dict):   # the launch path passes the backend's options object
        options = {"num_warps": getattr(options, "num_warps", 4)}
    options = dict(options or {})
    return CompiledKernel(fn.__name__, tgt, dict(signature), dict(constexprs or {}), options,
                          asm={"cubin": b"\x7fELF fake cubin"}, binary_stage="cubin",
                          metadata={"num_warps": options.get("num_warps", 4), "shared": 0,
                                    "registers": 32, "arch": "sm_90"},
                          arg_names=tuple(fn.arg_names))


def pose_torch_as_cuda():
    """CPU tensors answer is_cuda=True; the current-stream query returns 0 (C callables, so the
    stand-ins cost about what torch's own C getters do)."""
    import torch

    torch.Tensor.is_cuda = property(functools.partial(operator.is_not, None))
    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):
        torch._C._cuda_getCurrentRawStream = functools.partial(operator.mul, 0)
    return torch


# ------------------------------------------------------------------------------ measuring

def per_call_us(fn, n=20000, repeats=7) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def cases(launcher):
    """(name, zero-argument callable) pairs, each one warm launch."""
    import numpy as np

    import naiad
    import naiad.language as tl
    from naiad.runtime.launch import binary_result

    torch = pose_torch_as_cuda()

    @naiad.jit
    def tiny_kernel(x_ptr, n):
        pass

    @naiad.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass

    @naiad.jit
    def scalars_kernel(a, b, c):
        pass

    @naiad.jit
    def descriptor_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr):
        pass

    @naiad.jit
    def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
        pass

    def warmup_then_launch():   # tutorial 02's softmax(): per call, warmup, handles, then launch
        kernel = softmax_kernel.warmup(yf, xf, 64, 64, 64, 64, BLOCK_SIZE=64, num_stages=4,
                                       num_warps=8, grid=(1,))
        kernel._init_handles()
        assert kernel.n_regs is not None and kernel.metadata.shared is not None
        kernel[(132, 1, 1)](yf, xf, 64, 64, 64, 64, 64, 4)

    from naiad.tools.tensor_descriptor import TensorDescriptor

    a16, b16 = (torch.empty((1024, 512), dtype=torch.float16) for _ in range(2))
    c16 = torch.empty((1024, 1024), dtype=torch.float16)

    def descriptor_launch():   # new descriptors per call, as Triton's tutorials 08/09 build them
        descriptor_kernel[(64,)](TensorDescriptor.from_tensor(a16, [128, 64]),
                                 TensorDescriptor.from_tensor(b16, [128, 64]),
                                 TensorDescriptor.from_tensor(c16, [128, 128]),
                                 1024, 1024, 512, BM=128)

    # tensors at a new address on every call (a fresh output the caching allocator does not
    # reuse): views at 16-byte steps into three buffers, more of them than the map caches keep
    # between two clears, so every descriptor is a map-cache miss
    views = 2048

    def fresh_views(rows, cols):
        flat = torch.empty(rows * cols + 8 * views, dtype=torch.float16)
        return [flat[8 * i:8 * i + rows * cols].view(rows, cols) for i in range(views)]

    new_a, new_b, new_c = fresh_views(1024, 512), fresh_views(1024, 512), fresh_views(1024, 1024)
    turn = iter(range(1 << 62))

    def new_tensor_descriptor_launch():
        i = next(turn) % views
        descriptor_kernel[(64,)](TensorDescriptor.from_tensor(new_a[i], [128, 64]),
                                 TensorDescriptor.from_tensor(new_b[i], [128, 64]),
                                 TensorDescriptor.from_tensor(new_c[i], [128, 128]),
                                 1024, 1024, 512, BM=128)

    x = torch.empty(64, dtype=torch.int32)
    xf, yf, of = (torch.empty(4096, dtype=torch.float32) for _ in range(3))
    d = launcher.to_device(np.zeros(64, np.int32))
    handle = launcher.load(binary_result(fake_compile(
        tiny_kernel, {"x_ptr": "*i32", "n": "i32"})), "tiny_kernel")
    raw_args, raw_types = [d.ptr, 1], ("*i32", "i32")
    grid = (64,)
    return [
        ("torch tensor + int: tiny_kernel[(1,)](x, 1)", lambda: tiny_kernel[(1,)](x, 1)),
        ("DeviceArray + int: tiny_kernel[(1,)](d, 1)", lambda: tiny_kernel[(1,)](d, 1)),
        ("ints only: scalars_kernel[(1,)](7, 1, 32)", lambda: scalars_kernel[(1,)](7, 1, 32)),
        ("3 tensors + int + BLOCK=: add_kernel[grid](x, y, o, n, BLOCK=64)",
         lambda: add_kernel[grid](xf, yf, of, 4096, BLOCK=64)),
        ("same, Triton-style callable grid: add_kernel[lambda m: ...](...)",
         lambda: add_kernel[lambda m: (naiad.cdiv(m["n"], m["BLOCK"]),)](xf, yf, of, 4096,
                                                                          BLOCK=64)),
        ("3 new TensorDescriptors (TMA maps) + 3 ints: descriptor_kernel[grid](...)",
         descriptor_launch),
        ("same, 3 descriptors on new tensors each call (every map a cache miss)",
         new_tensor_descriptor_launch),
        ("tutorial 02's softmax(): kernel.warmup(...), _init_handles(), n_regs, "
         "kernel[(132, 1, 1)](...)", warmup_then_launch),
        ("launcher.launch alone (int pointers, types given)",
         lambda: launcher.launch(handle, (1, 1, 1), 4, 0, raw_args, raw_types)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", choices=("fake", "noop"), default=None)
    ap.add_argument("--profile", type=int, default=None, metavar="CASE",
                    help="cProfile case number CASE (0-based) instead of timing all")
    ap.add_argument("-n", type=int, default=20000, help="launches per batch")
    ap.add_argument("--cases", default=None, metavar="I,J,...",
                    help="time only these case numbers (0-based)")
    args = ap.parse_args()
    os.environ.setdefault("NAIAD_CACHE_DIR", tempfile.mkdtemp(prefix="naiad-overhead-"))

    driver = args.driver or ("fake" if load_fake_libcuda() else "noop")
    if args.driver == "fake" and not load_fake_libcuda():
        raise SystemExit("--driver fake needs a C compiler (cc, gcc or clang)")

    import naiad
    import naiad.compiler
    from naiad_nvidia.runtime.driver import CudaDriver

    naiad.compiler.compile = fake_compile
    naiad.set_target(TARGET)
    from naiad.runtime.targets import current_state

    launcher = current_state().launcher
    if driver == "noop":
        launcher.driver = CudaDriver(TARGET, cu=PythonFakeCu())
    launcher.driver.ensure()
    todo = cases(launcher)
    print(f"naiad warm launch host time, target {TARGET}, driver: "
          f"{'fake libcuda.so.1 (real cuda-python)' if driver == 'fake' else 'Python no-op'}")
    if args.profile is not None:
        import cProfile
        import pstats

        name, fn = todo[args.profile]
        print(name)
        fn()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.n):
            fn()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    chosen = None if args.cases is None else {int(c) for c in args.cases.split(",")}
    for i, (name, fn) in enumerate(todo):
        if chosen is None or i in chosen:
            print(f"  {per_call_us(fn, args.n):6.2f} us  {name}")


if __name__ == "__main__":
    main()
