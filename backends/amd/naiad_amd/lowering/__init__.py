"""LLVM lowering owned by the AMD backend: one MFMA/WMMA issue (``TargetInfo.matrix_multiply``)."""
