"""LLVM lowering of NVIDIA ops, predicated memory access and the NVPTX math library."""
