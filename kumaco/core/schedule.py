"""Cron ``startTime`` schedules with exactly robfig/cron v3's semantics.

Contract
--------
:func:`parse_schedule` accepts what ``cron.ParseStandard`` (robfig/cron
v3.0.1) accepts and :meth:`Schedule.next_fire` returns what
``SpecSchedule.Next`` returns, instant for instant; both are checked
differentially against the real Go module (``hack/oracle``). Deliberate
deviations:

* no ``CRON_TZ=``/``TZ=`` prefix means UTC (robfig: ``time.Local``);
* the zone name ``Local`` is rejected: a controller must not depend on the
  ``TZ`` of its container;
* ``@every <duration>`` is rejected: it has no anchor in time;
* zones come only from the ``tzdata`` package, by their canonical names
  (robfig also finds ``posixrules``, ``right/...``, ``America//New_York``
  and the like in the host's ``/usr/share/zoneinfo``);
* a missing space after a zone prefix is an error (robfig panics);
* where robfig's day (or month) step does not move the time forward at all
  -- Go's ``Date`` maps a calendar day skipped by a date-line change
  (Kwajalein 1993-08-21, Kiribati 1994-12-31, Apia and Fakaofo 2011-12-30)
  back onto the day before -- robfig's ``Next`` loops forever; kumaco steps
  on by one more day (month) until the time moves, so it answers where
  robfig never returns.

Every rejection raises :class:`kumaco.core.errors.InvalidInput` -- never any other
exception, whatever the text -- with a one-line message naming the field (or
the zone, or the descriptor) and a bounded excerpt of the offending token.

Grammar as robfig implements it (quirks included)
-------------------------------------------------
* An optional prefix ``TZ=<zone> `` or ``CRON_TZ=<zone> ``: the zone is the
  text between the first ``=`` and the first ASCII space; ``TZ= `` (empty
  zone) is UTC. Only *after* a prefix is the rest trimmed of white space.
* A rest starting with ``@`` is a descriptor, compared as an exact string:
  ``@yearly @annually @monthly @weekly @daily @midnight @hourly``.
* Otherwise exactly five fields -- minute 0-59, hour 0-23, day of month 1-31,
  month 1-12 or ``jan``..``dec``, day of week 0-6 or ``sun``..``sat`` (7 is
  out of range) -- separated by runs of Unicode White_Space as Go's
  ``strings.Fields`` sees it (U+001C..U+001F are *not* separators).
* A field is a comma list; empty items are dropped, so ``1,,2`` is valid and
  ``,`` is an empty set (a schedule that never fires, see
  :attr:`Schedule.never_fires`).
* An item is ``range[/step]``. ``*`` and ``?`` mean the whole range in *any*
  field and set a "star" flag; anything after a hyphen following them is
  ignored (``*-5`` is ``*``). Otherwise ``n`` or ``n-m`` where each end is a
  Go ``strconv.Atoi`` integer (optional ``+``, ASCII digits only, any number
  of leading zeros, at most int64) or, for month and day of week, a name
  lower-cased with Go's simple case mapping (``FRİ`` with U+0130 is Friday).
  A ``-`` always splits the range, so only a step can be negative, and is
  rejected. ``n/step`` means ``n-max/step``; a step of 0 is an error; a
  step above 1 clears the star flag, ``*/1`` keeps it.
* Day matching: if the day-of-month or the day-of-week field carries the
  star flag, both must match (AND); otherwise either may (OR). So
  ``0 0 1-31 * mon`` fires daily, ``0 0 * * mon`` only on Mondays.

Next, and what it does around DST (confirmed against the oracle)
---------------------------------------------------------------
``next_fire`` replays robfig's field-by-field search in the schedule's zone
(month, then day, then hour, minute, second; a wrap-around restarts the
search; at most five years ahead, else ``None``), using :mod:`kumaco.core.gotime`
for Go's ``Date``/``AddDate``/``Truncate``. Observable consequences:

* a wall-clock time inside a spring-forward gap does not fire that day
  (``30 2 * * *`` in New York skips 2024-03-10; Lord Howe's 30-minute gap
  swallows ``15 2`` likewise);
* in a fall-back overlap it fires once per offset: ``30 1 * * *`` in New
  York fires at 01:30 EDT *and* at 01:30 EST on 2024-11-03;
* where midnight itself is skipped (Sao Paulo, 2018-11-04 00:00 -> 01:00),
  ``0 0 * * *`` does not fire that day, while ``0 1 * * *`` fires at 01:00
  (robfig's day loop corrects Go's ``Date`` landing at 23:00 the day
  before); Kathmandu's 15-minute gap at 1986-01-01 00:00 takes
  ``*/10 * * * *`` from 23:50 straight to 00:20;
* a schedule that matches only on February 29 returns ``None`` when the
  next one is more than five years away (from late 2096: 2100 is no leap
  year).

:meth:`Schedule.next_fire` reads no clock and does no I/O; zone data is
read from the ``tzdata`` package once per zone and cached.
"""

