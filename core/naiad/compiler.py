"""The compilation driver: Python source -> tile IR -> (GPU IR -> LLVM IR -> backend binary).

Every stage is named, kept in ``CompiledKernel.asm`` and reported to the ``naiad_stage_done``
hook (which is how ``NAIAD_DUMP`` and observer plugins see it). ``naiad.compile`` needs no device.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import partial as _partial
from types import MethodType as _MethodType
from typing import Any

from .errors import CompilationError, PluginError, TargetError
from .plugins.contract import Options
from .runtime.global_scratch import GLOBAL_SCRATCH_ALIGN


#: Triton's stage names that naiad has no counterpart for, and why (the KeyError says it).
_TRITON_ONLY_STAGES = {
    "ttir": "naiad does not produce Triton IR (MLIR); its tile IR is asm['tile']",
    "ttgir": "naiad does not produce TritonGPU IR (MLIR); its tile IR with layouts is "
             "asm['gpu']",
}


class KernelStages(dict):
    """``CompiledKernel.asm``: the compiled stages, plus stages the backend derives on first
    read (``Codegen.derived_stage``: NVIDIA's ``sass``). A stage naiad does not have raises a
    KeyError that says which it has."""

    def __init__(self, stages=(), target=None):
        super().__init__(stages)
        self._target = target

    def __missing__(self, stage):
        derived = self._derive(stage)
        if derived is not None:
            self[stage] = derived
            return derived
        why = _TRITON_ONLY_STAGES.get(stage, "not produced for this target")
        raise KeyError(f"{stage!r}: {why} (stages: {', '.join(sorted(self))})")

    def _derive(self, stage):
        if self._target is None or not isinstance(stage, str):
            return None
        from .plugins.manager import get_plugin_manager

        try:
            codegen = get_plugin_manager().hook.naiad_codegen(target=self._target)
        except Exception:
            return None
        derive = getattr(codegen, "derived_stage", None)
        return derive(stage, dict(self)) if derive is not None else None


@dataclass
class CompiledKernel:
    """A kernel compiled for one target and one specialisation.

    ``asm`` maps stage names (``tile``, ``gpu``, ``llir``, ``ptx``, ``cubin``, ``amdgcn``,
    ``hsaco``; ``sass`` on first read where a disassembler is found) to their text or bytes; ``binary_stage`` names the one the launcher loads;
    ``metadata`` holds the resource report (registers, spills, shared memory, ...),
    ``num_warps``/``shared`` needed at launch and, for compiled targets, ``remarks``: why ops
    are off their fast path (:mod:`naiad.remarks`).
    """

    name: str
    target: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    options: Any
    asm: dict[str, Any] = field(default_factory=dict)
    binary_stage: str = "tile"
    metadata: dict[str, Any] = field(default_factory=dict)
    #: every parameter of the kernel in order (constexprs included), for ``kernel[grid](...)``
    arg_names: tuple = ()

    def __post_init__(self):
        if not isinstance(self.asm, KernelStages):
            self.asm = KernelStages(self.asm, self.target)
        if not isinstance(self.metadata, KernelMetadata):
            self.metadata = KernelMetadata(self.metadata)

    @property
    def binary(self):
        return self.asm[self.binary_stage]

    # -- Triton's names for the resource report ------------------------------------------------
    @property
    def n_regs(self) -> int:
        """Registers per thread (0 on an interpreted target, which has none)."""
        return int(self.metadata.get("registers", 0) or 0)

    @property
    def n_spills(self) -> int:
        """Spills per thread as the backend reports them (``spill_bytes`` on NVIDIA,
        ``spill_registers`` on AMD; 0 when none)."""
        md = self.metadata
        return int(md.get("spill_bytes") or md.get("spill_registers") or 0)

    @property
    def n_max_threads(self) -> int:
        return int(self.metadata.get("num_warps", 4)) * int(getattr(self.target, "warp_size", 1))

    def _init_handles(self) -> None:
        """Load the binary on the target's launcher now (Triton's name; launches do it lazily).
        Once loaded, a call returns at once (tutorial 02 calls it before every launch)."""
        if "_naiad_entry" in self.__dict__:
            return
        from .runtime.compiled_launch import entry_of

        entry_of(self)

    def __getitem__(self, grid):
        """``compiled[grid](*args)``: launch this very binary. ``args`` are the runtime arguments,
        or every parameter in order (constexpr values are then skipped, as Triton does)."""
        launch = self.__dict__.get("_naiad_fast_launch")
        if launch is None:
            from .runtime.compiled_launch import fast_launch_of

            launch = fast_launch_of(self)
        # launch(grid, *args), bound as kernel[grid] binds it (None cannot be: the call says
        # what a grid is)
        return _MethodType(launch, grid) if grid is not None else _partial(launch, grid)


class KernelMetadata(dict):
    """The resource report: a dict whose keys also read as attributes (``metadata.shared``,
    as Triton's compiled kernels offer)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r}; it has "
                                 f"{', '.join(sorted(self))}") from None


