"""``tl.extra.cuda``: libdevice plus the programmatic-dependent-launch controls.

``gdc_wait``/``gdc_launch_dependents`` order a kernel after the previous one when launched
with programmatic dependent launch (``launch_pdl``). naiad launches kernels in stream order
(no PDL), where the previous kernel has always finished: both are correctly no-ops."""
from __future__ import annotations

from ...core import builtin
from .. import libdevice  # noqa: F401


@builtin
def gdc_wait(_semantic=None):
    """Wait for the previous kernel's memory (always visible under stream-order launches)."""
    return None


@builtin
def gdc_launch_dependents(_semantic=None):
    """Allow the next kernel to start (it starts after this one anyway without PDL)."""
    return None


__all__ = ["libdevice", "gdc_wait", "gdc_launch_dependents"]
