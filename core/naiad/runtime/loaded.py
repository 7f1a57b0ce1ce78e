"""A compiled specialisation loaded on its target's launcher, and the grid's normal form.

Kept apart from :mod:`naiad.runtime.launch` (which compiles on a cache miss and so imports the
compiler) so that a ``CompiledKernel`` can launch itself (``compiled[grid](...)``) through
:mod:`naiad.runtime.compiled_launch` without an import cycle between the compiler and the runtime.
"""
from __future__ import annotations

from operator import index as _index

from ..plugins.contract import BinaryResult
from .specialize import ArgumentError
from .targets import TargetState


class _Entry:
    """One compiled specialisation in memory, with the launch constants pre-extracted.

    ``go(grid3, args, stream)`` launches it (None until loaded): the launcher's own pre-bound
    launch, ``launcher.bind_launch(handle, num_warps, shared, arg_types)``."""

    __slots__ = ("kernel", "handle", "num_warps", "shared", "arg_types", "go")

    def __init__(self, kernel, arg_types: tuple[str, ...]):
        self.kernel = kernel
        self.handle = None
        self.num_warps = int(kernel.metadata.get("num_warps", 4))
        self.shared = int(kernel.metadata.get("shared", 0) or 0)
        self.arg_types = arg_types
        self.go = None

    def load(self, state: TargetState) -> None:
        launcher = state.launcher
        if self.handle is None:
            self.handle = launcher.load(binary_result(self.kernel), self.kernel.name)
        # may raise (too many warps, too much shared memory); Launcher's default binds launch()
        if not self.kernel.metadata.get("global_scratch_size"):
            self.go = launcher.bind_launch(self.handle, self.num_warps, self.shared,
                                           self.arg_types)
            return
        from .global_scratch import with_global_scratch

        go = launcher.bind_launch(self.handle, self.num_warps, self.shared,
                                  self.arg_types + ("*u8",))   # the hidden scratch parameter
        self.go = with_global_scratch(go, self.kernel, launcher.data_pointer)


def binary_result(kernel) -> BinaryResult:
    """What a launcher loads for a CompiledKernel: every stage, the one to load, the metadata
    (for the reference backend the binary is the tile IR text, ``asm["tile"]``)."""
    return BinaryResult(stages=dict(kernel.asm), binary_stage=kernel.binary_stage,
                        metadata=dict(kernel.metadata))


def _grid3(grid) -> tuple[int, int, int] | None:
    """A 3-tuple of program counts from a 1-3 element tuple (or an int); None when empty."""
    if isinstance(grid, (list, tuple)) and not 1 <= len(grid) <= 3:
        raise ArgumentError(f"a grid has 1 to 3 dimensions, got {len(grid)}: {grid!r}")
    try:
        if type(grid) is tuple:
            n = len(grid)
            if n == 1:
                g = (_index(grid[0]), 1, 1)
            elif n == 2:
                g = (_index(grid[0]), _index(grid[1]), 1)
            else:
                g = (_index(grid[0]), _index(grid[1]), _index(grid[2]))
        elif isinstance(grid, (list, tuple)):
            return _grid3(tuple(grid))
        else:
            g = (_index(grid), 1, 1)
    except TypeError:
        raise ArgumentError(f"a grid is a tuple of 1 to 3 ints (or a callable of the meta "
                            f"parameters returning one), got {grid!r}") from None
    if g[0] <= 0 or g[1] <= 0 or g[2] <= 0:
        if g[0] < 0 or g[1] < 0 or g[2] < 0:
            raise ArgumentError(f"grid dimensions must not be negative, got {grid!r}")
        return None
    return g
