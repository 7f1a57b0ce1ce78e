"""Hopper tensor maps (TMA descriptors) for host ``TensorDescriptor`` kernel arguments.

Why: ``cp.async.bulk.tensor`` moves a whole block between global and shared memory with one
instruction, zero-filling what lies outside the tensor, but needs a 128-byte ``CUtensorMap``
built by the driver (``cuTensorMapEncodeTiled``). :func:`tensor_map_args` computes the
encoder's arguments from the descriptor (a pure function, unit-tested without a GPU) or says
why TMA cannot move it; :class:`TensorMapCache` encodes each distinct map once and keeps it in
device memory, so a launch with a descriptor it has seen copies nothing (and a new one is
copied asynchronously on the launch's stream).

The box is one swizzle panel wide: a block whose rows are longer than 128 bytes is moved as
several boxes of ``128 / element bytes`` columns, and the swizzle (128, 64 or 32 bytes) is the
width of a panel -- exactly the layout wgmma reads (:mod:`naiad_nvidia.ir.wgmma_smem`). The map
lives in global memory, not in a ``.param`` (see docs/architecture.md, "Departures").
"""
from __future__ import annotations

import ctypes
import sys
import threading
from dataclasses import dataclass

from naiad.backend import element_sig
from naiad.errors import DeviceError

from .device_array import DeviceArray

