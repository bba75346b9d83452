"""Migrations from other tools' configurations to kumaco's: kured v1's schedule as windows.

Contract: pure like the core (no I/O, no clock, ``now`` passed in); imports only
:mod:`kumaco.core`. The commands (``kumaco convert``) and the views (its output) use it;
it never reaches the API server.
"""
