"""Unit tests of the core's windows layer: the window format, occurrences, daylight saving,
node selectors in a window.
"""
