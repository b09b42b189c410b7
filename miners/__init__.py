"""miners package."""
