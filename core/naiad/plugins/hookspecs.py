"""The contract between naiad's core and its backends, as pluggy hook specifications.

Every backend (in-tree or a vendor's own distribution) is a module of ``@naiad.hookimpl``
functions registered under the entry-point group ``naiad.backends``. The hooks are grouped by the
phase in which the core calls them:

* **discover** -- which targets exist and how their options are validated;
* **compile**  -- the backend's layouts, GPU-IR passes, LLVM attributes and codegen;
* **run**      -- the launcher (device memory, loading binaries, launches);
* **observe**  -- cross-cutting observers of every finished stage (dumps, statistics).

Per-target hooks (every hook with a ``target`` parameter) return ``None`` for targets the
plugin does not own; ``firstresult`` hooks take the first non-None answer in pluggy's order (the
plugin registered last first). All hooks are called through ``pm.hook.<name>``, so a plugin's
``hookwrapper`` sees every call. How a raising plugin is contained is described in
:mod:`naiad.plugins.manager` (a plugin never takes down another plugin's targets).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pluggy

if TYPE_CHECKING:  # only for the annotations: importing these here would be a cycle
    from .contract import (Codegen, KernelDescription, Launcher, LLVMAttributes, Options,
                           Target, TargetSpec)

PROJECT = "naiad"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- discover -------------------------------------------------------------------------------------
@hookspec
def naiad_targets() -> "Sequence[TargetSpec]":
    """Return the :class:`~naiad.plugins.TargetSpec` s this plugin provides (every plugin may).

    A TargetSpec names the backend (``"nvidia"``), its architectures, their warp sizes, the
    default architecture, a cheap never-raising ``detect_arch`` and, optionally,
    ``unavailable``: why the backend cannot compile here (a missing toolchain), or None.
    A plugin whose ``naiad_targets`` raises or returns anything but TargetSpecs is reported and
    left out; the others load normally.
    """


@hookspec(firstresult=True)
def naiad_options(target: "Target", options: "dict") -> "Options | None":
    """Validate the user's options for ``target`` once and return the backend's options object.

    :param target: the target being compiled for.
    :param options: the user's options as a dict (``num_warps=8``, ``num_stages=2``, ...).
    :returns: an instance of a subclass of :class:`naiad.plugins.Options` (usually
        ``MyOptions.from_user(options)``), or None when ``target`` is not this plugin's. That one
        object reaches every later hook and stage unchanged.
    :raises naiad.OptionError: naming the bad option.
    """


# -- compile --------------------------------------------------------------------------------------
@hookspec
def naiad_layouts(target: "Target") -> "Sequence[type] | None":
    """Return the layout attribute classes (subclasses of ``naiad.backend.Layout``) this plugin
    contributes for ``target``, or None. Contributions from all plugins are merged; the IR
    printer/parser find them by their ``mnemonic``.

    :param target: the target being compiled for.
    """


@hookspec(firstresult=True)
def naiad_lowering_passes(target: "Target", options: "Options") -> "Sequence | None":
    """Return the ordered GPU-IR passes for ``target``, or None for the core's default.

    :param target: the target being compiled for.
    :param options: the object ``naiad_options`` returned.
    :returns: callables ``pass(module, ctx) -> None`` (``ctx`` is a
        ``naiad.backend.GPUPassContext``), typically ``naiad.backend.default_lowering_passes``
        with the backend's own passes inserted by name. A pass before the core's layout
        assignment may fix layouts (which the assignment keeps) and place the backend's own
        ops, lowered by ``TargetInfo.op_lowering``.
    """


@hookspec
def naiad_llvm_attributes(target: "Target", options: "Options",
                          kernel: "KernelDescription") -> "LLVMAttributes | None":
    """Return what this plugin adds to the kernel's LLVM module, or None.

    :param target: the target being compiled for.
    :param options: the object ``naiad_options`` returned.
    :param kernel: the kernel being lowered (name, GPU-IR function, warps, warp size, shared
        bytes).
    :returns: a :class:`naiad.plugins.LLVMAttributes` (function attributes, calling
        convention, module flags, named metadata). Answers of all plugins are merged (later
        plugins win on the same key); the core sets them on the llvmlite module.
    """


@hookspec(firstresult=True)
def naiad_codegen(target: "Target") -> "Codegen | None":
    """Return the backend's :class:`naiad.plugins.Codegen` for ``target`` (its TargetInfo, the
    steps LLVM IR -> binary with a resource report, its stage names and binary validation), or
    None when the target is not this plugin's.

    :param target: the target being compiled for.
    """


@hookspec(firstresult=True)
def naiad_matrix_instructions(target: "Target", options: "Options") -> "Sequence | None":
    """Return the matrix instructions the core's ``accelerate_matmul`` pass may use, in order of
    preference, or None when the target is not this plugin's (or it has no matrix unit).

    :param target: the target being compiled for.
    :param options: the object ``naiad_options`` returned.
    :returns: ``naiad.gpu.matrix.MatrixInstruction`` entries: shape, element types, lane maps
        (linear layouts) and a factory of the backend's matrix layout;
        ``TargetInfo.matrix_multiply`` emits one issue of an entry.
    """


@hookspec(firstresult=True)
def naiad_matrix_policy(target: "Target", options: "Options") -> "MatrixPolicy | None":
    """Return how the core's ``accelerate_matmul`` treats this target's dots beyond the
    instruction table, or None (the defaults) when the target is not this plugin's.

    :param target: the target being compiled for.
    :param options: the object ``naiad_options`` returned.
    :returns: a ``naiad.gpu.matrix.policy.MatrixPolicy``: fold ``acc + dot`` into the dot,
        convert loop-invariant operands once before their loop, and an ``explain`` callback
        whose text becomes a performance remark on a dot (why it is on FMAs or a slower entry).
    """


# -- run ------------------------------------------------------------------------------------------
@hookspec(firstresult=True)
def naiad_launcher(target: "Target") -> "Launcher | None":
    """Return the backend's :class:`naiad.plugins.Launcher` for ``target`` (device memory,
    module loading, launches), or None when the target is not this plugin's.

    :param target: the target to run on.
    :raises naiad.DeviceError: with a clear message when the runtime or device is missing.
    """


# -- observe --------------------------------------------------------------------------------------
@hookspec
def naiad_stage_done(stage: str, ir: "str | bytes", target: "Target", metadata: dict) -> None:
    """Observe a finished stage (dumps, statistics). A raising observer is reported as a
    ``PluginWarning`` naming it; the compile goes on.

    :param stage: its name (``tile``, ``gpu``, ``llir``, then the backend's stages, e.g.
        ``ptx``/``cubin`` or ``amdgcn``/``hsaco``).
    :param ir: the stage's text, or bytes for a binary.
    :param target: the target being compiled for.
    :param metadata: ``{"name": kernel name}``.
    """


#: hook name -> phase; the plugin manager's isolation policy is per phase.
PHASES = {
    "naiad_targets": "discover",
    "naiad_options": "discover",
    "naiad_layouts": "compile",
    "naiad_lowering_passes": "compile",
    "naiad_llvm_attributes": "compile",
    "naiad_matrix_instructions": "compile",
    "naiad_matrix_policy": "compile",
    "naiad_codegen": "compile",
    "naiad_launcher": "run",
    "naiad_stage_done": "observe",
}
#: hooks whose answers from every plugin are combined (not firstresult).
MERGED_HOOKS = frozenset({"naiad_targets", "naiad_layouts", "naiad_llvm_attributes"})
HOOK_NAMES = tuple(PHASES)
