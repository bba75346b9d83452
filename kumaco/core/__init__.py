"""The pure core: kumaco's whole meaning, as functions of their inputs and ``now``.

Schedules (robfig-exact cron), Go durations, label selectors, windows and
their occurrences, node views, ConfigMaps and manifests, and the planner that
turns windows + nodes + an instant + a policy into each node's desired
conditions (and the writes that get there).

Subpackages, in layers (each imports only those below it; enforced by
import-linter's core-layers contract): ``planning`` > ``windows`` >
``objects`` > ``labels`` | ``time`` > ``golang`` > ``errors``.

Contract: no I/O, no clock reads, no threads; it imports nothing of kumaco
outside ``kumaco.core`` and neither ``kubernetes`` nor a network, process or
HTTP module (enforced by import-linter, ``.importlinter``). Bad user input
raises :class:`kumaco.core.errors.InvalidInput` and nothing else.
"""
