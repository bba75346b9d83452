"""The I/O edge: every byte kumaco exchanges with the Kubernetes API passes through here.

Credentials and kubeconfig, the HTTP client, the one retry policy, reflectors
(list-then-watch), Lease election and Events. The only layer that imports
``kubernetes``; it may import :mod:`kumaco.core` and nothing above it.
"""
