"""The CUDA side: driver wrapper, launcher, device arrays and event timing."""
