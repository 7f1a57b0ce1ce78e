"""``triton.language.extra.hip.libdevice``: naiad's portable libdevice."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __getattr__  # noqa: F401
