"""``asm["sass"]``: the cubin's SASS, disassembled on demand by the CUDA toolkit's ``cuobjdump``
(else ``nvdisasm``), as Triton's compiled kernels offer it.

Why on demand: disassembly is for reading, and the tools are not part of naiad's toolchain
(nvJitLink builds the cubin); a machine without them still compiles and runs everything.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from naiad.errors import CodegenError

TOOLS = ("cuobjdump", "nvdisasm")


def _tool_dirs() -> list[str]:
    dirs = [os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH")
            if os.environ.get(v)]
    return dirs + ["/usr/local/cuda/bin"]


def find_tool() -> str | None:
    """Path of ``cuobjdump`` or ``nvdisasm``: on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin or
    /usr/local/cuda/bin; None when there is none."""
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            return found
        for d in _tool_dirs():
            path = os.path.join(d, tool)
            if os.access(path, os.X_OK):
                return path
    return None


def sass(cubin: bytes) -> str:
    """The SASS text of ``cubin``; CodegenError naming what to install when no tool is found."""
    tool = find_tool()
    if tool is None:
        raise CodegenError("asm['sass'] needs cuobjdump or nvdisasm (CUDA toolkit) on PATH, in "
                           "$CUDA_HOME/bin or /usr/local/cuda/bin; naiad builds cubins with "
                           "nvJitLink and has no disassembler of its own")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(bytes(cubin))
        args = [tool, "-sass", path] if os.path.basename(tool) == "cuobjdump" else \
            [tool, "-c", path]
        done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise CodegenError(f"{os.path.basename(tool)} failed ({done.returncode}): "
                           f"{done.stderr.strip()}")
    return done.stdout
