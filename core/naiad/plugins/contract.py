"""Plain data and interfaces that cross the core/backend boundary.

Backends return these from their hooks (see :mod:`naiad.plugins.hookspecs`). The core never imports
a backend module; it only talks to these objects.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class TargetSpec:
    """What one plugin provides: a backend name and its architectures.

    ``warp_sizes`` maps every arch to its warp (wavefront) size. ``detect_arch`` returns the arch of
    the device present here, or None when there is none; it must be cheap and must never raise.
    ``compiled`` is False for interpreters (the reference executor), which have no LLVM stages.
    """

    backend: str
    archs: tuple[str, ...]
    warp_sizes: Mapping[str, int]
    default_arch: str
    detect_arch: Callable[[], str | None] = lambda: None
    compiled: bool = True
    description: str = ""

    def target(self, arch: str | None = None) -> "Target":
        arch = arch or self.default_arch
        return Target(self.backend, arch, self.warp_sizes[arch])


@dataclass(frozen=True)
class Target:
    """A concrete compilation target, e.g. ``nvidia:sm_90`` (warp 32) or ``amd:gfx942`` (wave 64)."""

    backend: str
    arch: str
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


@dataclass
class BinaryResult:
    """What a backend's codegen returns for one kernel.

    ``stages`` holds every named artifact in pipeline order (``{"ptx": str, "cubin": bytes}`` or
    ``{"amdgcn": str, "hsaco": bytes}``); ``binary_stage`` names the one the launcher loads;
    ``metadata`` is the resource report (``registers``, ``spills``, ``shared``, ... as ints).
    """

    stages: dict[str, Any]
    binary_stage: str
    metadata: dict[str, Any] = field(default_factory=dict)


class TargetInfo(abc.ABC):
    """What the vendor-neutral LLVM lowering asks of a backend.

    Every method that emits code takes an ``llvmlite.ir.IRBuilder`` positioned where the code goes
    and returns an ``llvmlite.ir.Value``. Nothing in core may assume a warp size, an intrinsic or an
    address space: it asks here.
    """

    #: LLVM target triple and data layout of the generated module.
    triple: str = ""
    data_layout: str = ""
    #: lanes per warp / wavefront.
    warp_size: int = 32
    #: address spaces: global memory pointers and shared (LDS) memory.
    global_address_space: int = 1
    shared_address_space: int = 3
    #: LLVM calling convention for kernels, e.g. "ptx_kernel" or "amdgpu_kernel".
    kernel_calling_convention: str = ""

    @abc.abstractmethod
    def thread_id(self, builder, axis: int = 0):
        """i32 index of the thread within its block (program) along ``axis``."""

    @abc.abstractmethod
    def program_id(self, builder, axis: int):
        """i32 index of the block (program) in the grid along ``axis``."""

    @abc.abstractmethod
    def num_programs(self, builder, axis: int):
        """i32 number of programs in the grid along ``axis``."""

    @abc.abstractmethod
    def barrier(self, builder) -> None:
        """Block-wide barrier that also orders shared-memory accesses."""

    @abc.abstractmethod
    def shuffle_xor(self, builder, value, lane_mask: int):
        """Value (i32 or f32) of lane ``lane ^ lane_mask`` in the same warp."""

    @abc.abstractmethod
    def shuffle_idx(self, builder, value, src_lane):
        """Value (i32 or f32) held by lane ``src_lane`` (an i32 llvm value) in the same warp."""

    @abc.abstractmethod
    def math(self, builder, name: str, args: Sequence, elem: str):
        """Emit the math function ``name`` (``exp``, ``exp2``, ``log``, ``log2``, ``sqrt``,
        ``rsqrt``, ``sin``, ``cos``, ``erf``, ``floor``, ``ceil``, ``abs``, ``fma``, ``umulhi``)
        on scalar LLVM ``args`` of naiad element type ``elem`` (``"f32"``, ``"f64"``, ...)."""

    def lane_id(self, builder):
        """i32 lane index in the warp; default derives it from the thread id."""
        from llvmlite import ir

        tid = self.thread_id(builder, 0)
        return builder.urem(tid, ir.Constant(ir.IntType(32), self.warp_size))

    # -- optional, with portable defaults (added by the GPU layer) -------------------------------
    #: LLVM ``syncscope`` of atomics (e.g. ``"agent"`` on AMD, ``"device"`` on NVIDIA);
    #: None keeps LLVM's default (system) scope.
    atomic_scope: str | None = None

    def op_lowering(self, name: str):
        """The lowering of a GPU-IR op the core does not know, or None.

        A backend that adds its own ops (registered with ``naiad.ir.ops.register_op``, placed by
        one of its ``naiad_lowering_passes``, e.g. a matrix instruction on its own layouts)
        returns a callable ``fn(kl, op) -> None`` for them. ``kl`` is the core's
        ``naiad.gpu.lower.context.KernelLowering``: ``kl.b`` is the IRBuilder, ``kl.get(value)``
        the list of LLVM values of an operand (one per register of its layout, in register
        order), ``kl.linear(value)`` its linear layout, and ``kl.set(result, values)`` stores
        the result's registers. Core ops are always lowered by the core."""
        return None

    #: shared memory one program may use, in bytes; None leaves it unchecked. Checked at
    #: compile time by ``naiad.gpu.matrix.budget.check_shared_memory`` when the backend runs it.
    shared_memory_bytes: int | None = None

    def matrix_multiply(self, builder, instruction, a: list, b: list, c: list) -> list:
        """Emit one issue of ``instruction`` (a ``naiad.gpu.matrix.MatrixInstruction`` from the
        backend's table): ``a``, ``b``, ``c`` are this lane's fragment elements in the order of
        the instruction's lane maps; return the result fragment in the order of ``c``."""
        raise NotImplementedError(f"{type(self).__name__} has no matrix instructions")

    def masked_load(self, builder, ptr, ty, pred, align: int):
        """Load a ``ty`` (scalar or vector) from ``ptr`` where the i1 ``pred`` holds, without
        touching memory where it does not (the result is then zero). The default branches
        around a plain load; a backend may emit a predicated load instead."""
        from llvmlite import ir

        before = builder.block
        then = builder.append_basic_block("masked_load")
        done = builder.append_basic_block("masked_load_done")
        builder.cbranch(pred, then, done)
        builder.position_at_end(then)
        value = builder.load(ptr, typ=ty, align=align)
        builder.branch(done)
        builder.position_at_end(done)
        phi = builder.phi(ty)
        phi.add_incoming(value, then)
        phi.add_incoming(ir.Constant(ty, None), before)
        return phi

    def masked_store(self, builder, ptr, value, pred, align: int) -> None:
        """Store ``value`` to ``ptr`` where the i1 ``pred`` holds. The default branches around
        a plain store; a backend may emit a predicated store instead."""
        then = builder.append_basic_block("masked_store")
        done = builder.append_basic_block("masked_store_done")
        builder.cbranch(pred, then, done)
        builder.position_at_end(then)
        builder.store(value, ptr, align=align)
        builder.branch(done)
        builder.position_at_end(done)


    #: whether the backend's toolchain can assemble inline assembly in the kernel
    #: (``tl.inline_asm_elementwise``); when False the lowering reports a clear error.
    supports_inline_asm: bool = True

    def printf(self, builder, fmt: str, args: Sequence) -> None:
        """Print the C ``printf`` format ``fmt`` with scalar LLVM ``args`` (i32, i64 or double)
        from the calling thread (``tl.device_print``). The default: the target has none."""
        from ..errors import CodegenError

        raise CodegenError(f"tl.device_print is not supported on this target "
                           f"({type(self).__name__} has no device printf)")

    def assert_fail(self, builder, message: str) -> None:
        """Abort the launch, reporting ``message`` where the target can (a failed
        ``tl.device_assert`` in debug mode). The default traps (``llvm.trap``)."""
        from llvmlite import ir

        trap = builder.module.declare_intrinsic("llvm.trap", fnty=ir.FunctionType(
            ir.VoidType(), []))
        builder.call(trap, [])


