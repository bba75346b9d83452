"""Dates and date-times a maintenance manager writes in a window: one instant, read in a zone.

Contract
--------
:func:`looks_dated` says whether a ``startTime`` is meant as a date-time (it begins
with ``YYYY-MM-DD``; no cron field can). :func:`parse_local_instant` reads an RFC 3339
date-time (``2027-01-15T02:00:00+01:00``, ``...Z``) as the instant it names, or one
without an offset (``2027-01-15T02:00:00``, seconds optional) as a wall-clock time in
the given zone; with ``date_allowed`` a date alone (``2027-02-01``) is its midnight in
that zone. Only ASCII digits, and only Go's white space around it (as around cron
fields). A wall-clock
time the zone skips (a spring-forward gap) or passes twice (a fall-back overlap) is
refused with the ways to write it: kumaco never guesses which instant was meant. Years
1678 to 2261 (kumaco's instants are int64 nanoseconds, as Go's).

Every rejection raises :class:`~kumaco.core.errors.InvalidInput` with the reason and the
fix; the result is Unix seconds. Pure: no clock, no I/O beyond the zone data.
"""

from __future__ import annotations

import datetime as dt
import re

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.time.cronfields import GO_SPACE
from kumaco.core.time.zones import load_zone

__all__ = ["EARLIEST_YEAR", "LATEST_YEAR", "looks_dated", "parse_local_instant"]

EARLIEST_YEAR = 1678
LATEST_YEAR = 2261

_DATE = r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
_TIME = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?P<frac>\.[0-9]+)?)?"
_OFFSET = r"(?P<off>[Zz]|[+-][0-9]{2}:[0-9]{2})?"
_DATE_TIME = re.compile(rf"{_DATE}(?:[Tt ]{_TIME}{_OFFSET})?")
_LOOKS_DATED = re.compile(f"[{re.escape(GO_SPACE)}]*[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}")
_EXAMPLE = "2027-01-15T02:00:00+01:00"


def looks_dated(text: str) -> bool:
    """Whether ``text`` is written as a date (``2027-...``), not as cron fields."""
    return bool(_LOOKS_DATED.match(text))


def _offset(text: str) -> dt.timezone:
    if text in ("Z", "z"):
        return dt.UTC
    sign = -1 if text[0] == "-" else 1
    hours, minutes = int(text[1:3]), int(text[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError(text)
    return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))


def _local(naive: dt.datetime, zone_name: str, shown: str) -> int:
    """The one instant the wall-clock time ``naive`` names in ``zone_name``."""
    zone = load_zone(zone_name)
    early = naive.replace(tzinfo=zone, fold=0)
    late = naive.replace(tzinfo=zone, fold=1)
    a, b = early.astimezone(dt.UTC), late.astimezone(dt.UTC)
    if a == b:
        return int(a.timestamp())

    def written(instant: dt.datetime) -> str:
        local = instant.astimezone(zone)
        return local.isoformat(timespec="seconds")

    back = a.astimezone(zone).replace(tzinfo=None)
    if back != naive:  # the zone skips this wall-clock time
        raise InvalidInput(
            f"{excerpt(shown)} does not exist in {zone_name}: the clocks move forward over "
            f"it; write a time after the change, e.g. {written(a)}"
        )
    first, second = sorted((a, b))
    raise InvalidInput(
        f"{excerpt(shown)} happens twice in {zone_name} (the clocks go back): write its "
        f"offset, {written(first)} for the first or {written(second)} for the second"
    )


def parse_local_instant(text: str, zone_name: str, *, date_allowed: bool = False) -> int:
    """The instant (Unix seconds) ``text`` names, a time without an offset read in ``zone_name``.

    Raises :class:`InvalidInput` naming the fix for anything else.
    """
    stripped = text.strip(GO_SPACE)  # the white space cron fields may have around them
    m = _DATE_TIME.fullmatch(stripped)
    what = "an RFC 3339 date-time" + (" or a date" if date_allowed else "")
    if m is None:
        raise InvalidInput(f"{excerpt(text)} is not {what} such as {_EXAMPLE}")
    if m["h"] is None and not date_allowed:
        raise InvalidInput(
            f"{excerpt(text)} is a date without a time: write its start, e.g. "
            f"{stripped}T00:00:00 (read in the window's zone)"
        )
    if m["frac"]:
        raise InvalidInput(
            f"{excerpt(text)} has a fraction of a second; windows start on whole seconds"
        )
    year = int(m["y"])
    if not EARLIEST_YEAR <= year <= LATEST_YEAR:
        raise InvalidInput(
            f"{excerpt(text)} is outside the years {EARLIEST_YEAR} to {LATEST_YEAR} kumaco handles"
        )
    try:
        naive = dt.datetime(
            year,
            int(m["mo"]),
            int(m["d"]),
            int(m["h"] or 0),
            int(m["mi"] or 0),
            int(m["s"] or 0),
        )
        zone = _offset(m["off"]) if m["off"] else None
    except ValueError:
        raise InvalidInput(
            f"{excerpt(text)} is not a valid {'date' if m['h'] is None else 'date-time'} "
            f"(month 01-12, day within the month, hour 00-23, minute and second 00-59)"
        ) from None
    if zone is not None:
        return int(naive.replace(tzinfo=zone).timestamp())
    return _local(naive, zone_name, stripped)
