"""Entry points and wiring: settings from flags and environment, ``kumaco run``'s runner,
logs/metrics/probes, and the ``kumaco`` and ``kubectl kumaco`` command lines.

The top layer: it may import every other layer; nothing imports it.
"""
