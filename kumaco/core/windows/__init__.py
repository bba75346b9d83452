"""Maintenance windows: their ConfigMap format, when one is open, and where they come from.

Holds the window and its format, its days of the month and daylight-saving notes,
ceilings (the `N`/`P%` syntax of window budgets), the ConfigMaps and the manifests they
are read from.

Contract: pure; the parsers return an invalid window or raise
:class:`~kumaco.core.errors.InvalidInput`, nothing else. Imports
:mod:`kumaco.core.objects` and below, never the planning.
"""
