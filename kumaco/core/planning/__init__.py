"""The planning: windows + nodes + an instant + a policy -> each node's desired conditions.

Contract: pure. :func:`kumaco.core.planning.planner.plan` is the entry point; ``policy``
holds the vocabulary and the ``Rule`` interface, the rules each live in their own
module. The top layer of the core: it may import every other part, nothing imports it
from inside the core.
"""
