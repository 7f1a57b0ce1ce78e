"""naiad's reference backend: runs the tile IR with numpy, the semantics oracle of every backend.

``execute(module, kernel_name, grid, args)`` runs a kernel; pointer arguments are numpy arrays
(written in place), scalars are Python/numpy scalars. See :mod:`naiad_reference.runtime.executor` for how
a grid runs (lockstep over all programs where the semantics allow, one program at a time where
they don't) and :mod:`naiad_reference.plugin` for the pluggy hooks (target ``reference``).

Importing the package (as plugin discovery does for every compile, whatever the target) loads
neither numpy nor the executor: its names are imported on first use.
"""
import importlib

_EXPORTS = {"execute": "executor", "PreparedKernel": "executor", "RunInfo": "executor",
            "ReferenceArgumentError": "memory"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'naiad_reference' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.runtime.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
