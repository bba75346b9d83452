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
from kumaco.core.gostrconv import parse_int64

__all__ = ["Schedule", "load_zone", "parse_schedule"]

#: robfig's flag bit: the field was written as ``*`` or ``?`` (step <= 1).
STAR = 1 << 63

#: Unicode White_Space, as Go's ``unicode.IsSpace`` (``strings.Fields``/``TrimSpace``).
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_FIELD_RE = re.compile(f"[^{re.escape(GO_SPACE)}]+")
_ZONE_NAME_RE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
# Go's strings.ToLower maps these to ASCII letters too (simple case mapping).
_GO_LOWER = str.maketrans(
    {**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}, "\u0130": "i", "\u212a": "k"}
)
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


def _number(text: str, b: _Bounds, expr: str, what: str) -> int:
    value = parse_int64(text)
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
    """The next firing, as robfig's ``SpecSchedule.Next`` finds it, in jumps where it can.

    The executable specification, replayed line by line, is ``next_reference``
    in ``tests/support/reference.py``; this must agree with it everywhere. A
    jump over a run of identical steps is only taken where the zone offset is
    constant over the whole run (so every skipped step would have been a plain
    ``+60s``/``+1h``/``+1 day`` that matched nothing); otherwise the step is
    replayed exactly.
    """
    c = _Search(s, after)
    year_limit = c.y + 5
    while True:  # robfig's WRAP label; the cursor describes t here
        if c.y > year_limit:
            return None
        if c.months() or c.days_() or c.hours() or c.minutes() or c.seconds():
            c.y, c.mo, c.d = gotime.civil_from_days(c.days)
            continue
        return c.t


class _Search:
    """The state of one search: ``t``, its wall clock, and whether robfig's "added" is set.

    Each step method advances one field as robfig does and answers whether the
    search wrapped (went back to the top); ``local``, ``days`` and ``sod`` (second
    of the day) always describe ``t``, ``y``/``mo``/``d`` its date where robfig reads it.
    """

    __slots__ = (
        "added",
        "at",
        "d",
        "day_and",
        "days",
        "godate",
        "local",
        "mo",
        "oc",
        "s",
        "sod",
        "t",
        "y",
    )

    def __init__(self, s: Schedule, after: int) -> None:
        self.s = s
        self.oc = _Offsets(s.location)
        self.at, self.godate = self.oc.at, self.oc.date
        self.day_and = bool((s.dom | s.dow) & STAR)
        self.added = False
        self._move(after + 1)
        self.y, self.mo, self.d = gotime.civil_from_days(self.days)

    def _move(self, t: int) -> None:
        self.t = t
        self.local = t + self.at(t)
        self.days, self.sod = divmod(self.local, _DAY)

    def _date(self) -> None:
        self.y, self.mo, self.d = gotime.civil_from_days(self.days)

    def _day_matches(self, day: int, weekday: int) -> bool:
        dom, dow = self.s.dom >> day & 1, self.s.dow >> weekday & 1
        return bool(dom and dow) if self.day_and else bool(dom or dow)

    def months(self) -> bool:
        month_bits = self.s.month
        while not month_bits >> self.mo & 1:
            if not self.added:
                self.added = True
                self._move(self.godate(gotime.days_from_civil(self.y, self.mo, 1) * _DAY))
                self._date()
            # AddDate(0, n, 0): the same wall clock n months later, normalised by Date.
            prev, n = self.t, 1
            while True:
                m0 = self.mo - 1 + n
                first = gotime.days_from_civil(self.y + m0 // 12, m0 % 12 + 1, 1)
                t = self.godate((first + self.d - 1) * _DAY + self.sod)
                if t > prev:
                    break
                n += 1  # robfig loops forever here (module docstring)
            self._move(t)
            self._date()
            if self.mo == 1:
                return True
        return False

    def days_(self) -> bool:
        while not self._day_matches(self.d, (self.days + 4) % 7):
            if not self.added:
                self.added = True
                self._move(self.godate(self.days * _DAY))
                self._date()
            if self.sod < 3600:
                self._skip_days()
            prev, prev_local, n = self.t, self.local, 1
            while True:
                self._move(self.godate(prev_local + n * _DAY))  # AddDate(0, 0, n)
                hour = self.sod // 3600
                if hour != 0:
                    self._move(self.t + ((24 - hour) * 3600 if hour > 12 else -hour * 3600))
                if self.t > prev:
                    break
                n += 1  # robfig loops forever here (module docstring)
            self._date()
            if self.d == 1:
                return True
        return False

    def _skip_days(self) -> None:
        """At hour 0 with a constant offset, each step is exactly +1 day: jump over the run."""
        month_len = _month_length(self.y, self.mo)
        k = 1
        while self.d + k <= month_len and not self._day_matches(
            self.d + k, (self.days + k + 4) % 7
        ):
            k += 1
        oc, t, local = self.oc, self.t, self.local
        self.at(t)  # oc.start/oc.end: t's constant-offset interval
        if k > 1 and oc.start <= min(t, local) and max(t, local) + k * _DAY < oc.end:
            self.t += (k - 1) * _DAY
            self.local += (k - 1) * _DAY
            self.days += k - 1
            self.d += k - 1

    def hours(self) -> bool:
        hour_bits, oc = self.s.hour, self.oc
        hour = self.sod // 3600
        while not hour_bits >> hour & 1:
            if not self.added:
                self.added = True
                self._move(self.godate(self.days * _DAY + hour * 3600))
                self._date()
                hour = self.sod // 3600
            k = _next_set(hour_bits, hour, 24) - hour
            t = self.t
            self.at(t)  # oc.start/oc.end: t's constant-offset interval
            if k > 1 and oc.start <= t and t + k * 3600 < oc.end:
                t += (k - 1) * 3600
            self._move(t + 3600)
            hour = self.sod // 3600
            if hour == 0:
                return True
        self._date()
        return False

    def minutes(self) -> bool:
        minute_bits, oc = self.s.minute, self.oc
        minute = self.sod // 60 % 60
        while not minute_bits >> minute & 1:
            if not self.added:
                self.added = True
                self._move(gotime.truncate(self.t, 60))
                minute = self.sod // 60 % 60
            k = _next_set(minute_bits, minute, 60) - minute
            t = self.t
            self.at(t)  # oc.start/oc.end: t's constant-offset interval
            if k > 1 and oc.start <= t and t + k * 60 < oc.end:
                t += (k - 1) * 60
            self._move(t + 60)
            minute = self.sod // 60 % 60
            if minute == 0:
                return True
        return False

    def seconds(self) -> bool:
        while self.sod % 60 != 0:
            self.added = True  # Truncate(time.Second) is a no-op on whole seconds
            self._move(self.t + 1)
            if self.sod % 60 == 0:
                return True
        return False


def _month_length(year: int, month: int) -> int:
    if month == 2 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return 28
    return _DAYS_IN_MONTH[month]
