"""Make this folder's helpers (simt, gpu_kernels) and the shared tutorial kernels importable."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(os.path.dirname(HERE), "kernels")
for path in (HERE, KERNELS):
    if path not in sys.path:
        sys.path.insert(0, path)
