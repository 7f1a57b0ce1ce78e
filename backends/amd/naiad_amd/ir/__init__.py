"""IR extensions of the AMD backend: backend ops and their verifiers, the ``#amd_mfma`` /
``#amd_wmma`` layouts and the matrix instruction table the core's ``accelerate_matmul`` reads."""
