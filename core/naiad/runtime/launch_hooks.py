"""``observer``: None, or ``fn(jit_function, grid, launch) -> launch`` that ``kernel[grid]``
passes its launch through (``naiad.profiler`` with ``hook="triton"`` times every launch).
A module attribute read once per ``kernel[grid]``: nothing is added to a launch without it."""
observer = None
