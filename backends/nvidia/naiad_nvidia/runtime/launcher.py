"""Loading cubins and launching kernels through the CUDA driver, with a cheap warm path.

Why the packer: ``cuLaunchKernel`` wants an array of pointers to argument values. We build, once
per (kernel, argument types), a ``struct.Struct`` layout, a fixed buffer and the pointer array
into it; a launch then is one ``pack_into`` plus one driver call.

Why ``bind_launch``: the runtime asks once per compiled kernel for a launch function with
everything fixed per kernel already resolved (the packer, the block size and shared-memory checks,
the driver entry point); a warm launch then does the stream choice (two C calls: the current
stream's raw handle, then its stream object, made once per handle), the packing and the driver
call only. Argument buffers come from a small free list (taken with ``list.pop``, given back with
``append``; both atomic under the GIL), so threads launching the same kernel never share a buffer
while cuda-python has released the GIL inside the driver call.

``pointer_getter(type)`` gives the runtime, per array type, the cheapest way to read a device
address (``DeviceArray.ptr`` through ``operator.attrgetter``; torch's ``data_ptr()`` after the
``is_cuda`` check).
"""
from __future__ import annotations

import ctypes
import functools
import operator
import struct
import sys
import threading
import weakref

import numpy as np

from naiad.backend import ArgumentError
from naiad.errors import DeviceError
from naiad.plugins import BinaryResult, Launcher, Target

from .device_array import DeviceArray
from .driver import DEFAULT_SHARED_LIMIT, CudaDriver, get_driver
from .tensor_map import NotTmaLegal, TensorMapCache, element_of, tensor_map_args

#: CU_SHAREDMEM_CARVEOUT_MAX_SHARED: percent of the unified L1/shared array given to shared
_CARVEOUT_MAX_SHARED = 100


def _bf16_bits(value) -> int:
    """Python float -> bfloat16 bits, round to nearest even (NaN stays NaN)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


#: naiad scalar type -> (struct code, size, converter or None)
_SCALARS = {
    "i1": ("?", 1, None), "i8": ("b", 1, None), "u8": ("B", 1, None),
    "i16": ("h", 2, None), "u16": ("H", 2, None), "i32": ("i", 4, None),
    "u32": ("I", 4, None), "i64": ("q", 8, None), "u64": ("Q", 8, None),
    "fp16": ("e", 2, None), "bf16": ("H", 2, _bf16_bits), "fp32": ("f", 4, None),
    "fp64": ("d", 8, None),
}
_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "bool": "i1", "int1": "i1"}

_HOST_DTYPES = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "i8": np.int8,
                "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
                "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "i1": np.bool_}


def _arg_code(ty: str):
    ty = str(ty)
    if ty.startswith("*"):
        return "Q", 8, None
    ty = _ALIASES.get(ty, ty)
    try:
        return _SCALARS[ty]
    except KeyError:
        raise DeviceError(f"unsupported kernel argument type {ty!r}") from None


def _convert(converters, args) -> list:
    """``args`` with the values that need it converted (bf16 scalars to their bits)."""
    args = list(args)
    for i, fn in converters:
        args[i] = fn(args[i])
    return args


class ArgPacker:
    """Argument buffer + pointer array for one kernel signature, built once."""

    __slots__ = ("arg_types", "struct", "offsets", "buf", "ptrs", "params", "converters",
                 "lock", "spare")

    def __init__(self, arg_types):
        self.arg_types = tuple(arg_types)
        fmt, offsets, off, conv = "<", [], 0, []
        for i, ty in enumerate(self.arg_types):
            code, size, fn = _arg_code(ty)
            pad = -off % size
            fmt += "x" * pad
            off += pad
            offsets.append(off)
            fmt += code
            off += size
            if fn is not None:
                conv.append((i, fn))
        self.struct = struct.Struct(fmt)
        self.offsets = tuple(offsets)
        self.buf, self.ptrs, self.params = self.new_slot()
        self.converters = tuple(conv)
        self.lock = threading.Lock()
        # slots (buffer, pointer array, void** address) free for a launch: a launch pops one
        # (or makes a new one) and appends it back once the driver call has returned
        self.spare: list = []

    def new_slot(self):
        """A fresh argument buffer, its pointer array and the array's address (0: no args)."""
        buf = ctypes.create_string_buffer(max(self.struct.size, 8))
        base = ctypes.addressof(buf)
        ptrs = (ctypes.c_void_p * max(len(self.offsets), 1))(*[base + o for o in self.offsets])
        return buf, ptrs, ctypes.addressof(ptrs) if self.offsets else 0

    def pack(self, args) -> int:
        """Write ``args`` into the buffer; returns the ``void**`` address for cuLaunchKernel.

        The caller holds ``self.lock`` until the launch call has returned.
        """
        if self.converters:
            args = _convert(self.converters, args)
        self.struct.pack_into(self.buf, 0, *args)
        return self.params


