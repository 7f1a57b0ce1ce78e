"""Host time of a warm ``kernel[grid](...)`` launch on the NVIDIA target, without a GPU.

    PYTHONPATH=core:backends/reference:backends/nvidia:backends/amd \\
        .venv/bin/python bench/launch_overhead.py [--driver fake|noop] [--profile CASE]
        [--cases I,J,...] [--count-calls] [--cpu-time]

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
staged and queued for an asynchronous copy). The ``09 ...`` cases are tutorial 09's host
functions (:func:`tutorial09_cases`). ``--count-calls`` prints, instead of times, the driver
calls each case makes per call (every one a place the host could wait for the GPU) and how many
maps it encoded and chunks it allocated.
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


class CountingCu:
    """``cuda.bindings.driver`` with every ``cu*`` call counted by name (``--count-calls``):
    what a warm call asks of the driver, each call a place the host may wait for the GPU."""

    def __init__(self, cu):
        self._cu = cu
        self.counts: dict = {}

    def __getattr__(self, name):
        attr = getattr(self._cu, name)
        if not name.startswith("cu") or not callable(attr) or isinstance(attr, type):
            return attr
        counts = self.counts

        def counted(*args):
            counts[name] = counts.get(name, 0) + 1
            return attr(*args)

        return counted


def driver_calls_per_call(counter: CountingCu, launcher, fn, n: int = 200) -> str:
    """``name xN`` per call of ``fn`` (after one warm-up call), and the maps encoded and map
    chunks allocated in those ``n`` calls."""
    def map_counts():
        maps = launcher._tensor_maps
        return (maps.encoded, maps.allocated_chunks) if maps is not None else (0, 0)

    fn()
    counter.counts.clear()
    before = map_counts()
    for _ in range(n):
        fn()
    after = map_counts()
    per = ", ".join(f"{k} x{v / n:g}" for k, v in sorted(counter.counts.items())) or "none"
    return (f"{per}; in {n} calls {after[0] - before[0]} maps encoded, "
            f"{after[1] - before[1]} map chunks allocated")


# ------------------------------------------------------------------------------ measuring

def per_call_us(fn, n=20000, repeats=7, clock=time.perf_counter) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for _ in range(n):
            fn()
        best = min(best, (clock() - t0) / n * 1e6)
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

    tutorial09 = tutorial09_cases(torch)

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
    ] + tutorial09


def tutorial09_cases(torch):
    """Tutorial 09's host functions ``matmul`` (pointers), ``matmul_tma`` and
    ``matmul_tma_persistent`` as the tutorial writes them: autotuned kernels (the tutorial's 12
    configs; the TMA ones with the ``pre_hook`` that sets each descriptor's ``block_shape``),
    a callable grid, ``TensorDescriptor.from_tensor(x, [1, 1])`` per call. Two departures, so
    the host path is what is measured: the output ``c`` is passed in (a CPU ``torch.empty``
    costs what a CUDA one does not, and its address is up to malloc), and the sizes are
    1024x1024x512 (the map arguments have the same form as at 8192). ``b`` is given at the same
    address every call (the caching allocator reusing the block of the last ``b.T.contiguous()``),
    alternating between two addresses, or at a new address every call. The autotuner's
    benchmark is a stand-in (``do_bench=``) that picks the first config: nothing runs here."""
    import naiad
    import naiad.language as tl
    from naiad.tools.tensor_descriptor import TensorDescriptor

    def pick_first(call):
        call()
        return 1.0

    def get_configs(pre_hook=None, subtile=(None,)):
        return [naiad.Config({"BLOCK_SIZE_M": BM, "BLOCK_SIZE_N": BN, "BLOCK_SIZE_K": BK,
                              "GROUP_SIZE_M": 8, **({} if st is None else
                                                    {"EPILOGUE_SUBTILE": st})},
                             num_stages=s, num_warps=w, pre_hook=pre_hook)
                for BM in [128] for BN in [128, 256] for BK in [64, 128] for s in [2, 3, 4]
                for w in [4, 8] for st in subtile]

    def set_block_size_hook(nargs):
        EPILOGUE_SUBTILE = nargs.get("EPILOGUE_SUBTILE", False)
        BLOCK_M, BLOCK_N = nargs["BLOCK_SIZE_M"], nargs["BLOCK_SIZE_N"]
        BLOCK_K = nargs["BLOCK_SIZE_K"]
        nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]
        nargs["b_desc"].block_shape = [BLOCK_N, BLOCK_K]
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N // 2] if EPILOGUE_SUBTILE else \
            [BLOCK_M, BLOCK_N]

    @naiad.autotune(configs=get_configs(), key=["M", "N", "K"], do_bench=pick_first)
    @naiad.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
        pass

    @naiad.autotune(configs=get_configs(set_block_size_hook),
                    key=["M", "N", "K", "WARP_SPECIALIZE"], do_bench=pick_first)
    @naiad.jit
    def matmul_kernel_tma(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                          BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr, FP8_OUTPUT: tl.constexpr,
                          WARP_SPECIALIZE: tl.constexpr):
        pass

    @naiad.autotune(configs=get_configs(set_block_size_hook, (True, False)),
                    key=["M", "N", "K", "WARP_SPECIALIZE"], do_bench=pick_first)
    @naiad.jit
    def matmul_kernel_tma_persistent(a_desc, b_desc, c_desc, M, N, K,
                                     BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                     BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                     FP8_OUTPUT: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                                     NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
        pass

    def matmul(a, b, c):
        M, K = a.shape
        K, N = b.shape
        grid = lambda META: (naiad.cdiv(M, META["BLOCK_SIZE_M"])  # noqa: E731
                             * naiad.cdiv(N, META["BLOCK_SIZE_N"]), )
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1))
        return c

    def matmul_tma(a, b, c, warp_specialize=False):
        M, K = a.shape
        N, K = b.shape
        dummy_block = [1, 1]
        a_desc = TensorDescriptor.from_tensor(a, dummy_block)
        b_desc = TensorDescriptor.from_tensor(b, dummy_block)
        c_desc = TensorDescriptor.from_tensor(c, dummy_block)

        def grid(META):
            return (naiad.cdiv(M, META["BLOCK_SIZE_M"]) * naiad.cdiv(N, META["BLOCK_SIZE_N"]), )

        matmul_kernel_tma[grid](a_desc, b_desc, c_desc, M, N, K,
                                FP8_OUTPUT=a.dtype == torch.float8_e4m3fn,
                                WARP_SPECIALIZE=warp_specialize)
        return c

    def matmul_tma_persistent(a, b, c, warp_specialize=False):
        M, K = a.shape
        N, K = b.shape
        NUM_SMS = 132
        dummy_block = [1, 1]
        a_desc = TensorDescriptor.from_tensor(a, dummy_block)
        b_desc = TensorDescriptor.from_tensor(b, dummy_block)
        c_desc = TensorDescriptor.from_tensor(c, dummy_block)

        def grid(META):
            return (min(NUM_SMS, naiad.cdiv(M, META["BLOCK_SIZE_M"])
                        * naiad.cdiv(N, META["BLOCK_SIZE_N"])), )

        matmul_kernel_tma_persistent[grid](a_desc, b_desc, c_desc, M, N, K,
                                           FP8_OUTPUT=a.dtype == torch.float8_e4m3fn,
                                           NUM_SMS=NUM_SMS, WARP_SPECIALIZE=warp_specialize)
        return c

    M, N, K = 1024, 1024, 512
    a = torch.empty((M, K), dtype=torch.float16)
    c = torch.empty((M, N), dtype=torch.float16)
    views = 5003          # more than the map cache and the fast path's records keep (4096)
    flat = torch.empty(N * K + 8 * views, dtype=torch.float16)
    new_b = [flat[8 * i:8 * i + N * K].view(N, K) for i in range(views)]
    turn = iter(range(1 << 62))

    def b_new():
        return new_b[next(turn) % views]

    def b_alternating():
        return new_b[next(turn) % 2]

    b_pointer = new_b[0].T     # (K, N), as the tutorial passes b.T to matmul
    return [
        ("09 matmul(a, b.T) (pointers, autotuned, callable grid)",
         lambda: matmul(a, b_pointer, c)),
        ("09 matmul_tma(a, b, False), b at the same address", lambda: matmul_tma(a, new_b[0], c)),
        ("09 matmul_tma, b alternating between two addresses",
         lambda: matmul_tma(a, b_alternating(), c)),
        ("09 matmul_tma, b at a new address every call", lambda: matmul_tma(a, b_new(), c)),
        ("09 matmul_tma_persistent(a, b, False), b at the same address",
         lambda: matmul_tma_persistent(a, new_b[0], c)),
        ("09 matmul_tma_persistent, b at a new address every call",
         lambda: matmul_tma_persistent(a, b_new(), c)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", choices=("fake", "noop"), default=None)
    ap.add_argument("--profile", type=int, default=None, metavar="CASE",
                    help="cProfile case number CASE (0-based) instead of timing all")
    ap.add_argument("-n", type=int, default=20000,
                    help="launches per batch (with --count-calls: calls counted)")
    ap.add_argument("--cases", default=None, metavar="I,J,...",
                    help="time only these case numbers (0-based)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time by the process's CPU clock, not the wall clock (steadier on a "
                         "machine shared with other jobs: time spent descheduled is not counted)")
    ap.add_argument("--count-calls", action="store_true",
                    help="count the driver calls of each case per call instead of timing")
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
    counter = None
    if args.count_calls:
        from cuda.bindings import driver as real_cu

        counter = CountingCu(launcher.driver._cu_override or real_cu)
        launcher.driver = CudaDriver(TARGET, cu=counter)
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
            if counter is not None:
                print(f"  {name}: {driver_calls_per_call(counter, launcher, fn, args.n)}")
            else:
                clock = time.process_time if args.cpu_time else time.perf_counter
                print(f"  {per_call_us(fn, args.n, clock=clock):6.2f} us  {name}")


if __name__ == "__main__":
    main()
