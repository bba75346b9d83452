"""Unit tests of kumaco.core.objects: nodes, pod disruption budgets, the Lease codec."""