def _metadata_key(name: str) -> property:
    """``metadata.<name>`` without the failed attribute lookup ``__getattr__`` starts from (a
    missing key still reaches ``__getattr__`` and its error)."""
    def read(self):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    return property(read, doc=f"``metadata[{name!r}]``")


#: keys Triton host code reads as attributes on every call (tutorial 02 reads ``shared``)
for _name in ("shared", "num_warps", "num_stages", "num_ctas", "registers", "spill_bytes"):
    setattr(KernelMetadata, _name, _metadata_key(_name))


def _dump_requested(stage: str) -> bool:
    wanted = os.environ.get("NAIAD_DUMP", "")
    names = {s.strip() for s in wanted.split(",") if s.strip()}
    return stage in names or "all" in names


def report_stage(pm, stage: str, ir, target, metadata: dict) -> None:
    """Tell observers a stage finished (``naiad_stage_done``; a raising observer is a warning,
    see naiad.plugins.manager); print it when NAIAD_DUMP names it."""
    if _dump_requested(stage):
        text = ir if isinstance(ir, str) else f"<{len(ir)} bytes>"
        print(f"// ----- naiad stage {stage} ({metadata.get('name')}, {target}) -----\n{text}",
              file=sys.stderr)
    pm.hook.naiad_stage_done(stage=stage, ir=ir, target=target, metadata=metadata)


def validated_options(pm, target, options) -> Options:
    """The backend's options object for the user's ``options`` dict: validated once here, then
    handed unchanged to every later stage (passes, LLVM attributes, codegen, launch)."""
    if isinstance(options, Options):
        return options
    from .runtime.options import portable   # Triton options this backend cannot honour: dropped

    opts = pm.hook.naiad_options(target=target, options=portable(target, options))
    if opts is None:
        raise TargetError(f"no plugin validates options for target {target} "
                          f"(its backend implements no naiad_options hook)")
    if not isinstance(opts, Options):
        raise PluginError(f"plugin {pm.plugin_of_backend(target.backend)!r}: naiad_options "
                          f"returned {type(opts).__name__}, expected a subclass of "
                          f"naiad.plugins.Options")
    return opts