class Codegen(abc.ABC):
    """A backend's final steps: LLVM IR text -> binary, plus what the lowering needs."""

    target: Target
    target_info: TargetInfo

    @abc.abstractmethod
    def toolchain_hash(self) -> str:
        """Stable hash of everything outside naiad that changes the binary (LLVM, linker versions);
        part of the on-disk cache key."""

    @abc.abstractmethod
    def compile_llvm(self, llvm_ir: str, kernel_name: str, options) -> BinaryResult:
        """Optimise ``llvm_ir`` (O3), emit assembly, assemble and link it to the loadable binary,
        and parse the resource report. Raise ``naiad.CodegenError`` with the tool's log on failure."""


class Launcher(abc.ABC):
    """A backend's runtime: device memory and kernel launches."""

    @abc.abstractmethod
    def load(self, result: BinaryResult, kernel_name: str):
        """Load the binary and return an opaque handle used by :meth:`launch`."""

    @abc.abstractmethod
    def launch(self, handle, grid: tuple[int, int, int], num_warps: int, shared_bytes: int,
               args: Sequence, arg_types: Sequence, stream=None) -> None:
        """Launch ``handle`` on ``grid`` programs with ``num_warps`` warps each. ``args`` are the
        kernel's runtime arguments after specialisation (device pointers as ints, scalars);
        ``arg_types`` their naiad type strings (``"*fp32"``, ``"i32"``...)."""

    # Device memory (naiad.to_device / naiad.empty) -- optional for interpreters.
    def to_device(self, array):
        raise NotImplementedError

    def empty(self, shape, dtype):
        raise NotImplementedError

    def data_pointer(self, obj) -> int | None:
        """Return the device address of ``obj`` if this launcher accepts it, else None."""
        return None

    # Optional fast paths and timing, found by name by the runtime (all may be left out):
    #
    # ``bind_launch(handle, num_warps, shared_bytes, arg_types) -> go(grid3, args, stream=None)``
    #     resolve everything fixed per compiled kernel once (argument packer, block/shared checks)
    #     so the warm launch path is one call.
    # ``pointer_getter(array_type) -> function(obj) -> int`` or None: a cheaper per-type way
    #     than :meth:`data_pointer` to read device addresses (asked once per argument type).
    # ``synchronize()``: wait for all launched work (``naiad.testing.do_bench`` calls it).
    # ``event_timer()``: device-event timing and an L2 flush for ``do_bench``
    #     (see ``naiad_nvidia.runtime.event_timer.EventTimer`` for the interface).
