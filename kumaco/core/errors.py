"""The one exception type the pure core raises for bad user input, and how errors are shown.

Contract: every parser in the pure core (schedules, durations, selectors,
window ConfigMaps) raises :class:`InvalidInput` -- and nothing else -- for
input it does not accept. The message is meant for a human maintenance
manager: it says what is wrong, never carries a traceback, and never includes
more than a bounded excerpt of the offending value.

:func:`one_line` and :func:`error_text` are the only ways kumaco turns a
value or an error into text for a log field, an Event or a terminal: one
printable line, bounded in length.
"""

from __future__ import annotations

MAX_EXCERPT = 80
#: Longest error text kept in a log field or a report line.
MAX_ERROR_TEXT = 300


def excerpt(value: str, limit: int = MAX_EXCERPT) -> str:
    """Return ``value`` quoted and shortened to at most ``limit`` characters.

    Control characters are escaped so that an error message is always one
    printable line, whatever the user wrote.
    """
    shown = value if len(value) <= limit else value[:limit] + "..."
    return ascii(shown) if not shown.isprintable() else repr(shown)


def one_line(text: str) -> str:
    """``text`` as one printable line: control, format and separator characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def error_text(error: BaseException | str, limit: int = MAX_ERROR_TEXT) -> str:
    """An error (or its message) as one printable line of at most ``limit`` characters."""
    text = one_line(error if isinstance(error, str) else str(error) or type(error).__name__)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class InvalidInput(ValueError):
    """A user-supplied value is not acceptable; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
