"""naiad's vendor-neutral GPU layer: layouts (all reducing to linear layouts), GPU-IR passes
(layout assignment, conversion removal, shared-memory allocation, barriers) and the lowering
of GPU IR to LLVM IR through a backend's TargetInfo.

Public entry points: :func:`lower_to_llvm` (what ``naiad.compile`` calls),
:func:`default_lowering_passes`, :class:`Lowered`, and the layout classes in
:mod:`naiad.gpu.layouts`.
"""
from __future__ import annotations

from . import ops  # noqa: F401  (registers the GPU ops)
from .layouts import (BlockedLayout, DotOperandLayout, Layout, LinearEncoding, SharedLayout,
                      SliceLayout, register_layout)
from .linear_layout import LinearLayout
from .passes import GPUPassContext, default_lowering_passes


def lower_to_llvm(module, kernel_name, target, options, target_info, pm=None):
    from .lower import lower_to_llvm as _lower

    return _lower(module, kernel_name, target, options, target_info, pm)


def __getattr__(name):
    if name in ("Lowered", "KernelDescription", "run_gpu_passes", "emit_llvm"):
        from . import lower

        return getattr(lower, name)
    raise AttributeError(f"module 'naiad.gpu' has no attribute {name!r}")


__all__ = ["lower_to_llvm", "default_lowering_passes", "GPUPassContext", "Layout",
           "BlockedLayout", "SliceLayout", "DotOperandLayout", "SharedLayout", "LinearEncoding",
           "LinearLayout", "register_layout", "Lowered", "KernelDescription"]