def compile(fn, signature: dict[str, str] | str, constexprs: dict[str, Any] | None = None,
            target=None, options: dict[str, Any] | None = None,
            specialization: dict[str, dict] | None = None) -> CompiledKernel:
    """Compile ``fn`` ahead of time for ``target`` (default: the current target).

    ``signature`` maps every non-constexpr parameter to a type string (``"*fp32"``, ``"i32"``,
    ``"fp16"``...); a comma-separated string in parameter order is accepted too.
    ``options`` are the backend's compile options (``num_warps``, ``num_stages``,
    ``unroll_threshold``, ...), validated once by its ``naiad_options`` hook.
    ``specialization`` maps parameter names to facts (``{"divisibility": 16}``,
    ``{"equal_to": 1}``) that the runtime derives from actual arguments.
    """
    from . import remarks
    from .frontend import generate
    from .ir.printer import print_module
    from .passes import run_generic_pipeline
    from .plugins.manager import get_plugin_manager
    from .runtime.targets import resolve_target

    constexprs = _with_constexpr_defaults(fn, dict(constexprs or {}))
    signature = _normalize_signature(fn, signature, constexprs)
    tgt, spec = resolve_target(target)
    if spec.unavailable:
        raise TargetError(f"target {tgt} is unavailable on this machine: {spec.unavailable}")
    pm = get_plugin_manager()
    opts = validated_options(pm, tgt, options)
    meta = {"name": fn.__name__}

    module = generate(fn, signature, constexprs, specialization or {})
    run_generic_pipeline(module, opts)
    kernel = CompiledKernel(fn.__name__, tgt, signature, constexprs, opts,
                            arg_names=tuple(fn.arg_names))
    kernel.asm["tile"] = print_module(module, locations=True)
    kernel.metadata["num_warps"] = opts.num_warps
    kernel.metadata["shared"] = 0
    report_stage(pm, "tile", kernel.asm["tile"], tgt, meta)
    if not spec.compiled:
        return kernel

    from .gpu import lower_to_llvm

    codegen = pm.hook.naiad_codegen(target=tgt)
    if codegen is None:
        raise TargetError(f"target {tgt} is compiled, but no plugin provides its codegen "
                          f"(naiad_codegen hook)")
    lowered = lower_to_llvm(module, fn.__name__, tgt, opts, codegen.target_info, pm)
    kernel.metadata["remarks"] = remarks.collect(module)
    scratch = module.functions[fn.__name__].attrs.get("global_scratch")
    if scratch:   # the backend added a hidden scratch parameter (naiad.runtime.global_scratch)
        kernel.metadata["global_scratch_size"] = int(scratch)
        kernel.metadata["global_scratch_align"] = GLOBAL_SCRATCH_ALIGN
        kernel.metadata["global_scratch_user"] = str(
            module.functions[fn.__name__].attrs.get("global_scratch_user", fn.__name__))
    remarks.report(fn.__name__, kernel.metadata["remarks"])
    kernel.asm["gpu"] = lowered.gpu_text
    report_stage(pm, "gpu", lowered.gpu_text, tgt, meta)
    kernel.asm["llir"] = lowered.llvm_ir
    report_stage(pm, "llir", lowered.llvm_ir, tgt, meta)
    result = codegen.compile_llvm(lowered.llvm_ir, fn.__name__, opts)
    for stage, artifact in result.stages.items():
        kernel.asm[stage] = artifact
        report_stage(pm, stage, artifact, tgt, meta)
    kernel.binary_stage = result.binary_stage
    kernel.metadata.update(result.metadata)
    if result.resources is not None:
        kernel.metadata.update(result.resources.as_metadata())
        kernel.metadata["resources"] = result.resources
    kernel.metadata["shared"] = max(lowered.shared_bytes, kernel.metadata.get("shared", 0))
    return kernel


def _with_constexpr_defaults(fn, constexprs: dict[str, Any]) -> dict[str, Any]:
    """Constexpr parameters not given take their Python default, as they do at launch."""
    for name in fn.constexpr_params:
        if name not in constexprs:
            default = fn.signature.parameters[name].default
            if default is not fn.signature.parameters[name].empty:
                constexprs[name] = default
    return constexprs


def _normalize_signature(fn, signature, constexprs) -> dict[str, str]:
    unset = [p for p in fn.constexpr_params if p not in constexprs]
    if unset:
        raise CompilationError(f"constexpr parameter(s) {', '.join(unset)} of {fn.__name__} "
                               f"have no value: pass them in constexprs")
    params = [p for p in fn.arg_names if p not in constexprs]
    if isinstance(signature, str):
        types = [t.strip() for t in signature.split(",") if t.strip()]
        if len(types) != len(params):
            raise CompilationError(
                f"signature lists {len(types)} types but {fn.__name__} has {len(params)} "
                f"non-constexpr parameters ({', '.join(params)})")
        return dict(zip(params, types))
    unknown = set(signature) - set(fn.arg_names)
    if unknown:
        raise CompilationError(f"signature names unknown parameters of {fn.__name__}: "
                               f"{', '.join(sorted(unknown))}")
    missing = [p for p in params if p not in signature]
    if missing:
        raise CompilationError(f"signature of {fn.__name__} lacks a type for "
                               f"{', '.join(missing)}")
    return {p: signature[p] for p in params}