#: element type spelling (naiad's signature names) -> CUtensorMapDataType member suffix
DATA_TYPES = {
    "fp16": "FLOAT16", "bf16": "BFLOAT16", "fp32": "FLOAT32", "fp64": "FLOAT64",
    "i8": "UINT8", "u8": "UINT8", "i1": "UINT8", "fp8e5": "UINT8", "fp8e4nv": "UINT8",
    "fp8e4b8": "UINT8", "fp8e5b16": "UINT8", "i16": "UINT16", "u16": "UINT16",
    "i32": "INT32", "u32": "UINT32", "i64": "INT64", "u64": "UINT64",
}
ELEMENT_BYTES = {"FLOAT16": 2, "BFLOAT16": 2, "FLOAT32": 4, "TFLOAT32": 4, "FLOAT64": 8,
                 "UINT8": 1, "UINT16": 2, "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8}
#: the widest swizzle (bytes), and the swizzle mode of each panel width
MAX_SWIZZLE = 128
SWIZZLES = {128: "128B", 64: "64B", 32: "32B"}
MAX_BOX = 256
MAX_STRIDE = 1 << 40
MAX_DIM = 1 << 32
#: the first architecture with TMA
TMA_ARCH = 90
#: bytes of one CUtensorMap, and the alignment a map built in global memory keeps
MAP_BYTES = 128


class NotTmaLegal(Exception):
    """Why a descriptor cannot be moved by TMA (the launch keeps the portable lowering)."""


@dataclass(frozen=True)
class TensorMapArgs:
    """``cuTensorMapEncodeTiled``'s arguments, dimensions innermost first as the driver wants
    them: ``global_strides`` are the byte strides of dimensions 1.. (dimension 0 is
    contiguous), ``box_dims`` the box (one swizzle panel of the block)."""

    data_type: str
    global_address: int
    global_dims: tuple
    global_strides: tuple
    box_dims: tuple
    element_strides: tuple
    swizzle: str
    oob_fill: str

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    def at(self, address: int) -> "TensorMapArgs":
        """The same map of a tensor at ``address`` (the caller checked its alignment)."""
        return TensorMapArgs(self.data_type, address, self.global_dims, self.global_strides,
                             self.box_dims, self.element_strides, self.swizzle, self.oob_fill)

    @property
    def form(self) -> tuple:
        """Every field but the address: maps of one form differ only in where they point."""
        return (self.data_type, self.global_dims, self.global_strides, self.box_dims,
                self.element_strides, self.swizzle, self.oob_fill)

    @property
    def box_bytes(self) -> int:
        n = ELEMENT_BYTES[self.data_type]
        for d in self.box_dims:
            n *= d
        return n


def panel_width(cols: int, elem_bytes: int) -> int:
    """Elements per row of one box: the block's row, at most one 128-byte swizzle panel."""
    return min(cols, MAX_SWIZZLE // elem_bytes)


def tensor_map_args(element: str, address: int, shape, strides, block_shape, padding: str = "zero",
                    round_f32_to_tf32: bool = False, arch: str = "sm_90") -> TensorMapArgs:
    """The encoder's arguments for a descriptor of ``element`` values (naiad's spelling) at
    ``address`` with ``shape``/``strides`` (elements, outermost first) moved in blocks of
    ``block_shape``; raises :class:`NotTmaLegal` with the reason where TMA cannot."""
    digits = "".join(ch for ch in arch if ch.isdigit())
    if not digits or int(digits) < TMA_ARCH:
        raise NotTmaLegal(f"TMA needs sm_90 or newer (target is {arch})")
    kind = DATA_TYPES.get(element)
    if kind is None:
        raise NotTmaLegal(f"TMA cannot move {element} elements")
    # ``round_f32_to_tf32`` is not encoded (TFLOAT32): a tf32 wgmma ignores the low mantissa
    # bits anyway, and a TMA store through the same map would round what it stores
    elem = ELEMENT_BYTES[kind]
    rank = len(shape)
    if not 1 <= rank <= 5 or len(strides) != rank or len(block_shape) != rank:
        raise NotTmaLegal(f"TMA moves tensors of rank 1 to 5 (shape {list(shape)}, strides "
                          f"{list(strides)}, block {list(block_shape)})")
    if address % 16:
        raise NotTmaLegal(f"the base address {address:#x} is not 16-byte aligned")
    if strides[-1] != 1:
        raise NotTmaLegal(f"the last dimension is not contiguous (strides {list(strides)})")
    byte_strides = [s * elem for s in strides[:-1]]
    if any(s % 16 or not 0 < s < MAX_STRIDE for s in byte_strides):
        raise NotTmaLegal(f"strides {list(strides)} x {elem} bytes are not positive multiples "
                          f"of 16 below 2^40")
    if any(not 0 < d <= MAX_DIM for d in shape):
        raise NotTmaLegal(f"shape {list(shape)} has a dimension outside 1..2^32")
    cols = block_shape[-1]
    panel = panel_width(cols, elem)
    if panel * elem % 16:
        raise NotTmaLegal(f"block rows of {cols} x {elem} bytes are not a multiple of 16 bytes")
    box = [panel] + list(reversed(block_shape[:-1]))
    if any(b > MAX_BOX for b in box):
        raise NotTmaLegal(f"block {list(block_shape)} has a dimension over {MAX_BOX} elements "
                          f"(the largest TMA box)")
    swizzle = SWIZZLES.get(panel * elem, "NONE")
    fill = "NAN_REQUEST_ZERO_FMA" if padding == "nan" else "NONE"
    return TensorMapArgs(kind, int(address), tuple(int(d) for d in reversed(shape)),
                         tuple(int(s) for s in reversed(byte_strides)), tuple(box),
                         (1,) * rank, swizzle, fill)


def encoder_arguments(cu, args: TensorMapArgs) -> tuple:
    """``cuTensorMapEncodeTiled``'s arguments for ``args`` in cuda-python's types, the
    address left out (at index 2, ``None``): the same for every map of one form."""
    return (getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{args.data_type}"),
            args.rank, None, [cu.cuuint64_t(d) for d in args.global_dims],
            [cu.cuuint64_t(s) for s in args.global_strides],
            [cu.cuuint32_t(b) for b in args.box_dims],
            [cu.cuuint32_t(e) for e in args.element_strides],
            cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{args.swizzle}"),
            cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            getattr(cu.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{args.oob_fill}"))


def encode(cu, args: TensorMapArgs, prepared: tuple | None = None) -> bytes:
    """The 128 bytes of the ``CUtensorMap`` for ``args`` (``cu``: ``cuda.bindings.driver``;
    ``prepared``: :func:`encoder_arguments` of a map of the same form, if at hand)."""
    a = prepared or encoder_arguments(cu, args)
    err, tmap = cu.cuTensorMapEncodeTiled(a[0], a[1], args.global_address, *a[3:])
    if err != cu.CUresult.CUDA_SUCCESS:
        raise DeviceError(f"cuTensorMapEncodeTiled failed ({err}) for {args}")
    return ctypes.string_at(tmap.getPtr(), MAP_BYTES)   # (its 16 opaque words, in order)


def element_of(descriptor) -> str:
    """naiad's spelling of a descriptor base's element type."""
    return element_sig(descriptor.base)


class MapArray(DeviceArray):
    """One map's 128 bytes inside a chunk of device memory the cache allocated for many; it
    keeps its chunk alive (a launch may still be queued with a map the cache has dropped)."""

    __slots__ = ("chunk",)

    def __init__(self, chunk: DeviceArray, offset: int):
        super().__init__(chunk._driver, chunk.ptr + offset, (MAP_BYTES,), "uint8", owner=False)
        self.chunk = chunk


class _Map:
    """One encoded map: its device memory, and while its copy may still be queued, the stream
    it was queued on (``stream``; None once it is known done) and, once another stream asked
    for the map, an event recorded on that stream after the copy."""

    __slots__ = ("array", "stream", "event")

    def __init__(self, array, stream, event=None):
        self.array, self.stream, self.event = array, stream, event


class TensorMapCache:
    """Encoded maps in device memory, one per distinct :class:`TensorMapArgs`; a map is never
    rewritten while a kernel may still read it.

    Nothing here waits for the device (a launch inside a timed window would wait for all
    queued work, an L2 flush included). A new map is staged in page-locked host memory and
    copied with ``cuMemcpyHtoDAsync`` on the stream of the launch that needs it, so the kernel
    queued after it on that stream reads it; a launch on another stream while the copy may be
    pending waits for it on the device (``cuStreamWaitEvent``). Bounded: past ``limit`` maps
    the cache starts afresh and *retires* its chunks (device memory and staging together)
    instead of synchronising and freeing them (``cuMemFree``/``cuMemFreeHost`` synchronise): a
    retired chunk is reused once no map of it is held any more (its launches are all queued
    then), an event recorded after that on every stream the cache served has completed, and
    every copy into it is done. So a steady stream of new maps (a tensor at a new address each
    call) allocates nothing after the first few chunks."""

    LIMIT = 4096
    #: device memory and page-locked staging are allocated in chunks of this many maps
    CHUNK_MAPS = 256

    def __init__(self, driver, limit: int | None = None, chunk_maps: int | None = None):
        self.driver = driver
        self.limit = limit or self.LIMIT
        self.chunk_maps = chunk_maps or self.CHUNK_MAPS
        self._maps: dict = {}
        self._chunks: list = []         # [device chunk, staging address] of the current maps
        self._retired: list = []        # [device chunk, staging address, events or None]
        self._free_slots: list = []     # (device chunk, offset, host address) of unused slots
        self._streams: set = set()      # every stream a map was made or ordered for
        self._prepared: dict = {}       # a map's form -> its encoder arguments (converted)
        self.encoded = 0                # maps encoded so far (misses), for benchmarks to read
        self.allocated_chunks = 0
        self._lock = threading.Lock()

    def device_map(self, args: TensorMapArgs, stream=0):
        """The device memory (DeviceArray) of the map of ``args``, usable by work queued on
        ``stream`` from now on."""
        found = self._maps.get(args)
        if found is None:
            return self._new_map(args, stream)
        if found.stream is not None and found.stream != stream:
            self._order_after_copy(found, stream)
        return found.array

    def _order_after_copy(self, found: _Map, stream) -> None:
        """``stream`` asks for a map whose copy was queued on another: the first time an
        event is recorded on the copy's stream (after the copy, and whatever was queued
        there since); a stream waits for it on the device until it is known complete."""
        d = self.driver
        cu = d.cu
        self._streams.add(stream)
        if found.event is None:
            event = d.call("cuEventCreate", cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
            if cu.cuEventRecord(event, found.stream)[0] != cu.CUresult.CUDA_SUCCESS:
                cu.cuEventDestroy(event)    # the copy's stream is gone (destroyed by its
                d.synchronize()             # owner): only a full wait says the copy is done
                found.stream = None
                return
            found.event = event
        elif cu.cuEventQuery(found.event)[0] == cu.CUresult.CUDA_SUCCESS:
            cu.cuEventDestroy(found.event)      # copied: every stream may read it now
            found.event = found.stream = None
            return
        d.call("cuStreamWaitEvent", stream, found.event, 0)

    def _new_map(self, args: TensorMapArgs, stream):
        d = self.driver.ensure()
        form = args.form
        prepared = self._prepared.get(form)
        if prepared is None:
            if len(self._prepared) >= self.limit:
                self._prepared.clear()
            prepared = self._prepared[form] = encoder_arguments(d.cu, args)
        raw = encode(d.cu, args, prepared)
        self.encoded += 1
        with self._lock:
            found = self._maps.get(args)
            if found is not None:
                return found.array
            if len(self._maps) >= self.limit:
                self._start_afresh()
            self._streams.add(stream)
            chunk, offset, host = self._slot()
            ctypes.memmove(host, raw, MAP_BYTES)
            array = MapArray(chunk, offset)
            d.call("cuMemcpyHtoDAsync", array.ptr, host, MAP_BYTES, stream)
            self._maps[args] = _Map(array, stream)
        return array

    def _slot(self):
        """A 128-byte device slot (in a chunk, offset) and its page-locked staging slot; never
        reused while a map in it may be read (a staging slot is read whenever its copy's stream
        gets there, a device slot by every kernel given its map)."""
        if not self._free_slots:
            chunk, host = self._reusable_chunk() or self._new_chunk()
            self._chunks.append([chunk, host])
            self._free_slots = [(chunk, i * MAP_BYTES, host + i * MAP_BYTES)
                                for i in range(self.chunk_maps - 1, -1, -1)]
        return self._free_slots.pop()

    def _new_chunk(self):
        d = self.driver
        nbytes = MAP_BYTES * self.chunk_maps
        self.allocated_chunks += 1
        chunk = DeviceArray(d, d.alloc(nbytes), (nbytes,), "uint8")
        return chunk, int(d.call("cuMemAllocHost", nbytes))

    def _start_afresh(self) -> None:
        """Past the limit: forget every map and retire their chunks (see the class docstring)."""
        cu = self.driver.cu
        for found in self._maps.values():
            if found.event is not None:     # (released by the driver once it has completed)
                cu.cuEventDestroy(found.event)
        self._maps.clear()
        self._retired += [[chunk, host, None] for chunk, host in self._chunks]
        self._chunks.clear()
        self._free_slots = []

    def _events_on_every_stream(self):
        """An event recorded now on each stream the cache served, or None where one could not
        be recorded (a stream the caller destroyed: it is dropped, and asked again later)."""
        d = self.driver
        cu = d.cu
        events = []
        for stream in list(self._streams):
            event = d.call("cuEventCreate", cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
            events.append(event)
            if cu.cuEventRecord(event, stream)[0] != cu.CUresult.CUDA_SUCCESS:
                self._streams.discard(stream)
                for e in events:
                    cu.cuEventDestroy(e)
                return None
        return events

    def _reusable_chunk(self):
        """A retired chunk no map is held of and whose events have completed, or None. One
        pass, no waiting: a chunk whose maps are all dropped gets its events now (after every
        launch that could read it), a chunk with events is reusable once they are done."""
        cu = self.driver.cu
        for entry in self._retired:
            chunk, host, events = entry
            if events is None:
                # every MapArray of the chunk holds it (``.chunk``); beyond those, only the
                # entry, this frame and the call's argument do (tested with the fake driver)
                if sys.getrefcount(chunk) > 3:
                    continue
                events = self._events_on_every_stream()
                if events is None:
                    continue
                entry[2] = events
            if all(cu.cuEventQuery(e)[0] == cu.CUresult.CUDA_SUCCESS for e in events):
                for e in events:
                    cu.cuEventDestroy(e)
                self._retired.remove(entry)
                return chunk, host
        return None


# -- maps built in the kernel (tl.make_tensor_descriptor; see passes/device_tensor_maps.py) -----
#: ``tensormap.replace ... .elemtype`` codes (PTX ISA table), by CUtensorMapDataType suffix
PTX_ELEMTYPES = {"UINT8": 0, "UINT16": 1, "UINT32": 2, "INT32": 3, "UINT64": 4, "INT64": 5,
                 "FLOAT16": 6, "FLOAT32": 7, "FLOAT64": 9, "BFLOAT16": 10}
#: ``.swizzle_mode`` and ``.fill_mode`` codes
PTX_SWIZZLES = {"NONE": 0, "32B": 1, "64B": 2, "128B": 3}
PTX_FILLS = {"NONE": 0, "NAN_REQUEST_ZERO_FMA": 1}


@dataclass(frozen=True)
class DeviceMapFields:
    """The compile-time fields of a tensor map a kernel writes with ``tensormap.replace``
    (dimensions innermost first, as the map holds them); the base address, global dims and
    strides are run-time values. ``rank`` is the field's value: the tensor's rank minus one."""

    elemtype: int
    rank: int
    box_dims: tuple
    element_strides: tuple
    swizzle: int
    fill: int
    elem_bytes: int


def device_map_fields(element: str, block_shape, padding: str = "zero",
                      arch: str = "sm_90") -> DeviceMapFields:
    """The fields of the map of an in-kernel descriptor of ``element`` values moved in blocks
    of ``block_shape`` -- the same box and swizzle a host descriptor's map gets
    (:func:`tensor_map_args`, asked with a stand-in tensor the block fits in); raises
    :class:`NotTmaLegal` where TMA cannot move such blocks."""
    rank = len(block_shape)
    stand_in = tensor_map_args(element, 0, list(block_shape), [16] * (rank - 1) + [1],
                               block_shape, padding, arch=arch)
    if stand_in.data_type not in PTX_ELEMTYPES:
        raise NotTmaLegal(f"no tensormap.replace element type for {element}")
    return DeviceMapFields(PTX_ELEMTYPES[stand_in.data_type], rank - 1, stand_in.box_dims,
                           stand_in.element_strides, PTX_SWIZZLES[stand_in.swizzle],
                           PTX_FILLS[stand_in.oob_fill], ELEMENT_BYTES[stand_in.data_type])
