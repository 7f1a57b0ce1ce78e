"""What ``triton._C`` (Triton's C++ extension) resolves to under ``naiad run``: only
:mod:`.libtriton`'s vendor BLAS handles that Triton's tutorials import."""
