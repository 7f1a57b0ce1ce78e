"""AMD GPU-IR extensions: backend ops and their verifiers."""
