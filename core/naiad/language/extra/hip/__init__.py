"""``tl.extra.hip``: the same portable libdevice as ``tl.extra.libdevice``."""
from .. import libdevice  # noqa: F401

__all__ = ["libdevice"]
