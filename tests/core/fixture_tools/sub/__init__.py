"""A nested package."""
