"""Reference implementations kept for the tests only: Go's calendar functions, robfig's
``SpecSchedule.Next`` replayed line by line, and kured v1's ``TimeWindow.Contains``.

These are the executable specifications that kumaco's optimised code is checked
against (:func:`kumaco.core.time.schedule.Schedule.next_fire` must agree with
:func:`next_reference` everywhere); the shipped package does not need them.
Go's calendar functions here are themselves checked against Go by
``tests/unit/core/time/test_gotime.py``.
"""

from __future__ import annotations

from typing import NamedTuple

from kumaco.core.golang import gotime
from kumaco.core.golang.gotime import SECONDS_PER_DAY, Location, civil_from_days, days_from_civil
from kumaco.core.time.cronfields import STAR
from kumaco.core.time.schedule import Schedule


class Wall(NamedTuple):
    """Wall-clock reading of an instant in a zone (``weekday``: Sunday is 0)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int


def wall(t: int, loc: Location) -> Wall:
    """Go's ``t.Date()``, ``t.Clock()`` and ``t.Weekday()`` in ``loc``."""
    local = t + loc.lookup(t)[0]
    days, sod = divmod(local, SECONDS_PER_DAY)
    y, m, d = civil_from_days(days)
    return Wall(y, m, d, sod // 3600, sod // 60 % 60, sod % 60, (days + 4) % 7)


def date(
    loc: Location, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> int:
    """Go's ``time.Date(year, month, day, hour, minute, second, 0, loc)`` as Unix seconds."""
    year, m0 = year + (month - 1) // 12, (month - 1) % 12
    local = (
        days_from_civil(year, m0 + 1, 1) * SECONDS_PER_DAY
        + (day - 1) * SECONDS_PER_DAY
        + hour * 3600
        + minute * 60
        + second
    )
    offset, start, end = loc.lookup(local)
    if offset != 0:
        utc = local - offset
        if utc < start or utc >= end:
            offset = loc.lookup(utc)[0]
        local -= offset
    return local


def add_date(t: int, loc: Location, years: int, months: int, days: int) -> int:
    """Go's ``t.AddDate(years, months, days)`` for ``t`` in ``loc``."""
    w = wall(t, loc)
    return date(loc, w.year + years, w.month + months, w.day + days, w.hour, w.minute, w.second)


def next_reference(s: Schedule, after: int) -> int | None:
    """Replay robfig's ``SpecSchedule.Next`` line by line (the executable spec).

    Slow but obviously faithful; :meth:`Schedule.next_fire` must agree with it everywhere.
    """
    loc = s.location
    day_and = bool((s.dom | s.dow) & STAR)

    def day_matches(w: Wall) -> bool:
        dom_ok = s.dom >> w.day & 1
        dow_ok = s.dow >> w.weekday & 1
        return bool(dom_ok and dow_ok) if day_and else bool(dom_ok or dow_ok)

    def next_day(t0: int, n: int) -> int:
        t = add_date(t0, loc, 0, 0, n)
        w = wall(t, loc)
        if w.hour != 0:
            t += (24 - w.hour) * 3600 if w.hour > 12 else -w.hour * 3600
        return t

    t = after + 1
    year_limit = wall(t, loc).year + 5
    added = False
    while True:
        w = wall(t, loc)
        if w.year > year_limit:
            return None
        wrapped = False
        while not s.month >> w.month & 1:
            if not added:
                added = True
                t = date(loc, w.year, w.month, 1)
            prev, t, n = t, add_date(t, loc, 0, 1, 0), 1
            while t <= prev:  # robfig loops forever here (module docstring)
                n += 1
                t = add_date(prev, loc, 0, n, 0)
            w = wall(t, loc)
            if w.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not day_matches(w):
            if not added:
                added = True
                t = date(loc, w.year, w.month, w.day)
            prev, t, n = t, next_day(t, 1), 1
            while t <= prev:  # robfig loops forever here (module docstring)
                n += 1
                t = next_day(prev, n)
            w = wall(t, loc)
            if w.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not s.hour >> w.hour & 1:
            if not added:
                added = True
                t = date(loc, w.year, w.month, w.day, w.hour)
            t += 3600
            w = wall(t, loc)
            if w.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not s.minute >> w.minute & 1:
            if not added:
                added = True
                t = gotime.truncate(t, 60)
            t += 60
            w = wall(t, loc)
            if w.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while w.second != 0:
            if not added:
                added = True
                t = gotime.truncate(t, 1)
            t += 1
            w = wall(t, loc)
            if w.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return t


def kured_contains(
    days: frozenset[int],
    start: tuple[int, int, int, int],
    end: tuple[int, int, int, int],
    loc: Location,
    t: int,
) -> bool:
    """kured v1's ``TimeWindow.Contains(t)`` (pkg/timewindow, unchanged since 1.6.0), ``t`` in ns.

    Read from kured's source and written again here, step by step: the instant's weekday
    in the zone must be a reboot day; start and end are ``time.Date`` of the instant's
    local date at the start's and the end's hour, minute and second, the end plus
    999999999 ns; when the start (hour, minute, second, nanosecond) is after the end, the
    start moves 24 h back if the instant is before the end, else the end 24 h on; the
    instant is in when start <= t <= end.
    """
    second = t // 1_000_000_000
    w = wall(second, loc)
    if w.weekday not in days:
        return False
    ns = 1_000_000_000
    lo = date(loc, w.year, w.month, w.day, *start[:3]) * ns
    hi = date(loc, w.year, w.month, w.day, *end[:3]) * ns + ns - 1
    if start > end:
        if t < hi:
            lo -= 24 * 3600 * ns
        else:
            hi += 24 * 3600 * ns
    return lo <= t <= hi
