"""The NVIDIA architectures naiad targets, and which one the device present here runs.

Imported by the plugin at start-up: it touches the CUDA driver only inside :func:`detect_arch`.
"""
from __future__ import annotations

ARCHS = ("sm_80", "sm_89", "sm_90")
DEFAULT_ARCH = "sm_90"


def detect_arch() -> str | None:
    """The supported arch whose cubin runs on device 0, or None (cheap, never raises).

    An sm_86/sm_87 device runs sm_80 code; sm_89 and sm_90 map to themselves.
    """
    try:
        from .runtime.driver import detect_arch as device_arch

        arch = device_arch()
        if arch is None:
            return None
        if arch in ARCHS:
            return arch
        major, minor = int(arch[3:-1]), int(arch[-1])
        fits = [a for a in ARCHS if int(a[3:-1]) == major and int(a[-1]) <= minor]
        return max(fits) if fits else None
    except BaseException:  # noqa: BLE001 - contract: never raise
        return None
