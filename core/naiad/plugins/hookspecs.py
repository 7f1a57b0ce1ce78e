"""The contract between naiad's core and its backends, as pluggy hook specifications.

Every backend (in-tree or a vendor's own distribution) is a module of ``@naiad.hookimpl``
functions registered under the entry-point group ``naiad.backends``. Per-target hooks return
``None`` for targets the plugin does not own; ``firstresult`` hooks take the first non-None answer.
"""
from __future__ import annotations

import pluggy

PROJECT = "naiad"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def naiad_targets():
    """Return a list of :class:`naiad.plugins.TargetSpec` this plugin provides.

    Every plugin may contribute. A TargetSpec names the backend (``"nvidia"``), its architectures
    (``["sm_80", "sm_90"]``), their warp sizes, the default architecture, and a callable telling
    whether a device is present on this machine (it must be cheap and must not raise).
    """


@hookspec
def naiad_layouts(target):
    """Return layout attribute classes (subclasses of ``naiad.gpu.layouts.Layout``) this plugin
    contributes for ``target`` (a :class:`naiad.plugins.Target`), or None. Contributions from all
    plugins are merged; the printer/parser find them by their ``mnemonic``."""


@hookspec(firstresult=True)
def naiad_lowering_passes(target, options):
    """Return the ordered GPU-IR passes (callables ``pass(module, ctx) -> None``) for ``target``,
    or None when the target is not this plugin's. ``options`` is the validated options object.
    Typically ``naiad.gpu.passes.default_lowering_passes(target, options)`` with the backend's
    own passes inserted; a pass before the core's layout assignment may fix layouts (which the
    assignment keeps) and place the backend's own ops, lowered by ``TargetInfo.op_lowering``."""


@hookspec
def naiad_llvm_attributes(target, options, kernel):
    """Return a dict ``{"function": {name: value}, "module_flags": {name: value},
    "calling_convention": str | None, "metadata": {...}}`` for the kernel's LLVM function, or None.
    ``kernel`` describes the kernel being lowered (its name and the GPU-IR function). Dicts from all
    plugins are merged (later plugins win on the same key)."""


@hookspec(firstresult=True)
def naiad_matrix_instructions(target, options):
    """Return the matrix instructions (``naiad.gpu.matrix.MatrixInstruction``) the core's
    ``accelerate_matmul`` pass may use for ``target`` with these validated ``options``, in order
    of preference, or None when the target is not this plugin's. Each entry carries its shape,
    element types, lane maps (linear layouts) and a factory of the backend's matrix layout;
    ``TargetInfo.matrix_multiply`` emits it."""


@hookspec(firstresult=True)
def naiad_options(target, options):
    """Validate and normalise the user-supplied ``options`` dict for ``target`` and return the
    backend's options object (must expose ``num_warps`` and ``num_stages``), or None when the
    target is not this plugin's. Raise ``naiad.OptionError`` naming the bad option."""


@hookspec(firstresult=True)
def naiad_codegen(target):
    """Return the backend's :class:`naiad.plugins.Codegen` for ``target`` (its TargetInfo and the
    steps LLVM IR -> binary with a resource report), or None when the target is not this plugin's."""


@hookspec(firstresult=True)
def naiad_launcher(target):
    """Return the backend's :class:`naiad.plugins.Launcher` for ``target`` (driver: memory,
    module loading, launch), or None when the target is not this plugin's. May raise
    ``naiad.DeviceError`` with a clear message when the runtime or device is missing."""


@hookspec
def naiad_stage_done(stage, ir, target, metadata):
    """Observe a finished stage: ``stage`` is its name (``tile``, ``gpu``, ``llir``, ``ptx``,
    ``cubin``, ``amdgcn``, ``hsaco``), ``ir`` its text or bytes, ``metadata`` a dict (kernel name,
    ...). Return value ignored. Used by cross-cutting plugins (dumps, statistics)."""
