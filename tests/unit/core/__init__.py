"""Unit tests of the pure core, one folder per layer of kumaco.core."""
