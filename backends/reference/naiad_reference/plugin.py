"""The reference backend's pluggy hooks: target ``reference:numpy``, its options and launcher.

Registered through the ``naiad.backends`` entry point like any vendor backend. It has no codegen
(``compiled=False``): the launcher runs the tile IR text with :func:`naiad_reference.execute`.
"""
from __future__ import annotations

from dataclasses import dataclass

from naiad.errors import NaiadError
from naiad.plugins import BinaryResult, Launcher, Options, TargetSpec, hookimpl

BACKEND = "reference"
ARCH = "numpy"


@dataclass(frozen=True)
class ReferenceOptions(Options):
    """Launch options the reference backend accepts; they do not change its results."""

    BACKEND = "reference"

    @classmethod
    def from_dict(cls, options: dict) -> "ReferenceOptions":
        return cls.from_user({k: v for k, v in options.items() if v is not None})


def _detect() -> str:
    return ARCH


SPEC = TargetSpec(backend=BACKEND, archs=(ARCH,), warp_sizes={ARCH: 1}, default_arch=ARCH,
                  detect_arch=_detect, compiled=False,
                  description="numpy reference executor of the tile IR (always available; the "
                              "semantics oracle)")


def _module_from(result):
    """A Module from whatever the compiler hands over: a Module, tile text, a BinaryResult or a
    compiled kernel."""
    from naiad.ir import Module

    if isinstance(result, Module):
        return result
    if isinstance(result, BinaryResult):
        stage = result.stages.get(result.binary_stage, result.stages.get("tile"))
        if stage is None:
            raise NaiadError("reference launcher: the BinaryResult has no 'tile' stage")
        return _module_from(stage)
    asm = getattr(result, "asm", None)
    if isinstance(asm, dict) and "tile" in asm:
        return _module_from(asm["tile"])
    if isinstance(result, bytes):
        result = result.decode()
    if isinstance(result, str):
        from naiad.ir import parse_module

        return parse_module(result)
    raise NaiadError(f"reference launcher cannot load {type(result).__name__}; expected tile IR "
                     "text, a Module or a BinaryResult")


class ReferenceLauncher(Launcher):
    """Loads tile IR and runs it in numpy; host numpy arrays are its 'device' memory."""

    def __init__(self, mode: str | None = None):
        self.mode = mode  # None: NAIAD_REFERENCE_MODE or "auto"

    def load(self, result, kernel_name: str):
        from .runtime.executor import PreparedKernel

        return PreparedKernel(_module_from(result), kernel_name)

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        from .runtime.executor import run

        return run(handle, grid, args, self.mode)

    def to_device(self, array):
        import numpy as np   # here, not at import: discovery loads this module for every target

        return np.asarray(array)

    def empty(self, shape, dtype):
        import numpy as np

        from naiad.ir import numpy_dtype_of

        if isinstance(dtype, str):
            name = dtype.lstrip("*")
            name = {"fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64"}.get(name, name)
            try:
                dtype = numpy_dtype_of(name)
            except KeyError:
                dtype = np.dtype(dtype)
        return np.empty(shape, dtype=dtype)

    def data_pointer(self, obj):
        return None


@hookimpl
def naiad_targets():
    return [SPEC]


@hookimpl
def naiad_options(target, options):
    if getattr(target, "backend", None) != BACKEND:
        return None
    return ReferenceOptions.from_dict(dict(options or {}))


@hookimpl
def naiad_launcher(target):
    if getattr(target, "backend", None) != BACKEND:
        return None
    return ReferenceLauncher()
