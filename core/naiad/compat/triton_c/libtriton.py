"""Stand-ins for ``triton._C.libtriton.nvidia.cublas.CublasLt`` and
``triton._C.libtriton.amd.hipblas.HipblasLt``, the vendor-BLAS handles tutorial 09 benchmarks
against: ``Blas(workspace).matmul(a, b, c)`` writes ``c = a @ b.T`` (``b`` given as N x K).

naiad ships no cuBLAS/hipBLAS binding. The stand-in computes with ``torch.matmul`` on the
tensors' device, which on a CUDA/ROCm device is cuBLAS/hipBLAS(Lt) through torch: the same
library the tutorial compares with, called by torch's heuristics instead of Triton's direct
cublasLt call (so its time is torch's cuBLAS time). fp8 inputs -- which Triton's binding
takes -- are an error naming this limit, not a silently different computation.
"""
from __future__ import annotations

from types import SimpleNamespace


class _TorchBlas:
    """``matmul(a, b, c)``: ``c = a @ b.T`` by ``torch.matmul`` (see the module docstring)."""

    library = "BLAS"

    def __init__(self, workspace=None):
        self.workspace = workspace

    def matmul(self, a, b, c) -> None:
        import torch

        supported = (torch.float16, torch.bfloat16, torch.float32)
        if a.dtype not in supported or b.dtype not in supported:
            raise TypeError(f"naiad's {type(self).__name__} stand-in (torch.matmul) takes "
                            f"float16/bfloat16/float32, not {a.dtype}/{b.dtype}: naiad has no "
                            f"{self.library} binding of its own for fp8")
        if a.shape[1] != b.shape[1] or tuple(c.shape) != (a.shape[0], b.shape[0]):
            raise ValueError(f"matmul(a, b, c) computes c = a @ b.T: shapes {tuple(a.shape)}, "
                             f"{tuple(b.shape)}, {tuple(c.shape)} do not fit")
        c.copy_(torch.matmul(a, b.T))


class CublasLt(_TorchBlas):
    library = "cuBLAS"


class HipblasLt(_TorchBlas):
    library = "hipBLAS"


nvidia = SimpleNamespace(cublas=SimpleNamespace(CublasLt=CublasLt))
amd = SimpleNamespace(hipblas=SimpleNamespace(HipblasLt=HipblasLt))
