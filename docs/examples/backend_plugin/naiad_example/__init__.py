"""naiad's example out-of-tree backend (target ``example``): see README.md next to this package."""