class KernelHandle:
    """A loaded kernel: module, function and what a launch must check."""

    __slots__ = ("name", "target", "module", "function", "static_shared", "max_threads",
                 "dyn_shared_limit", "metadata", "packers", "launchers", "_finalizer",
                 "__weakref__")

    def __init__(self, name, target, module, function, static_shared, max_threads, metadata,
                 driver):
        self.name, self.target = name, target
        self.module, self.function = module, function
        self.static_shared = static_shared
        self.max_threads = max_threads
        # Without the opt-in attribute, static + dynamic shared memory must fit in 48 KiB.
        self.dyn_shared_limit = max(DEFAULT_SHARED_LIMIT - static_shared, 0)
        self.metadata = metadata
        self.packers: dict[tuple, ArgPacker] = {}
        self.launchers: dict[tuple, object] = {}   # (arg types, warps, shared) -> go
        self._finalizer = weakref.finalize(self, driver.unload_module, module)

    def resources(self) -> str:
        m = self.metadata
        return (f"{m.get('registers', '?')} registers/thread, {m.get('spill_bytes', 0)} B spilled, "
                f"{self.static_shared} B static shared, stack {m.get('stack', 0)} B")


def _torch_pointer_reader(target):
    """``data_ptr()`` of a CUDA torch tensor; a clear error for a CPU one."""
    def torch_pointer(t):
        if t.is_cuda:
            return t.data_ptr()
        raise DeviceError(f"a torch tensor on {getattr(t, 'device', 'cpu')} was passed to a "
                          f"kernel for {target}; move it to the GPU first (tensor.cuda())")

    return torch_pointer


_DEVICE_ARRAY_POINTER = operator.attrgetter("ptr")


def _is_torch_type(t) -> bool:
    return getattr(t, "__module__", "").startswith("torch") and hasattr(t, "data_ptr")


def _no_stream() -> int:
    return 0


def _stream_handle(stream) -> int:
    """int handle of a CUstream, torch.cuda.Stream, ``__cuda_stream__`` object or int."""
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream)
    return int(stream)


