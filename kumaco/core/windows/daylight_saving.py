"""What daylight-saving changes do to a window, said in words: skipped nights, longer windows.

Contract
--------
:func:`dst_notes` lists, for each change of a window's UTC offset in ``[start, until)``
(from the zone data robfig reads, :mod:`kumaco.core.golang.gotime`), what it does to the window,
when it does something:

* a start time inside a spring-forward gap does not exist, and robfig does not fire
  then: ``02:00 does not exist on 2026-03-29 in Europe/Berlin: no window that night``
  (or ``no occurrence starts at 02:00`` when the window opens at another time that day);
* a start time inside a fall-back overlap happens twice, and robfig fires at both:
  ``02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens at
  2026-10-25T00:00:00Z and again at 2026-10-25T01:00:00Z, and is open 4h in one piece
  (until 2026-10-25T04:00:00Z)``, or ``... opens twice`` when the occurrences stay apart.

Which wall-clock start times a gap or an overlap holds is read from the schedule's
fields (with the window's ``daysOfMonth``); what the window then does is read from its
own firings (robfig's), so a zone where robfig skips a repeated time (Lord Howe's half
hour) gets no note it does not deserve. A window that never closes gets none. Pure: a
function of the window and the range; no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from kumaco.core.golang import gotime
from kumaco.core.time.cronfields import STAR
from kumaco.core.time.durations import SECOND, format_go_duration
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.window import YEAR, Window

_DAY = 86400
#: At most this many offset changes are looked at in one range (two a year; a century).
MAX_CHANGES = 200
#: Start times listed one by one in a note; more are given as a span.
_LISTED = 4


@dataclass(frozen=True)
class DstNote:
    """One thing a change of offset does to a window: at ``at`` (ns), in words."""

    at: int
    text: str


def _wall(local: int) -> tuple[str, str]:
    """``(2026-03-29, 02:00)``: the date and the time of a local wall clock (seconds)."""
    y, mo, d = gotime.civil_from_days(local // _DAY)
    sod = local % _DAY
    return f"{y:04d}-{mo:02d}-{d:02d}", f"{sod // 3600:02d}:{sod // 60 % 60:02d}"


def _starts_at(w: Window, local: int) -> bool:
    """Whether the window's fields (and ``daysOfMonth``) name the wall clock ``local``."""
    s = w.schedule
    days = local // _DAY
    _y, mo, d = gotime.civil_from_days(days)
    sod = local % _DAY
    dom, dow = s.dom >> d & 1, s.dow >> (days + 4) % 7 & 1
    day = (dom and dow) if (s.dom | s.dow) & STAR else (dom or dow)
    return bool(
        day
        and s.month >> mo & 1
        and s.hour >> sod // 3600 & 1
        and s.minute >> sod // 60 % 60 & 1
        and sod % 60 == 0
        and (not w.days or w.days >> d & 1)
    )


def _named(local_starts: list[int]) -> str:
    times = [_wall(t)[1] for t in local_starts]
    if len(times) == 1:
        return times[0]
    if len(times) <= _LISTED:
        return ", ".join(times[:-1]) + " and " + times[-1]
    return f"{times[0]} to {times[-1]} ({len(times)} start times)"


def _span(ns: int) -> str:
    """A duration as a person writes it: ``4h``, ``4h30m``, ``45s``."""
    text = format_go_duration(ns)
    if text.endswith("m0s"):
        text = text[:-2]
    return text[:-2] if text.endswith("h0m") else text


def _gap(w: Window, change: int, before: int, after: int) -> str:
    """A spring-forward gap at ``change`` (Unix seconds) from offset ``before`` to ``after``."""
    first = -(-(change + before) // 60) * 60
    starts = [t for t in range(first, change + after, 60) if _starts_at(w, t)]
    if not starts:
        return ""
    date = _wall(change + before)[0]
    day = (change + before) // _DAY
    begin = (day * _DAY - before) * SECOND  # the day's first instant, near enough
    that_day = [
        f
        for f in w.firings(begin - 3 * 3600 * SECOND, begin + 27 * 3600 * SECOND)
        if (f // SECOND + w.schedule.location.offset(f // SECOND)) // _DAY == day
    ]
    verb = "does" if len(starts) == 1 else "do"
    what = f"no occurrence starts at {_named(starts)}" if that_day else "no window that night"
    return f"{_named(starts)} {verb} not exist on {date} in {w.zone_name}: {what}"


def _overlap(w: Window, change: int, before: int, after: int) -> str:
    """A fall-back overlap at ``change``: the wall times of the last ``before - after`` s twice."""
    shift = before - after
    first = -(-(change + after) // 60) * 60
    starts = [t for t in range(first, change + before, 60) if _starts_at(w, t)]
    if not starts:
        return ""
    fires = w.firings((change - shift) * SECOND, (change + shift) * SECOND)
    if len(fires) < 2:
        return ""  # robfig fired once (a half-hour zone's quirk): nothing longer than written
    one = len(starts) == 1
    head = f"{_named(starts)} {'happens' if one else 'happen'} twice on "
    head += f"{_wall(change + after)[0]} in {w.zone_name}"
    run = next(w.intervals(fires[0], fires[0] + 1, lookahead=YEAR), None)
    a, b = format_instant(fires[0]), format_instant(fires[-1])
    if run is not None and run.contains(fires[-1]):
        opens = f"opens at {a} and again at {b}" if len(fires) == 2 else f"opens {len(fires)} times"
        return (
            f"{head}: the window {opens}, and is open {_span(run.end - run.start)} in one "
            f"piece (until {format_instant(run.end)})"
        )
    if len(fires) == 2:
        return f"{head}: the window opens twice, at {a} and at {b}"
    return f"{head}: the window opens {len(fires)} times, from {a} to {b}"


def dst_notes(w: Window, start: int, until: int) -> list[DstNote]:
    """What each change of the window's UTC offset in ``[start, until)`` does to it."""
    location = w.schedule.location
    if w.zone_name == "UTC" or w.never_closes(start):
        return []
    notes: list[DstNote] = []
    t, last = start // SECOND, until // SECOND
    for _ in range(MAX_CHANGES):
        before, _begin, end = location.lookup(t)
        if end >= last:
            break
        after = location.offset(end)
        text = ""
        if after > before:
            text = _gap(w, end, before, after)
        elif after < before:
            text = _overlap(w, end, before, after)
        if text:
            notes.append(DstNote(end * SECOND, text))
        t = end
    return notes
