"""The one exception type the pure core raises for bad user input.

Contract: every parser in the pure core (schedules, durations, selectors,
window ConfigMaps) raises :class:`InvalidInput` -- and nothing else -- for
input it does not accept. The message is meant for a human maintenance
manager: it says what is wrong, never carries a traceback, and never includes
more than a bounded excerpt of the offending value.
"""

from __future__ import annotations

MAX_EXCERPT = 80


def excerpt(value: str, limit: int = MAX_EXCERPT) -> str:
    """Return ``value`` quoted and shortened to at most ``limit`` characters.

    Control characters are escaped so that an error message is always one
    printable line, whatever the user wrote.
    """
    shown = value if len(value) <= limit else value[:limit] + "..."
    return ascii(shown) if not shown.isprintable() else repr(shown)


class InvalidInput(ValueError):
    """A user-supplied value is not acceptable; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
