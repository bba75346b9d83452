"""Entry points and wiring: settings, the runner, logs/metrics/probes, the command lines.

Settings from flags and environment, ``kumaco run``'s runner, and the ``kumaco``
and ``kubectl kumaco`` command lines. The top layer: it may import every other
layer; nothing imports it.
"""