class NvidiaLauncher(Launcher):
    """Device memory and kernel launches for one ``nvidia:<arch>`` target."""

    def __init__(self, target: Target, driver: CudaDriver | None = None):
        self.target = target
        self.driver = driver or get_driver(str(target))
        self._torch_seen = False
        self._launch_fn = None
        self._torch_pointer = _torch_pointer_reader(target)
        self._stream_type = None   # cu.CUstream where the bindings have it (else ints are passed)
        # the raw handle of the stream a launch without stream= runs on: a C-level call, 0
        # (the legacy default stream) until torch tensors were passed, then torch's current
        # stream; and each raw handle's stream object, made once (see _stream_for)
        self._raw_stream = int
        self._streams: dict = {}
        self._flush_buffer = None       # the EventTimer's L2-flush buffer, allocated once
        self._tensor_maps = None        # TensorMapCache, made on the first descriptor launch
        self._tensor_map_answers = {}   # cheap descriptor key -> TensorMapArgs or reason

    # -- driver access ----------------------------------------------------------------------
    def _ready(self) -> CudaDriver:
        d = self.driver
        if d.context is None:
            d.ensure()
        if self._launch_fn is None:
            self._stream_type = getattr(d.cu, "CUstream", None)
            self._launch_fn = d.cu.cuLaunchKernel
        return d

    def _check_arch(self, d: CudaDriver, kernel_name: str, arch: str) -> None:
        """SASS runs on the same major with an equal or newer minor (sm_80 -> sm_86/89)."""
        digits = "".join(ch for ch in arch if ch.isdigit())
        if len(digits) < 2:
            return
        major, minor = int(digits[:-1]), int(digits[-1])
        dmaj, dmin = d.compute_capability
        if dmaj != major or dmin < minor or (arch.endswith("a") and dmin != minor):
            raise DeviceError(
                f"kernel {kernel_name!r} was compiled for nvidia:{arch}, which cannot run on "
                f"device {d.ordinal} ({d.name}, {d.arch}); compile for target nvidia:{d.arch}")

    # -- loading ----------------------------------------------------------------------------
    def load(self, result: BinaryResult, kernel_name: str) -> KernelHandle:
        d = self._ready()
        image = result.stages.get(result.binary_stage)
        if result.binary_stage != "cubin" or not isinstance(image, (bytes, bytearray)):
            raise DeviceError(f"nvidia launcher loads a 'cubin' stage, got "
                              f"{result.binary_stage!r}")
        arch = result.metadata.get("arch", self.target.arch)
        self._check_arch(d, kernel_name, arch)
        try:
            module = d.load_module(bytes(image))
        except DeviceError as e:
            raise DeviceError(f"loading kernel {kernel_name!r} (nvidia:{arch}) on {d.name} "
                              f"({d.arch}) failed: {e}") from None
        try:
            function = d.get_function(module, kernel_name)
        except DeviceError as e:
            d.unload_module(module)
            raise DeviceError(f"kernel {kernel_name!r} not found in its cubin: {e}") from None
        fa = d.cu.CUfunction_attribute
        static_shared = d.function_attribute(function, fa.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        max_threads = d.function_attribute(function, fa.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        meta = dict(result.metadata)
        meta.setdefault("registers",
                        d.function_attribute(function, fa.CU_FUNC_ATTRIBUTE_NUM_REGS))
        if static_shared > d.max_shared_optin:
            raise DeviceError(
                f"kernel {kernel_name!r} declares {static_shared} B of static shared memory; "
                f"{d.name} allows at most {d.max_shared_optin} B per program")
        return KernelHandle(kernel_name, str(self.target), module, function, static_shared,
                            max_threads, meta, d)

    # -- launching --------------------------------------------------------------------------
    def launch(self, handle: KernelHandle, grid, num_warps: int, shared_bytes: int, args,
               arg_types, stream=None) -> None:
        """Launch ``handle``; the launch function is bound once per (argument types, warps,
        shared bytes) and kept on the handle."""
        go = handle.launchers.get((arg_types, num_warps, shared_bytes)) \
            if type(arg_types) is tuple else None
        if go is None:   # first launch of this shape (or arg_types given as a list)
            go = self.bind_launch(handle, num_warps, shared_bytes, arg_types)
            if len(handle.launchers) < 64:
                handle.launchers[(tuple(arg_types), num_warps, shared_bytes)] = go
        if type(grid) is not tuple or len(grid) != 3:
            grid = (tuple(grid) + (1, 1, 1))[:3] if not isinstance(grid, int) else (grid, 1, 1)
        go(grid, args, stream)

    def bind_launch(self, handle: KernelHandle, num_warps: int, shared_bytes: int, arg_types):
        """``go(grid3, args, stream=None)``: launches ``handle`` with these fixed launch
        parameters. Raises DeviceError now for a block or shared size the kernel cannot use."""
        d = self._ready()
        packer = self._packer(handle, arg_types)
        if shared_bytes > handle.dyn_shared_limit:
            self._configure_shared(handle, shared_bytes)
        block = num_warps * 32
        if block > handle.max_threads:
            raise DeviceError(
                f"kernel {handle.name!r} on {handle.target} can run at most "
                f"{handle.max_threads} threads per program ({handle.resources()}); "
                f"num_warps={num_warps} asks for {block}")
        launch = self._launch_fn
        function = handle.function
        pack_into = packer.struct.pack_into
        take, give_back = packer.spare.pop, packer.spare.append
        new_slot = packer.new_slot
        converters = packer.converters
        streams_get, stream_for = self._streams.get, self._stream_for
        coerce = self._coerce_args
        failed = self._launch_failed

        def go(grid, args, stream=None):
            if stream is None:   # two C calls; a Python call only for a new stream
                raw = self._raw_stream()
                stream = streams_get(raw)
                if stream is None:
                    stream = stream_for(raw)
            elif type(stream) is not int:
                stream = _stream_handle(stream)
            try:
                slot = take()
            except IndexError:   # first launch, or other threads hold every buffer
                slot = new_slot()
            try:
                pack_into(slot[0], 0, *(_convert(converters, args) if converters else args))
            except (struct.error, TypeError, ValueError, OverflowError):
                args = coerce(handle, packer, args)
                pack_into(slot[0], 0, *(_convert(converters, args) if converters else args))
            gx, gy, gz = grid
            err = launch(function, gx, gy, gz, block, 1, 1, shared_bytes, stream, slot[2], 0)[0]
            if err:   # retries once with the same buffer, or raises
                failed(err, handle, (gx, gy, gz), num_warps, shared_bytes, stream, slot[2])
            give_back(slot)    # (a buffer lost to an exception is simply garbage-collected)

        return go

    def _stream_for(self, raw: int):
        """The driver's stream object for raw handle ``raw`` (a CUstream where the bindings
        have the type), made once: launches pass the same object while the stream stays."""
        obj = raw if self._stream_type is None else self._stream_type(raw)
        if len(self._streams) >= 64:   # streams made and dropped by the caller: start over
            self._streams.clear()
        self._streams[raw] = obj
        return obj

    def _see_torch(self) -> None:
        """Torch tensors were passed: launches without ``stream=`` now run on torch's current
        stream, so kernels order with torch's work."""
        if not self._torch_seen:
            self._raw_stream = self._first_torch_stream
            self._torch_seen = True

    def _first_torch_stream(self) -> int:
        """The first ask for torch's current stream (at a launch, once torch is set up):
        finds the cheapest query and asks it from then on."""
        query = self._raw_stream = self._find_torch_stream_query()
        return query()

    def _packer(self, handle: KernelHandle, arg_types) -> ArgPacker:
        key = tuple(arg_types)
        packer = handle.packers.get(key)
        if packer is None:
            packer = handle.packers[key] = ArgPacker(key)
        return packer

    def _coerce_args(self, handle, packer: ArgPacker, args):
        """Slow path: accept arrays for pointers and name the argument that does not fit."""
        args = list(args)
        if len(args) != len(packer.arg_types):
            raise DeviceError(f"kernel {handle.name!r} takes {len(packer.arg_types)} arguments "
                              f"({', '.join(packer.arg_types)}), got {len(args)}")
        for i, (value, ty) in enumerate(zip(args, packer.arg_types)):
            if str(ty).startswith("*") and not isinstance(value, int):
                ptr = self.data_pointer(value)
                if ptr is None:
                    raise DeviceError(f"argument {i} of kernel {handle.name!r} ({ty}) must be a "
                                      f"device pointer or array, got {type(value).__name__}")
                args[i] = ptr
                continue
            code, _, fn = _arg_code(ty)
            try:
                struct.pack("<" + code, fn(value) if fn else value)
            except (struct.error, TypeError, OverflowError) as e:
                raise DeviceError(f"argument {i} of kernel {handle.name!r} has type {ty} but "
                                  f"value {value!r} does not fit ({e})") from None
        return args

    def _configure_shared(self, handle: KernelHandle, nbytes: int) -> None:
        d = self._ready()
        total = handle.static_shared + nbytes
        if total > d.max_shared_optin:
            raise DeviceError(
                f"kernel {handle.name!r} needs {total} B of shared memory per program "
                f"({handle.static_shared} B static + {nbytes} B dynamic) but {d.name} "
                f"({handle.target}) allows at most {d.max_shared_optin} B")
        fa = d.cu.CUfunction_attribute
        d.call("cuFuncSetAttribute", handle.function,
               fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes))
        # A kernel this hungry for shared memory wants the SM's whole L1/shared split on the
        # shared side (Triton asks the same, CU_FUNC_CACHE_PREFER_SHARED): otherwise the
        # driver may pick a smaller carveout and fit fewer programs per SM than the occupancy
        # the caller computed from max_shared_mem (tutorial 02 sizes its persistent grid so).
        d.call("cuFuncSetAttribute", handle.function,
               fa.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, _CARVEOUT_MAX_SHARED)
        handle.dyn_shared_limit = nbytes

    def _launch_failed(self, err, handle, grid, num_warps, shared_bytes, stream, params):
        d = self.driver
        cu = d.cu
        if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            # First launch from a new thread: bind the primary context and retry once.
            d.make_current()
            err = self._launch_fn(handle.function, *grid, num_warps * 32, 1, 1, shared_bytes,
                                  stream, params, 0)[0]
            if not err:
                return
        raise DeviceError(
            f"launching kernel {handle.name!r} on {handle.target} ({d.name}) failed: "
            f"{d.error_text(err)}; grid={tuple(grid)}, block=({num_warps * 32}, 1, 1) "
            f"[{num_warps} warps], dynamic shared={shared_bytes} B, stream={stream}; "
            f"resources: {handle.resources()}")

    # -- streams ----------------------------------------------------------------------------
    def _find_torch_stream_query(self):
        """The cheapest way to ask torch for its current raw stream (found once torch is in)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return _no_stream
        ordinal = self.driver.ordinal
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        if raw is not None:
            query = functools.partial(raw, ordinal)
        else:
            def query():
                return int(torch.cuda.current_stream(ordinal).cuda_stream)
        return query

    # -- tensor descriptors -------------------------------------------------------------------
    def current_stream(self):
        """The stream a launch without ``stream=`` runs on (what the bound launch picks)."""
        if self._launch_fn is None:
            self._ready()
        raw = self._raw_stream()
        stream = self._streams.get(raw)
        return stream if stream is not None else self._stream_for(raw)

    def tensor_map(self, descriptor, stream=None):
        """``(device map, "")`` for a host ``TensorDescriptor`` TMA can move on this target
        (its ``CUtensorMap`` in device memory, see :mod:`.tensor_map`), ``(None, reason)``
        otherwise: the kernel then keeps the portable lowering and the reason becomes a
        performance remark at each access. ``stream``: the one the kernel will run on (a new
        map is copied there without waiting for the device; None: the current stream)."""
        # a descriptor with the fields of one seen before (the tutorials build new descriptors
        # of the same tensors per call, and of new tensors of the same shape) reuses its
        # encoder arguments without re-deriving them: only the address is new
        base = descriptor.base
        address = self.data_pointer(base)
        quick = (type(base), getattr(base, "dtype", None), tuple(descriptor.shape),
                 tuple(descriptor.strides), tuple(descriptor.block_shape),
                 getattr(descriptor, "padding", "zero"),
                 getattr(descriptor, "round_f32_to_tf32", False))
        form = self._tensor_map_answers.get(quick)
        if form is None:
            form = self._tensor_map_args(descriptor, 0)
            if len(self._tensor_map_answers) >= TensorMapCache.LIMIT:
                self._tensor_map_answers.clear()
            self._tensor_map_answers[quick] = form
        if isinstance(form, str):
            return None, form
        if address is None:
            return None, f"its base ({type(base).__name__}) has no device address"
        if address % 16:
            return None, f"the base address {address:#x} is not 16-byte aligned"
        args = form.at(address)
        if self._tensor_maps is None:
            self._tensor_maps = TensorMapCache(self._ready())
        if stream is None:
            stream = self.current_stream()
        elif type(stream) is not int and type(stream) is not self._stream_type:
            stream = _stream_handle(stream)    # a torch.cuda.Stream, __cuda_stream__ object
        return self._tensor_maps.device_map(args, stream), ""

    def _tensor_map_args(self, descriptor, address):
        """The encoder's arguments for ``descriptor``, or the reason TMA cannot move it."""
        try:
            element = element_of(descriptor)
            return tensor_map_args(element, address, descriptor.shape, descriptor.strides,
                                   descriptor.block_shape, getattr(descriptor, "padding", "zero"),
                                   getattr(descriptor, "round_f32_to_tf32", False),
                                   self.target.arch)
        except (NotTmaLegal, ArgumentError) as e:
            return str(e)

    # -- queries ----------------------------------------------------------------------------
    def device_properties(self, device: int = 0) -> dict:
        """Triton's device-property keys for this launcher's device (``naiad.runtime.driver``)."""
        d = self._ready()
        if int(device) != d.ordinal:
            raise DeviceError(f"this launcher drives device {d.ordinal}, not {device}")
        a = d.cu.CUdevice_attribute
        q = d.device_attribute
        return {
            "max_shared_mem": d.max_shared_optin,
            "max_num_regs": q(a.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
            "multiprocessor_count": d.sm_count,
            "warpSize": q(a.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
            "sm_clock_rate": q(a.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            "mem_clock_rate": q(a.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            "mem_bus_width": q(a.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            "max_threads_per_sm": q(a.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        }

    # -- waiting and timing ----------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait until the device has finished all launched work."""
        self._ready().synchronize()

    def event_timer(self):
        """A :class:`~naiad_nvidia.runtime.event_timer.EventTimer`: CUDA events on the launch stream
        and an L2 flush, for ``naiad.testing.do_bench``."""
        from .event_timer import EventTimer

        return EventTimer(self)

    # -- memory -----------------------------------------------------------------------------
    def to_device(self, array) -> DeviceArray:
        """Copy a host array to a new DeviceArray."""
        if isinstance(array, DeviceArray):
            return array
        host = np.ascontiguousarray(array)
        d = self._ready()
        out = DeviceArray(d, d.alloc(host.nbytes), host.shape, host.dtype)
        d.copy_to_device(out.ptr, host)
        return out

    def empty(self, shape, dtype) -> DeviceArray:
        """An uninitialised DeviceArray (``dtype``: numpy dtype or naiad name like ``fp32``)."""
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if isinstance(dtype, str):
            name = _ALIASES.get(dtype, dtype)
            if name == "bf16":
                import ml_dtypes

                dtype = ml_dtypes.bfloat16
            else:
                dtype = _HOST_DTYPES.get(name, dtype)
        dt = np.dtype(dtype)
        d = self._ready()
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        return DeviceArray(d, d.alloc(nbytes), shape, dt)

    def pointer_getter(self, array_type):
        """``function(obj) -> device address`` for arrays of ``array_type``, or None when this
        launcher has no cheaper way than :meth:`data_pointer` (the runtime asks once per type)."""
        if array_type is DeviceArray or issubclass(array_type, DeviceArray):
            return _DEVICE_ARRAY_POINTER
        if _is_torch_type(array_type):
            self._see_torch()   # launches now run on torch's current stream
            return self._torch_pointer
        return None

    def data_pointer(self, obj) -> int | None:
        """Device address of a DeviceArray, CUDA torch tensor or ``__cuda_array_interface__``
        object; raises for host arrays/tensors; None for anything else."""
        if isinstance(obj, DeviceArray):
            return obj.ptr
        mod = type(obj).__module__
        if mod.startswith("torch") and hasattr(obj, "data_ptr"):
            if not getattr(obj, "is_cuda", False):
                raise DeviceError(
                    f"a torch tensor on {getattr(obj, 'device', 'cpu')} was passed to a kernel "
                    f"for {self.target}; move it to the GPU first (tensor.cuda())")
            self._see_torch()
            return obj.data_ptr()
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return int(cai["data"][0])
        if isinstance(obj, np.ndarray):
            raise DeviceError(
                f"argument of shape {obj.shape} and dtype {obj.dtype} is a host numpy array; "
                f"use naiad.to_device(...) to copy it to the GPU for {self.target}")
        return None
