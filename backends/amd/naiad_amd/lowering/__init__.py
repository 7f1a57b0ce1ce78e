"""AMD lowering helpers: the AMDGPU math library and its llvmlite helpers."""
