"""NVIDIA GPU-IR extensions: the ``#nvidia_mma`` layout, the ``nvidia.mma`` op and the ldmatrix plan."""
