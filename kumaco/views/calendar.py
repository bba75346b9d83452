"""``kumaco windows -o ics``: the occurrences as an RFC 5545 calendar to subscribe to.

Contract: pure; :func:`calendar` returns the whole feed as a string, the same bytes for
the same occurrences, windows and instant ``generated``. Each event's UID is stable per
window and occurrence (:func:`occurrence_uid`); its revision (``SEQUENCE``, ``DTSTAMP``)
grows with ``generated`` (:func:`sequence`), so a subscribed calendar takes a changed
window's events (RFC 5545/5546).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from icalendar import Calendar, Event

from kumaco import __version__
from kumaco.core.time.instants import to_datetime
from kumaco.core.windows.window import Occurrence, Window


def occurrence_uid(o: Occurrence) -> str:
    """A UID stable per window and occurrence (the same occurrence, the same UID)."""
    digest = hashlib.sha256(f"{o.namespace}/{o.name}\0{o.start}".encode()).hexdigest()[:32]
    return f"{digest}@kumaco.kured.dev"


#: SEQUENCE counts the seconds from this instant (2020-01-01T00:00:00Z) to DTSTAMP.
SEQUENCE_EPOCH = 1_577_836_800 * 10**9


def sequence(generated: int) -> int:
    """RFC 5545's SEQUENCE of every event of a calendar generated at ``generated``.

    kumaco keeps no record of the calendars it printed, so the revision number of an
    event is the time its calendar was made: the whole seconds since
    :data:`SEQUENCE_EPOCH` (never below 0; an INTEGER until 2088). A change to a window
    reaches a calendar in a later feed, with a higher SEQUENCE and a later DTSTAMP than
    every earlier feed, so a client that keeps the event with the greater (SEQUENCE,
    DTSTAMP), as RFC 5546 orders revisions, takes it.
    """
    return max(0, (generated - SEQUENCE_EPOCH) // 10**9)


def calendar(found: Sequence[Occurrence], by_key: Mapping[str, Window], generated: int = 0) -> str:
    """Occurrences as an RFC 5545 iCalendar (``METHOD:PUBLISH``): one event per occurrence.

    Times in UTC. Each event's UID is stable per window and occurrence start
    (:func:`occurrence_uid`); ``DTSTAMP`` and ``LAST-MODIFIED`` are ``generated``
    (``--at``, else now) and ``SEQUENCE`` grows with it (:func:`sequence`), so a
    changed duration, selector or zone replaces the event in a subscribed calendar.
    The same input and ``generated`` give the same bytes. The description gives the
    window's zone, schedule, duration and node selector; freezes are marked in the
    summary and ``CATEGORIES``. An iCalendar event has an end; one that never closes
    (chained without a gap for more than a year, :data:`~kumaco.core.windows.window.YEAR`)
    ends with the feed, at the end of the range asked (``--until``), says "(open-ended)"
    in its summary and "never closes" in its description: a later feed, over a later
    range, moves that end on (the same UID, a higher SEQUENCE). The last occurrence of
    a dated window (a one-shot ``startTime``, a ``notAfter``) is marked ``(last
    occurrence)``.
    """
    cal = Calendar()
    cal.add("prodid", f"-//kured.dev//kumaco {__version__}//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("x-wr-calname", "Maintenance windows")
    stamp = to_datetime(generated - generated % 10**9)
    for o in found:
        w = by_key.get(o.key)
        freeze = w is not None and w.freeze
        event = Event()
        event.add("uid", occurrence_uid(o))
        event.add("dtstamp", stamp)
        event.add("last-modified", stamp)
        event.add("sequence", sequence(generated))
        event.add("dtstart", to_datetime(o.start).replace(microsecond=0))
        event.add("dtend", to_datetime(o.end).replace(microsecond=0))
        kind = "Change freeze" if freeze else "Maintenance window"
        last = w is not None and w.dated and w.state_at(o.end).ended
        marks = (" (open-ended)" if o.open_ended else "") + (" (last occurrence)" if last else "")
        event.add("summary", f"{kind}: {o.key}{marks}")
        if w is not None:
            lines = [
                f"startTime: {w.start_time}",
                *([f"daysOfMonth: {w.days_text}"] if w.days else []),
                *([f"notBefore: {w.not_before_text}"] if w.not_before_text else []),
                *([f"notAfter: {w.not_after_text}"] if w.not_after_text else []),
                f"time zone: {w.zone_name}",
                f"duration: {w.duration_text}",
                f"nodeSelector: {w.selector_text or '(every node in scope)'}",
            ]
            if w.budget is not None:
                lines.append(f"maxInProgress: {w.budget}")
            if o.open_ended:
                lines.append(
                    "open-ended: never closes (its occurrences chain without a gap); "
                    "shown up to the end of this feed"
                )
            if last:
                lines.append("the window's last occurrence: it never opens again after this")
            event.add("description", "\n".join(lines))
        event.add("categories", ["freeze" if freeze else "maintenance"])
        cal.add_component(event)
    text: bytes = cal.to_ical()
    return text.decode()
