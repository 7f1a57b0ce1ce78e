"""AMD backend: ir (see docs/writing-a-backend.md for the folder shape)."""
