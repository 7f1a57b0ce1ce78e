"""LLVM lowering owned by the AMD backend: the AMDGPU math library and its llvmlite helpers, and one
MFMA/WMMA issue (``TargetInfo.matrix_multiply``)."""
