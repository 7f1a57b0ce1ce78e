"""Compile options of the NVIDIA backend, validated once so later stages can trust them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from naiad.errors import OptionError
from naiad.plugins import Options


@dataclass(frozen=True)
class NvidiaOptions(Options):
    """Options for one NVIDIA compilation.

    ``num_warps``: warps per program (power of two, 1..32); ``num_stages``: software-pipelining
    depth for loops (>= 1); ``num_ctas``: CTAs per program (only 1: clusters are not supported);
    ``maxnreg``: register cap per thread passed to ptxas (None or 16..255);
    ``enable_fp_fusion``: let LLVM/ptxas contract a*b+c into FMA (Triton's default: True);
    ``opt_level``: LLVM optimisation level 0..3; ``tensor_cores``: compute eligible ``tl.dot``
    (f16/bf16 operands; f32 with input_precision "tf32") with mma.sync (True) or always with
    exact FMAs (False); ``wgmma``: on sm_90, compute eligible f16/bf16 dots in pipelined
    K loops with Hopper's warpgroup ``wgmma.mma_async`` (True) or with mma.sync (False);
    ``unroll_threshold``: see :class:`naiad.plugins.Options`.
    """

    BACKEND = "nvidia"

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    enable_fp_fusion: bool = True
    opt_level: int = 3
    tensor_cores: bool = True
    wgmma: bool = True

    def check(self) -> None:
        _int("num_warps", self.num_warps)
        if not (1 <= self.num_warps <= 32 and self.num_warps & (self.num_warps - 1) == 0):
            raise OptionError(f"option 'num_warps' must be a power of two in 1..32, "
                              f"got {self.num_warps!r}")
        _int("num_stages", self.num_stages)
        if self.num_stages < 1:
            raise OptionError(f"option 'num_stages' must be >= 1, got {self.num_stages!r}")
        _int("num_ctas", self.num_ctas)
        if self.num_ctas != 1:
            raise OptionError(f"option 'num_ctas' must be 1 on nvidia (thread-block clusters "
                              f"are not supported), got {self.num_ctas!r}")
        if self.maxnreg is not None:
            _int("maxnreg", self.maxnreg)
            if not 16 <= self.maxnreg <= 255:
                raise OptionError(f"option 'maxnreg' must be in 16..255, got {self.maxnreg!r}")
        if not isinstance(self.enable_fp_fusion, bool):
            raise OptionError(f"option 'enable_fp_fusion' must be a bool, got "
                              f"{type(self.enable_fp_fusion).__name__} {self.enable_fp_fusion!r}")
        if not isinstance(self.tensor_cores, bool):
            raise OptionError(f"option 'tensor_cores' must be a bool, got "
                              f"{type(self.tensor_cores).__name__} {self.tensor_cores!r}")
        if not isinstance(self.wgmma, bool):
            raise OptionError(f"option 'wgmma' must be a bool, got "
                              f"{type(self.wgmma).__name__} {self.wgmma!r}")
        _int("opt_level", self.opt_level)
        if not 0 <= self.opt_level <= 3:
            raise OptionError(f"option 'opt_level' must be in 0..3, got {self.opt_level!r}")
        super().check()


def _int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        # numpy integers are accepted by validate() after conversion; here only int is valid.
        raise OptionError(f"option {name!r} must be an int, got {type(value).__name__} {value!r}")


OPTION_NAMES = NvidiaOptions.names()


def validate(options: Mapping[str, Any] | NvidiaOptions | None) -> NvidiaOptions:
    """Build :class:`NvidiaOptions` from a user dict; unknown names raise OptionError."""
    return NvidiaOptions.from_user(options)
