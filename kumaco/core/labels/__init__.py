"""Kubernetes label selectors as the kube-apiserver reads them, and an index over labels.

Contract: pure, immutable values. Imports only :mod:`kumaco.core.golang` and
:mod:`kumaco.core.errors`; independent of :mod:`kumaco.core.time`.
"""
