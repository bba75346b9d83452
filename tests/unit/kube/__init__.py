"""Unit tests of kumaco.kube, the I/O edge, at the kube seam."""
