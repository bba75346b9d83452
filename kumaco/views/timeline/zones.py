"""Time zones in the timeline: wall times, zone abbreviations, and where a zone's offset changes.

Contract: pure functions of instants (ns since the epoch; converted by
:mod:`kumaco.core.time.instants`) and zones from ``tzdata``
(:func:`kumaco.core.time.schedule.load_zone`). :func:`local_time` and
:func:`format_local` give an instant's wall time in a zone (``03:00 CEST``);
:func:`abbreviation` names a wall time's offset (``UTC+03`` where tzdata has
no abbreviation); :func:`offset_text` writes an offset (``UTC+01:00``);
:func:`offset_shifts` finds, to the second, each instant of a range where a
zone's UTC offset or abbreviation changes. No clock.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from kumaco.core.time.durations import HOUR, SECOND
from kumaco.core.time.instants import to_datetime
from kumaco.core.time.zones import load_zone


def local_time(t: int, zone_name: str) -> dt.datetime:
    """Instant ``t`` (ns) as an aware datetime in zone ``zone_name`` (from ``tzdata``)."""
    return to_datetime(t).astimezone(load_zone(zone_name))


def format_local(t: int, zone_name: str, *, date: bool = True) -> str:
    """``2026-03-29 03:00 CEST`` (or ``03:00 CEST``): wall time and abbreviation in the zone."""
    d = local_time(t, zone_name)
    text = f"{d:%H:%M} {abbreviation(d)}"
    return f"{d:%Y-%m-%d} {text}" if date else text


def abbreviation(d: dt.datetime) -> str:
    """The zone abbreviation of aware ``d`` (``CEST``), ``UTC+03`` where tzdata has none."""
    name = d.tzname() or ""
    if name and name[0] in "+-":  # tzdata writes "+03" where a zone has no abbreviation
        return "UTC" + name
    return name or "UTC"


def offset_text(offset: dt.timedelta) -> str:
    """A UTC offset as ``UTC+01:00``."""
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(minutes), 60)
    return f"UTC{sign}{h:02d}:{m:02d}"


@dataclass(frozen=True)
class Shift:
    """A change of offset at ``at``: the wall times a second before and at it."""

    at: int
    before: dt.datetime
    after: dt.datetime


def offset_shifts(zone: ZoneInfo, start: int, until: int) -> list[Shift]:
    """Instants in ``[start, until]`` where ``zone``'s UTC offset (or abbreviation) changes."""

    def offset(t: int) -> tuple[dt.timedelta | None, str | None]:
        d = to_datetime(t).astimezone(zone)
        return d.utcoffset(), d.tzname()

    step = max(6 * HOUR, (until - start) // 20_000)
    shifts: list[Shift] = []
    t, current = start, offset(start)
    while t < until:
        nxt = min(t + step, until)
        seen = offset(nxt)
        if seen != current:
            lo, hi = t // SECOND, -(-nxt // SECOND)
            while hi - lo > 1:  # first second at which the new offset holds
                mid = (lo + hi) // 2
                if offset(mid * SECOND) == current:
                    lo = mid
                else:
                    hi = mid
            at = hi * SECOND
            before, after = to_datetime(at - SECOND), to_datetime(at)
            shifts.append(Shift(at, before.astimezone(zone), after.astimezone(zone)))
            current = seen
        t = nxt
    return shifts
