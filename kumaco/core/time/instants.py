"""Instants: kumaco's one representation of time, and its text forms.

Contract: an *instant* is an integer of nanoseconds since the Unix epoch
(UTC). :func:`format_instant` writes one as RFC 3339 UTC to the second, as
Kubernetes does (:func:`format_exact_instant` to the microsecond, rounded up),
always with a four-digit year (``0001-01-01T00:00:00Z``); either is total: an
instant past the years 1 to 9999 RFC 3339 can write is written in the same form
with its own year (``10000-...``) rather than failing;
:func:`parse_timestamp` reads a timestamp the API server or a file gave (``None``
when absent or malformed: it is data, not user input);
:func:`parse_time` reads a time a person typed on a command line and raises
:class:`~kumaco.core.errors.InvalidInput` saying how to write it. Nothing here
reads a clock: ``now`` is always passed in.
"""

from __future__ import annotations

import datetime as dt

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.time.durations import SECOND

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_instant(moment: dt.datetime) -> int:
    """An aware datetime as an instant (microsecond precision, as datetime has)."""
    return ((moment - _EPOCH) // dt.timedelta(microseconds=1)) * 1000


def to_datetime(t: int) -> dt.datetime:
    """An instant as an aware UTC datetime (microsecond precision)."""
    return _EPOCH + dt.timedelta(microseconds=t // 1000)


#: The Gregorian calendar repeats every 400 years, which are this many seconds.
_CYCLE = 146097 * 24 * 3600


def _civil(seconds: int, micros: int | None) -> str:
    """``seconds`` since the epoch (plus ``micros``) as RFC 3339 UTC, year padded to four.

    The instant is moved by whole 400-year cycles into the years datetime keeps, so any
    integer formats; the cycles are added back to the year.
    """
    cycles, rest = divmod(seconds, _CYCLE)
    m = _EPOCH + dt.timedelta(seconds=rest)
    text = (
        f"{m.year + 400 * cycles:04d}-{m.month:02d}-{m.day:02d}"
        f"T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
    )
    return text + ("Z" if micros is None else f".{micros:06d}Z")


def format_instant(t: int) -> str:
    """Format an instant as RFC 3339 UTC with ``Z``, to the second (as Kubernetes does)."""
    return _civil(t // SECOND, None)


def format_exact_instant(t: int) -> str:
    """An instant as RFC 3339 UTC with microseconds, rounded up (never earlier than ``t``).

    A timestamp with a fraction is taken as exact (:func:`kumaco.core.planning.rules.transitioned`);
    the forecast stamps its simulated writes so, where Kubernetes keeps whole seconds.
    """
    seconds, micros = divmod(-(-t // 1000), 10**6)
    return _civil(seconds, micros)


def parse_timestamp(text: str | None) -> int | None:
    """An RFC 3339 timestamp as an instant, or None if absent or malformed."""
    if not text:
        return None
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return to_instant(parsed)


def parse_time(text: str) -> int:
    """A time a person typed: RFC 3339 with an offset (``Z`` or ``+hh:mm``), or a date.

    A date alone (``2027-03-20``) means its midnight in UTC.
    """
    stripped = text.strip()
    if len(stripped) == 10 and stripped[4] == "-" and stripped[7] == "-":
        try:
            day = dt.date.fromisoformat(stripped)
        except ValueError:
            raise InvalidInput(
                f"{excerpt(text)} is not a date such as 2027-03-20 (midnight UTC)"
            ) from None
        return to_instant(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC))
    try:
        parsed = dt.datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{excerpt(text)} is not an RFC 3339 time such as 2026-12-01T03:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(
            f"{excerpt(text)} has no UTC offset; write e.g. 2026-12-01T03:00:00Z "
            "(or +01:00 for an offset), or a date alone for its midnight UTC"
        )
    return to_instant(parsed)


def transitioned(text: str | None) -> int | None:
    """The latest instant a condition's transition can have happened at.

    Kubernetes writes ``lastTransitionTime`` to the second, truncated: a release at
    12:00:03.7 reads 12:00:03. Counting a release delay or an in-progress timeout
    from the end of that second (12:00:04) makes the delay never shorter, and the
    timeout never earlier, than configured. A timestamp with a fraction is exact.
    """
    t = parse_timestamp(text)
    if t is None or text is None or "." in text:
        return t
    return t + SECOND
