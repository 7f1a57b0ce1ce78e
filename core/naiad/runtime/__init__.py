"""naiad's runtime: @jit functions, launches, caches, autotuning and target selection."""
