"""Unit tests of kumaco.core.labels: label selectors as the kube-apiserver reads them."""
