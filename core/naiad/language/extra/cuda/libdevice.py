"""``triton.language.extra.cuda.libdevice``: naiad's portable libdevice."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __getattr__  # noqa: F401
