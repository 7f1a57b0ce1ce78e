"""Host-side helpers with Triton's module paths (``naiad.tools.tensor_descriptor``)."""