from __future__ import annotations

import functools
import importlib.resources
import io
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from kumaco.core import gotime
from kumaco.core.errors import InvalidInput, excerpt

__all__ = ["Schedule", "load_zone", "parse_schedule"]

#: robfig's flag bit: the field was written as ``*`` or ``?`` (step <= 1).
STAR = 1 << 63

#: Unicode White_Space, as Go's ``unicode.IsSpace`` (``strings.Fields``/``TrimSpace``).
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_FIELD_RE = re.compile(f"[^{re.escape(GO_SPACE)}]+")
_INT_RE = re.compile(r"([+-]?)([0-9]+)")
_ZONE_NAME_RE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
# Go's strings.ToLower maps these to ASCII letters too (simple case mapping).
_GO_LOWER = str.maketrans(
    {**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}, "\u0130": "i", "\u212a": "k"}
)
_INT64_MAX = (1 << 63) - 1
_MAX_ZONE_NAME = 128
_DAYS_IN_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # Feb: 29 in leap years


class _Bounds(NamedTuple):
    field: str
    lo: int
    hi: int
    names: Mapping[str, int] | None


_MINUTE = _Bounds("minute", 0, 59, None)
_HOUR = _Bounds("hour", 0, 23, None)
_DOM = _Bounds("day of month", 1, 31, None)
_MONTH = _Bounds(
    "month",
    1,
    12,
    {
        name: i + 1
        for i, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
        )
    },
)
_DOW = _Bounds(
    "day of week",
    0,
    6,
    {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)
_FIELDS = (_MINUTE, _HOUR, _DOM, _MONTH, _DOW)


def _span(lo: int, hi: int) -> int:
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


_EVERY = {b.field: _span(b.lo, b.hi) | STAR for b in _FIELDS}
_FIRST = {b.field: 1 << b.lo for b in _FIELDS}
#: Descriptor -> (minute, hour, day of month, month, day of week) bit sets.
_DESCRIPTORS: dict[str, tuple[int, int, int, int, int]] = {}
for _names, _free in (
    (("@yearly", "@annually"), ("day of week",)),
    (("@monthly",), ("month", "day of week")),
    (("@weekly",), ("day of month", "month")),
    (("@daily", "@midnight"), ("day of month", "month", "day of week")),
    (("@hourly",), ("hour", "day of month", "month", "day of week")),
):
    _bits = tuple(_EVERY[b.field] if b.field in _free else _FIRST[b.field] for b in _FIELDS)
    for _name in _names:
        _DESCRIPTORS[_name] = (_bits[0], _bits[1], _bits[2], _bits[3], _bits[4])

_FIELDS_HINT = "minute hour day-of-month month day-of-week"
_EVERY_MESSAGE = (
    "@every has no anchor in time, so it cannot describe a maintenance window; "
    'use a cron schedule such as "0 */6 * * *" (every six hours, on the hour) instead'
)


# ---------------------------------------------------------------------------
# Zones


@functools.cache
def _zone_names() -> frozenset[str]:
    text = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def _canonical_zone(name: str) -> str:
    """Validate a zone name; ``""`` is UTC as in Go's ``LoadLocation``."""
    if name == "Local":
        raise InvalidInput(
            'time zone "Local" is not allowed: it would mean whatever zone the '
            "controller's container runs in; name the zone, for example "
            '"Europe/Berlin" or "UTC"'
        )
    if name in ("", "UTC"):
        return "UTC"
    if len(name) > _MAX_ZONE_NAME or not _ZONE_NAME_RE.fullmatch(name) or name not in _zone_names():
        raise InvalidInput(
            f"unknown time zone {excerpt(name)}: expected an IANA time zone name "
            'such as "Europe/Berlin" or "UTC"'
        )
    return name


@functools.cache
def _zone_bytes(name: str) -> bytes:
    # ``name`` is in the tzdata package's own list of zones, and matched
    # _ZONE_NAME_RE: no "..", no leading "/", only path components.
    resource = importlib.resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    try:
        return resource.read_bytes()
    except OSError as err:  # pragma: no cover - a broken tzdata installation
        raise InvalidInput(f"time zone {excerpt(name)} cannot be loaded: {err}") from None


@functools.cache
def _cached_zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo.from_file(io.BytesIO(_zone_bytes(name)), key=name)


@functools.cache
def _cached_location(name: str) -> gotime.Location:
    if name == "UTC":
        return gotime.UTC
    try:
        return gotime.location_from_tzif(name, _zone_bytes(name))
    except gotime.TZifError as err:  # pragma: no cover - a broken tzdata installation
        raise InvalidInput(f"time zone {excerpt(name)} cannot be loaded: {err}") from None


def load_zone(name: str) -> zoneinfo.ZoneInfo:
    """Return the zone ``name`` from the ``tzdata`` package (never the host's files).

    ``""`` and ``"UTC"`` are UTC, as in Go's ``time.LoadLocation``; ``"Local"``
    and names that are not zones of the ``tzdata`` package raise
    :class:`InvalidInput`. Zones are loaded once and cached.
    """
    return _cached_zone(_canonical_zone(name))


def _location(name: str) -> tuple[str, gotime.Location]:
    canonical = _canonical_zone(name)
    return canonical, _cached_location(canonical)


# ---------------------------------------------------------------------------
# Parsing


def _go_atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi`` on a 64-bit platform; ``None`` if it fails."""
    m = _INT_RE.fullmatch(text)
    if m is None:
        return None
    digits = m.group(2).lstrip("0") or "0"
    if len(digits) > 19:
        return None
    value = int(digits)
    if m.group(1) == "-":
        value = -value
        return value if value >= -_INT64_MAX - 1 else None
    return value if value <= _INT64_MAX else None


def _number(text: str, b: _Bounds, expr: str, what: str) -> int:
    value = _go_atoi(text)
    if value is None:
        raise InvalidInput(f"{b.field}: {what} {excerpt(text)} is not a number in {excerpt(expr)}")
    if value < 0:
        raise InvalidInput(f"{b.field}: negative number {value} not allowed in {excerpt(expr)}")
    return value


def _number_or_name(text: str, b: _Bounds, expr: str) -> int:
    if b.names is not None:
        named = b.names.get(text.translate(_GO_LOWER))
        if named is not None:
            return named
    return _number(text, b, expr, "value")


def _parse_range(expr: str, b: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = 0
    if low_and_high[0] in ("*", "?"):
        start, end, star = b.lo, b.hi, STAR
    else:
        start = _number_or_name(low_and_high[0], b, expr)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number_or_name(low_and_high[1], b, expr)
        else:
            raise InvalidInput(f"{b.field}: too many hyphens in {excerpt(expr)}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], b, expr, "step")
        if len(low_and_high) == 1:
            end = b.hi  # "n/step" means "n-max/step"
        if step > 1:
            star = 0
    else:
        raise InvalidInput(f"{b.field}: too many slashes in {excerpt(expr)}")
    if start < b.lo:
        raise InvalidInput(f"{b.field}: {start} is below the minimum {b.lo} in {excerpt(expr)}")
    if end > b.hi:
        raise InvalidInput(f"{b.field}: {end} is above the maximum {b.hi} in {excerpt(expr)}")
    if start > end:
        raise InvalidInput(
            f"{b.field}: range starts at {start}, after its end {end}, in {excerpt(expr)}"
        )
    if step == 0:
        raise InvalidInput(f"{b.field}: step must be a positive number in {excerpt(expr)}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | star


def _parse_field(text: str, b: _Bounds) -> int:
    bits = 0
    for expr in text.split(","):
        if expr:
            bits |= _parse_range(expr, b)
    return bits


def parse_schedule(spec: str) -> Schedule:
    """Parse a ``startTime`` as robfig's ``cron.ParseStandard`` would (UTC by default).

    Raises :class:`InvalidInput` for anything robfig rejects, and for the
    deliberate deviations listed in the module documentation.
    """
    if not isinstance(spec, str):
        raise InvalidInput(f"schedule must be a string, not {type(spec).__name__}")
    if not spec:
        raise InvalidInput(
            f"schedule is empty: expected 5 fields ({_FIELDS_HINT}) or a descriptor such as @daily"
        )
    text = spec
    prefix_zone: str | None = None
    zone_name, location = "UTC", gotime.UTC
    if text.startswith(("TZ=", "CRON_TZ=")):
        space = text.find(" ")
        if space < 0:
            raise InvalidInput(
                f"time zone prefix in {excerpt(spec)} must be followed by a space and the schedule"
            )
        prefix_zone = text[text.find("=") + 1 : space]
        zone_name, location = _location(prefix_zone)
        text = text[space:].strip(GO_SPACE)
    if text.startswith("@"):
        if text.startswith("@every"):
            raise InvalidInput(f"{_EVERY_MESSAGE} (got {excerpt(text)})")
        bits = _DESCRIPTORS.get(text)
        if bits is None:
            raise InvalidInput(
                f"unrecognized descriptor {excerpt(text)}: expected one of "
                + ", ".join(_DESCRIPTORS)
            )
    else:
        fields = _FIELD_RE.findall(text)
        if len(fields) != len(_FIELDS):
            raise InvalidInput(
                f"expected 5 fields ({_FIELDS_HINT}), found {len(fields)} in {excerpt(text)}"
            )
        minute, hour, dom, month, dow = (
            _parse_field(f, b) for f, b in zip(fields, _FIELDS, strict=True)
        )
        bits = (minute, hour, dom, month, dow)
    return Schedule(
        source=spec,
        prefix_zone=prefix_zone,
        zone_name=zone_name,
        minute=bits[0],
        hour=bits[1],
        dom=bits[2],
        month=bits[3],
        dow=bits[4],
        location=location,
    )


# ---------------------------------------------------------------------------
# The schedule


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: robfig's ``SpecSchedule`` bit sets plus its zone.

    Bit ``v`` of a field is set when value ``v`` matches; :data:`STAR` marks
    a field written as ``*``/``?``. Seconds are always ``{0}``.
    """

    source: str
    prefix_zone: str | None
    zone_name: str
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: gotime.Location = field(repr=False, compare=False)

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        """The schedule's zone as a :class:`zoneinfo.ZoneInfo` (from ``tzdata``)."""
        return load_zone(self.zone_name)

    @functools.cached_property
    def never_fires(self) -> bool:
        """Whether no instant can ever match (static check; reads no clock).

        True when a field is an empty set (``,``), or when no day can match:
        e.g. ``0 0 30 2 *`` or ``0 0 31 4,6,9,11 *``. A schedule that matches
        only on February 29 does fire, though robfig's five-year search
        horizon can miss it (``next_fire`` then returns ``None``).
        """
        mask = STAR - 1
        if not (self.minute & mask and self.hour & mask and self.month & mask):
            return True
        weekdays = self.dow & mask
        if self.dom & STAR:
            return not weekdays
        dom_possible = any(
            self.month >> m & 1 and self.dom & ((2 << _DAYS_IN_MONTH[m]) - 1) for m in range(1, 13)
        )
        if self.dow & STAR:
            return not dom_possible
        return not (weekdays or dom_possible)

    def in_zone(self, name: str) -> Schedule:
        """The same schedule evaluated in zone ``name`` (``prefix_zone`` is kept as written).

        Raises :class:`InvalidInput` for ``"Local"`` and unknown zones; ``""``
        is UTC.
        """
        zone_name, location = _location(name)
        return replace(self, zone_name=zone_name, location=location)

    def next_fire(self, after: int) -> int | None:
        """First firing instant strictly after ``after`` (Unix seconds), as robfig computes it.

        Returns ``None`` where robfig's ``Next`` returns the zero time (no
        match within its five-year horizon).
        """
        if self.never_fires:  # robfig would search five years in vain
            return None
        return _next(self, after)


class _Offsets:
    """Go offset lookups with the last constant-offset interval cached."""

    __slots__ = ("end", "lookup", "off", "start")

    def __init__(self, location: gotime.Location) -> None:
        self.lookup = location.lookup
        self.off, self.start, self.end = 0, 1, 0  # empty: first call looks up

    def at(self, x: int) -> int:
        if not self.start <= x < self.end:
            self.off, self.start, self.end = self.lookup(x)
        return self.off

    def date(self, local: int) -> int:
        """Go's ``time.Date`` for a wall clock given as seconds since 1970-01-01 local."""
        at = self.at
        return local - at(local - at(local))


def _next_set(bits: int, after: int, limit: int) -> int:
    """Smallest ``v`` in ``(after, limit)`` whose bit is set, else ``limit``."""
    rest = (bits & ((1 << limit) - 1)) >> (after + 1)
    if not rest:
        return limit
    return after + (rest & -rest).bit_length()


_DAY = 86400


def _next(s: Schedule, after: int) -> int | None:
    """:func:`_next_reference`, with runs of identical steps taken in one jump.

    A jump is only taken where the zone offset is constant over the whole
    run (so every skipped step would have been a plain ``+60s``/``+1h``/
    ``+1 day`` that matched nothing), otherwise the step is replayed exactly.
    """
    oc = _Offsets(s.location)
    at, godate, civil = oc.at, oc.date, gotime.civil_from_days
    minute_bits, hour_bits, dom_bits, month_bits, dow_bits = s.minute, s.hour, s.dom, s.month, s.dow
    day_and = bool((dom_bits | dow_bits) & STAR)

    t = after + 1
    local = t + at(t)
    days, sod = divmod(local, _DAY)
    y, mo, d = civil(days)
    year_limit = y + 5
    added = False
    while True:  # robfig's WRAP label; (local, days, sod, y, mo, d) describe t here
        if y > year_limit:
            return None
        wrapped = False

        while not month_bits >> mo & 1:
            if not added:
                added = True
                t = godate(gotime.days_from_civil(y, mo, 1) * _DAY)
                local = t + at(t)
                days, sod = divmod(local, _DAY)
                y, mo, d = civil(days)
            # AddDate(0, n, 0): the same wall clock n months later, normalised by Date.
            prev, n = t, 1
            while True:
                m0 = mo - 1 + n
                t = godate(
                    (gotime.days_from_civil(y + m0 // 12, m0 % 12 + 1, 1) + d - 1) * _DAY + sod
                )
                if t > prev:
                    break
                n += 1  # robfig loops forever here (module docstring)
            local = t + at(t)
            days, sod = divmod(local, _DAY)
            y, mo, d = civil(days)
            if mo == 1:
                wrapped = True
                break
        if wrapped:
            continue

        while True:
            weekday = (days + 4) % 7
            if day_and:
                if dom_bits >> d & 1 and dow_bits >> weekday & 1:
                    break
            elif dom_bits >> d & 1 or dow_bits >> weekday & 1:
                break
            if not added:
                added = True
                t = godate(days * _DAY)
                local = t + at(t)
                days, sod = divmod(local, _DAY)
                y, mo, d = civil(days)
            if sod < 3600:
                # At hour 0 with a constant offset, each step is exactly +1 day.
                month_len = _month_length(y, mo)
                k = 1
                while d + k <= month_len:
                    wd = (days + k + 4) % 7
                    if day_and:
                        if dom_bits >> (d + k) & 1 and dow_bits >> wd & 1:
                            break
                    elif dom_bits >> (d + k) & 1 or dow_bits >> wd & 1:
                        break
                    k += 1
                at(t)  # oc.start/oc.end: t's constant-offset interval
                if k > 1 and oc.start <= min(t, local) and max(t, local) + k * _DAY < oc.end:
                    t += (k - 1) * _DAY
                    local += (k - 1) * _DAY
                    days += k - 1
                    d += k - 1
            prev, prev_local, n = t, local, 1
            while True:
                t = godate(prev_local + n * _DAY)  # AddDate(0, 0, n)
                local = t + at(t)
                days, sod = divmod(local, _DAY)
                hour = sod // 3600
                if hour != 0:
                    t += (24 - hour) * 3600 if hour > 12 else -hour * 3600
                    local = t + at(t)
                    days, sod = divmod(local, _DAY)
                if t > prev:
                    break
                n += 1  # robfig loops forever here (module docstring)
            y, mo, d = civil(days)
            if d == 1:
                wrapped = True
                break
        if wrapped:
            continue

        hour = sod // 3600
        while not hour_bits >> hour & 1:
            if not added:
                added = True
                t = godate(days * _DAY + hour * 3600)
                local = t + at(t)
                days, sod = divmod(local, _DAY)
                y, mo, d = civil(days)
                hour = sod // 3600
            k = _next_set(hour_bits, hour, 24) - hour
            at(t)  # oc.start/oc.end: t's constant-offset interval
            if k > 1 and oc.start <= t and t + k * 3600 < oc.end:
                t += (k - 1) * 3600
            t += 3600
            local = t + at(t)
            days, sod = divmod(local, _DAY)
            hour = sod // 3600
            if hour == 0:
                y, mo, d = civil(days)
                wrapped = True
                break
        if wrapped:
            continue
        y, mo, d = civil(days)

        minute = sod // 60 % 60
        while not minute_bits >> minute & 1:
            if not added:
                added = True
                t = gotime.truncate(t, 60)
                local = t + at(t)
                days, sod = divmod(local, _DAY)
                minute = sod // 60 % 60
            k = _next_set(minute_bits, minute, 60) - minute
            at(t)  # oc.start/oc.end: t's constant-offset interval
            if k > 1 and oc.start <= t and t + k * 60 < oc.end:
                t += (k - 1) * 60
            t += 60
            local = t + at(t)
            days, sod = divmod(local, _DAY)
            minute = sod // 60 % 60
            if minute == 0:
                wrapped = True
                break
        if wrapped:
            y, mo, d = civil(days)
            continue

        while sod % 60 != 0:
            if not added:
                added = True  # Truncate(time.Second) is a no-op on whole seconds
            t += 1
            local = t + at(t)
            days, sod = divmod(local, _DAY)
            if sod % 60 == 0:
                wrapped = True
                break
        if wrapped:
            y, mo, d = civil(days)
            continue
        return t


def _month_length(year: int, month: int) -> int:
    if month == 2 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return 28
    return _DAYS_IN_MONTH[month]


def _next_reference(s: Schedule, after: int) -> int | None:
    """Replay robfig's ``SpecSchedule.Next`` line by line (the executable spec).

    Slow but obviously faithful; :func:`_next` must agree with it everywhere.
    """
    loc = s.location
    date, add_date, wall = gotime.date, gotime.add_date, gotime.wall
    day_and = bool((s.dom | s.dow) & STAR)

    def day_matches(w: gotime.Wall) -> bool:
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
