"""A small tools package for the discovery tests (not a test module itself)."""
