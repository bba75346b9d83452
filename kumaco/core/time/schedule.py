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

Grammar
-------
* An optional prefix ``TZ=<zone> `` or ``CRON_TZ=<zone> ``: the zone is the
  text between the first ``=`` and the first ASCII space; ``TZ= `` (empty
  zone) is UTC. Only *after* a prefix is the rest trimmed of white space.
* The rest is a descriptor (``@daily``) or five fields, parsed as robfig does by
  :mod:`kumaco.core.time.cronfields` (whose documentation lists the grammar and its
  quirks).

Next, and what it does around DST (confirmed against the oracle)
---------------------------------------------------------------
``next_fire`` replays robfig's field-by-field search in the schedule's zone
(month, then day, then hour, minute, second; a wrap-around restarts the
search; at most five years ahead, else ``None``; :mod:`kumaco.core.time.cronnext`),
using :mod:`kumaco.core.golang.gotime` for Go's ``Date``/``AddDate``/``Truncate``.
Observable consequences:

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
read from the ``tzdata`` package once per zone and cached
(:mod:`kumaco.core.time.zones`).
"""

from __future__ import annotations

import functools
import zoneinfo
from dataclasses import dataclass, field, replace

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.golang import gotime
from kumaco.core.time import cronnext
from kumaco.core.time.cronfields import DAYS_IN_MONTH, FIELDS_HINT, GO_SPACE, STAR, parse_fields
from kumaco.core.time.zones import load_zone, resolve_zone

__all__ = ["Schedule", "parse_schedule", "zone_only"]


def parse_schedule(spec: str) -> Schedule:
    """Parse a ``startTime`` as robfig's ``cron.ParseStandard`` would (UTC by default).

    Raises :class:`InvalidInput` for anything robfig rejects, and for the
    deliberate deviations listed in the module documentation.
    """
    if not isinstance(spec, str):
        raise InvalidInput(f"schedule must be a string, not {type(spec).__name__}")
    if not spec:
        raise InvalidInput(
            f"schedule is empty: expected 5 fields ({FIELDS_HINT}) or a descriptor such as @daily"
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
        zone_name, location = resolve_zone(prefix_zone)
        text = text[space:].strip(GO_SPACE)
    bits = parse_fields(text)
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


def zone_only(source: str, zone: str) -> Schedule:
    """A schedule that never fires, carrying only a zone: a one-shot window's ``startTime``.

    Raises :class:`InvalidInput` for a zone :meth:`Schedule.in_zone` refuses.
    """
    zone_name, location = resolve_zone(zone)
    return Schedule(source, None, zone_name, 0, 0, 0, 0, 0, location)


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
            self.month >> m & 1 and self.dom & ((2 << DAYS_IN_MONTH[m]) - 1) for m in range(1, 13)
        )
        if self.dow & STAR:
            return not dom_possible
        return not (weekdays or dom_possible)

    def in_zone(self, name: str) -> Schedule:
        """The same schedule evaluated in zone ``name`` (``prefix_zone`` is kept as written).

        Raises :class:`InvalidInput` for ``"Local"`` and unknown zones; ``""``
        is UTC.
        """
        zone_name, location = resolve_zone(name)
        return replace(self, zone_name=zone_name, location=location)

    def next_fire(self, after: int) -> int | None:
        """First firing instant strictly after ``after`` (Unix seconds), as robfig computes it.

        Returns ``None`` where robfig's ``Next`` returns the zero time (no
        match within its five-year horizon).
        """
        if self.never_fires:  # robfig would search five years in vain
            return None
        return cronnext.next_fire(self, after)
