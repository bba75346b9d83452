"""Unit tests of kumaco.core.time and kumaco.core.golang: instants, durations, zones, cron
schedules.
"""
