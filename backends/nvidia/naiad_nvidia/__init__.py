"""naiad's NVIDIA backend: PTX via LLVM's NVPTX target, cubin via nvJitLink, launches via the
CUDA driver (cuda-python). Registered as the ``nvidia`` plugin of the ``naiad.backends`` group
(see :mod:`naiad_nvidia.plugin`); submodules import their heavy dependencies lazily."""
