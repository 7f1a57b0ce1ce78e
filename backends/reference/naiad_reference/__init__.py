"""naiad's reference backend: runs the tile IR with numpy, the semantics oracle of every backend.

``execute(module, kernel_name, grid, args)`` runs a kernel; pointer arguments are numpy arrays
(written in place), scalars are Python/numpy scalars. See :mod:`naiad_reference.runtime.executor` for how
a grid runs (lockstep over all programs where the semantics allow, one program at a time where
they don't) and :mod:`naiad_reference.plugin` for the pluggy hooks (target ``reference``).
"""
from .runtime.executor import PreparedKernel, RunInfo, execute
from .runtime.memory import ReferenceArgumentError

__all__ = ["execute", "PreparedKernel", "RunInfo", "ReferenceArgumentError"]
