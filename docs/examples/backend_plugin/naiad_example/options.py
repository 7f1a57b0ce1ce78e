"""The example backend's options: naiad's base options, with this backend's own limits."""
from __future__ import annotations

from dataclasses import dataclass

from naiad.errors import OptionError
from naiad.plugins import Options


@dataclass(frozen=True)
class ExampleOptions(Options):
    """``num_warps``/``num_stages``/``unroll_threshold`` as for every backend. The interpreter
    ignores warps, but it accepts at most 32 per program, like the GPUs kernels are written for:
    a backend adds its rules in ``check`` and leaves the shared ones to the base class."""

    BACKEND = "example"

    def check(self) -> None:
        if isinstance(self.num_warps, int) and self.num_warps > 32:
            raise OptionError(f"option 'num_warps' must be at most 32 on the example backend, "
                              f"got {self.num_warps}")
        super().check()
