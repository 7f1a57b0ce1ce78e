"""AMD backend: lowering (see docs/writing-a-backend.md for the folder shape)."""
