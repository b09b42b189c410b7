"""editors package."""
