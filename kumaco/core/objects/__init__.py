"""The cluster objects kumaco keeps: a Node, Pods and their budgets, a Lease.

Contract: pure views and codecs over decoded JSON/YAML; they never raise on malformed
objects. Imports :mod:`kumaco.core.labels`, :mod:`kumaco.core.time` and below, never the
windows or the planning.
"""
