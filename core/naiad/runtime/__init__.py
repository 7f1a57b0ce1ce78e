"""naiad's runtime: @jit, targets, launch, caches, autotune, device memory, the driver queries.

Submodules load on first attribute access, so ``naiad.runtime.driver`` works after a plain
``import naiad`` (as ``triton.runtime.driver`` does in Triton programs)."""
import importlib

_SUBMODULES = ("driver", "jit", "autotune", "launch", "targets", "memory", "cache", "allocator",
               "options", "errors")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
