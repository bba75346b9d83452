"""Time as kumaco reads it: instants, Go durations, zones, robfig-exact cron schedules.

Contract: pure (the tzdata package is the only file read, in ``zones``). Imports only
:mod:`kumaco.core.golang` and :mod:`kumaco.core.errors`; independent of
:mod:`kumaco.core.labels`.
"""
