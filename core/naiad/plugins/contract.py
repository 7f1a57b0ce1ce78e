"""Plain data and interfaces that cross the core/backend boundary.

Backends return these from their hooks (see :mod:`naiad.plugins.hookspecs`). The core never imports
a backend module; it only talks to these objects.
"""
from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..errors import OptionError


@dataclass(frozen=True)
class TargetSpec:
    """What one plugin provides: a backend name and its architectures.

    ``warp_sizes`` maps every arch to its warp (wavefront) size. ``detect_arch`` returns the arch of
    the device present here, or None when there is none; it must be cheap and must never raise.
    ``compiled`` is False for interpreters (the reference executor), which have no LLVM stages.
    ``unavailable`` says why the backend cannot compile on this machine (its toolchain is not
    installed: ``"nvJitLink missing: pip install 'naiad[nvidia]'"``), or None when it can; such
    a target is still listed (``naiad targets``), never auto-selected, and compiling for it
    raises ``naiad.TargetError`` with the reason.
    """

    backend: str
    archs: tuple[str, ...]
    warp_sizes: Mapping[str, int]
    default_arch: str
    detect_arch: Callable[[], str | None] = lambda: None
    compiled: bool = True
    description: str = ""
    unavailable: str | None = None

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


@dataclass(frozen=True)
class Options:
    """Base of every backend's compile options (a frozen dataclass; subclasses add fields).

    A backend's ``naiad_options`` hook builds its subclass once per compilation with
    :meth:`from_user`; the same object then reaches every later stage (passes, LLVM attributes,
    codegen, launch), which therefore never re-validate. ``__post_init__`` runs :meth:`check`,
    where a subclass adds its own rules (and then calls ``super().check()``).

    ``num_warps``: warps (wavefronts) per program, a power of two; ``num_stages``: software
    pipelining depth of loops; ``unroll_threshold``: the most loop iterations the generic
    unroller may copy out (None: the core's default).
    """

    num_warps: int = 4
    num_stages: int = 3
    unroll_threshold: int | None = None

    #: the backend's name in error messages ("unknown option 'x' for the nvidia backend")
    BACKEND: ClassVar[str] = "naiad"

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """Raise ``naiad.OptionError`` naming the first bad option."""
        for name in ("num_warps", "num_stages", "unroll_threshold"):
            value = getattr(self, name)
            if not _is_int(value) and not (value is None and name == "unroll_threshold"):
                raise OptionError(f"option {name!r} must be an int, got "
                                  f"{type(value).__name__} {value!r}")
        if self.num_warps < 1 or self.num_warps & (self.num_warps - 1):
            raise OptionError(f"option 'num_warps' must be a power of two, got {self.num_warps}")
        if self.num_stages < 0:
            raise OptionError(f"option 'num_stages' must be >= 0, got {self.num_stages}")
        if self.unroll_threshold is not None and self.unroll_threshold < 0:
            raise OptionError(f"option 'unroll_threshold' must be >= 0, got "
                              f"{self.unroll_threshold}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_user(cls, options: "Mapping[str, Any] | Options | None"):
        """The options object for a user's dict (None: all defaults). Unknown names raise
        ``naiad.OptionError`` listing the known ones; numpy scalars become Python scalars."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if isinstance(options, Options):
            options = dataclasses.asdict(options)
        if not isinstance(options, Mapping):
            raise OptionError(f"options must be a dict, got {type(options).__name__}")
        known = cls.names()
        unknown = sorted(k for k in options if k not in known)
        if unknown:
            raise OptionError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(map(repr, unknown))} for the {cls.BACKEND} backend: "
                              f"Keyword argument {unknown[0]} was specified but unrecognised "
                              f"(known: {', '.join(known)})")
        clean = {}
        for k, v in options.items():
            if hasattr(v, "dtype") and hasattr(v, "item") and not isinstance(v, bool):
                v = v.item()  # numpy scalar -> Python scalar
            clean[k] = v
        return cls(**clean)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class ResourceReport:
    """What one compiled kernel uses of the device, with its units in every name.

    ``registers``: registers per thread (NVIDIA) or VGPRs per work-item (AMD);
    ``shared_bytes``: static shared memory (LDS) the binary declares;
    ``spill_bytes``: bytes spilled to local memory (NVIDIA's ptxas reports bytes);
    ``spill_registers``: registers spilled (AMD's code object counts VGPR + SGPR spills);
    ``scratch_bytes``: private (local/stack) memory per thread.
    A backend sets the spill field in the unit its toolchain reports and leaves the other None.
    """

    registers: int = 0
    shared_bytes: int = 0
    spill_bytes: int | None = None
    spill_registers: int | None = None
    scratch_bytes: int = 0

    def as_metadata(self) -> dict[str, int]:
        """The report as ``CompiledKernel.metadata`` keys (spill units as named)."""
        out = {"registers": self.registers, "shared": self.shared_bytes,
               "scratch_bytes": self.scratch_bytes}
        if self.spill_bytes is not None:
            out["spill_bytes"] = self.spill_bytes
        if self.spill_registers is not None:
            out["spill_registers"] = self.spill_registers
        return out


@dataclass
class BinaryResult:
    """What a backend's codegen returns for one kernel.

    ``stages`` holds every named artifact in pipeline order (``{"ptx": str, "cubin": bytes}`` or
    ``{"amdgcn": str, "hsaco": bytes}``); ``binary_stage`` names the one the launcher loads;
    ``metadata`` holds backend details (timings, logs, argument offsets); ``resources`` is the
    resource report (merged into ``CompiledKernel.metadata`` by :meth:`ResourceReport.as_metadata`).
    """

    stages: dict[str, Any]
    binary_stage: str
    metadata: dict[str, Any] = field(default_factory=dict)
    resources: ResourceReport | None = None


@dataclass
class KernelDescription:
    """What the ``naiad_llvm_attributes`` hook learns about the kernel being lowered."""

    name: str
    function: Any  # the GPU-IR Function
    num_warps: int
    warp_size: int
    shared_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.num_warps * self.warp_size


@dataclass
class LLVMAttributes:
    """What one plugin's ``naiad_llvm_attributes`` adds to the kernel's LLVM module.

    ``function``: string function attributes (``{"nvvm.maxntid": "128"}``);
    ``calling_convention``: the kernel's (``"ptx_kernel"``, ``"amdgpu_kernel"``), None keeps
    ``TargetInfo.kernel_calling_convention``; ``module_flags``: name -> int value (behaviour 1,
    *Error*) or ``(behaviour, value)``; ``metadata``: named metadata -> list of tuples of
    operands (ints, bools, strings; ``"@kernel"`` names the kernel function);
    ``parameter_attributes``: attributes put on every kernel parameter (AMD's ``inreg``:
    kernel-argument preload into SGPRs).
    Answers of several plugins merge in hook order (later plugins win on the same key).
    """

    function: dict[str, str] = field(default_factory=dict)
    calling_convention: str | None = None
    module_flags: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, list] = field(default_factory=dict)
    parameter_attributes: tuple[str, ...] = ()

    def merge(self, other: "LLVMAttributes") -> None:
        self.function.update({str(k): str(v) for k, v in other.function.items()})
        self.module_flags.update(other.module_flags)
        if other.calling_convention:
            self.calling_convention = other.calling_convention
        for k, v in other.metadata.items():
            self.metadata.setdefault(str(k), []).extend(list(v))
        self.parameter_attributes = tuple(dict.fromkeys(
            self.parameter_attributes + tuple(other.parameter_attributes)))


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

    def fast_math(self, builder, name: str, args: Sequence, elem: str):
        """Triton's fast version of ``name`` where the backend has one, else None.

        Asked for ops the language marks ``approx`` (Triton documents them as approximate):
        ``"div"`` (float ``/``, ``tl.fdiv`` without ``ieee_rounding``; two args) and ``"exp"``
        (``tl.exp``), on ``elem`` ``"f32"``, ``"f16"`` or ``"f64"`` (bf16 arrives widened to
        f32). A backend that answers documents the error bound in docs/language.md. Default
        None: the exact op (LLVM's fdiv, ``math``)."""
        return None

    def lane_id(self, builder):
        """i32 lane index in the warp; default derives it from the thread id."""
        from llvmlite import ir

        tid = self.thread_id(builder, 0)
        return builder.urem(tid, ir.Constant(ir.IntType(32), self.warp_size))

    # -- optional, with portable defaults (added by the GPU layer) -------------------------------
    #: LLVM ``syncscope`` of atomics (e.g. ``"agent"`` on AMD, ``"device"`` on NVIDIA);
    #: None keeps LLVM's default (system) scope.
    atomic_scope: str | None = None
    #: whether the target's LLVM lowers ``atomicrmw`` on ``shared_address_space``. The core
    #: counts ``tl.histogram`` with them; where False, a histogram is an error naming the core
    #: pass ``expand_histogram``, which the backend may select to count with a one-hot sum.
    shared_atomics: bool = True

    def syncscope(self, scope: str) -> str | None:
        """LLVM ``syncscope`` for a Triton memory scope (``"cta"``, ``"gpu"``, ``"sys"``) of an
        atomic, fence or poll; None is LLVM's system scope. Default: ``atomic_scope`` for all
        (a wider scope than asked is correct, only slower)."""
        return self.atomic_scope

    def atomic_instruction(self, op: str, elem: str, address_space: int):
        """One atomic as a single machine instruction carrying its own memory order, or None.

        ``op`` is an LLVM ``atomicrmw`` operation (``add fadd max min umax umin xchg and or
        xor``) or ``"cas"``; ``elem`` the naiad element type whose bits the value holds (the
        core's float max/min trick asks for ``max``/``umin`` on ``"i32"``). When the backend
        returns ``emit(builder, ptr, value, sem, scope, compare=None) -> old`` for every
        instruction an op needs, the core calls it per element with the op's ``sem``
        (``relaxed acquire release acq_rel``) and ``scope`` (``cta gpu sys``) and emits no
        fences. Default None: a relaxed LLVM atomic between release/acquire fences."""
        return None

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

    def cached_load(self, builder, ptr, ty, pred, align: int, cache_modifier: str):
        """Like ``masked_load`` (``pred`` may be None: unmasked) with Triton's load
        ``cache_modifier`` (``.ca .cg .cs .cv``), or None when the target does not express it;
        the core then loads without the hint (it changes caching, not values)."""
        return None

    def cached_store(self, builder, ptr, value, pred, align: int, cache_modifier: str) -> bool:
        """Like ``masked_store`` with Triton's store ``cache_modifier`` (``.wb .cg .cs
        .wt``); False (nothing emitted) when the target does not express it."""
        return False

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
    #: the stages :meth:`compile_llvm` produces, in order; the last is the loadable binary
    #: (``("ptx", "cubin")``, ``("amdgcn", "hsaco")``). Empty: not declared.
    stages: tuple[str, ...] = ()

    def validate_binary(self, result: BinaryResult) -> None:
        """Raise ``naiad.CodegenError`` unless ``result`` holds a binary this backend can load.

        The conformance suite's compile tier asks this of every kernel (it knows no binary
        format). The default checks the declared stages are all there, the binary is not empty
        and the resource report has a register count; a backend adds its format's checks (ELF
        header, machine, a kernel symbol) and calls ``super().validate_binary(result)``."""
        from ..errors import CodegenError

        missing = [s for s in self.stages if s not in result.stages]
        if missing:
            raise CodegenError(f"{self.target}: stage(s) {', '.join(missing)} missing "
                               f"(the backend declares {', '.join(self.stages)})")
        if self.stages and result.binary_stage != self.stages[-1]:
            raise CodegenError(f"{self.target}: the binary stage is {result.binary_stage!r}, "
                               f"the backend declares {self.stages[-1]!r}")
        if not result.stages.get(result.binary_stage):
            raise CodegenError(f"{self.target}: empty {result.binary_stage} stage")
        report = result.resources
        if report is not None and not (isinstance(report.registers, int)
                                       and report.registers > 0):
            raise CodegenError(f"{self.target}: no register count in the resource report "
                               f"{report}")

    def derived_stage(self, stage: str, stages: dict):
        """A stage made on demand from the compiled ones (``stages``) when a user reads
        ``compiled.asm[stage]`` -- e.g. NVIDIA's ``sass``, disassembled from the cubin -- or
        None when this backend has no such stage. Raise ``naiad.CodegenError`` when it has one
        but cannot make it here (a missing tool)."""
        return None

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

    # -- optional, with defaults the runtime relies on (a launcher overrides what it offers) ----
    def bind_launch(self, handle, num_warps: int, shared_bytes: int, arg_types: Sequence):
        """``go(grid3, args, stream=None)``: launch ``handle`` with these fixed parameters.
        A launcher resolves what is fixed per compiled kernel here (argument packer, block and
        shared-memory checks, raising ``naiad.DeviceError`` now) so the warm path is one call.
        The default calls :meth:`launch` (without ``stream`` when none is given)."""
        launch = self.launch

        def go(grid, args, stream=None):
            if stream is None:
                launch(handle, grid, num_warps, shared_bytes, args, arg_types)
            else:
                launch(handle, grid, num_warps, shared_bytes, args, arg_types, stream=stream)

        return go

    def pointer_getter(self, array_type: type):
        """``function(obj) -> int`` reading the device address of arrays of ``array_type``
        more cheaply than :meth:`data_pointer`, or None (the default; asked once per type)."""
        return None

    def synchronize(self) -> None:
        """Wait for all launched work (``naiad.testing.do_bench`` calls it). Default: nothing
        to wait for (launches that finish before returning, as an interpreter's)."""

    def event_timer(self):
        """A device-event timer for ``naiad.testing.do_bench`` (``start()``, ``stop()`` ->
        milliseconds, ``synchronize()``, ``flush_l2()``, ``close()``), or None (the default:
        timed with the host clock). May raise ``naiad.DeviceError`` when there is no device."""
        return None
