"""AMD backend: passes (see docs/writing-a-backend.md for the folder shape)."""
