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
  (until 2026-10-25T04:00:00Z)``, or ``... opens twice`` when the occurrences stay apart;
* after a shift that is not a whole hour (Lord Howe's 30 minutes) robfig's chain of
  firings also skips start times that exist (``00:00 is skipped on 2026-04-06 in
  Australia/Lord_Howe (robfig, after the 30m daylight-saving shift): no window that
  night``) and fires twice where a time happens once (``01:45 happens once on 2026-10-04
  ... but robfig fires twice that day ...: the window opens twice, at ... and at ...``).

The start times each local day from the change's to the next one should have are read
from the schedule's fields (with the window's ``daysOfMonth``); what the window then
does is read from its own firings (robfig's), day by day, so a note is said exactly
where robfig skips or repeats, and a repeated time robfig fires once gets none. A
window that never closes gets none. Each note also says its kind and where it falls
(:class:`DstNote`), for the timeline's markers.

:func:`posix_sign_warning` is about the offset itself: ``Etc/GMT+1`` is UTC-01:00 (the
``Etc/`` zones keep POSIX's inverted sign), which a reader takes for UTC+01:00; it says
which offset the zone is and which name gives the other (``''`` for any other zone, and
for ``Etc/GMT+0``). Pure: functions of the window, the range, the name; no I/O, no clock.
"""

from __future__ import annotations

import re
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
#: ``Etc/GMT+1``, ``GMT-0``: a zone named with POSIX's sign (east of UTC is minus).
_POSIX_NAME = re.compile(r"(?:Etc/)?GMT([+-])(\d{1,2})")
#: The ``Etc/GMT`` zones that exist: ``Etc/GMT-14`` (UTC+14:00) to ``Etc/GMT+12``.
_ETC_HOURS = {"+": 12, "-": 14}


@dataclass(frozen=True)
class DstNote:
    """One thing a change of offset does to a window: at ``at`` (ns), in words.

    ``kind`` says which, for a picture: ``gap`` (a start time that does not exist),
    ``skipped`` (one that exists, robfig skips it), ``twice`` (one the overlap repeats,
    robfig fires at both) or ``extra`` (robfig fires more often than the day's start
    times); ``instants`` (ns) are where: for ``gap`` and ``skipped`` the instants the
    missing start times would have had (a gap's at the offset before the change), for
    ``twice`` and ``extra`` the firings.
    """

    at: int
    text: str
    kind: str = ""
    instants: tuple[int, ...] = ()


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


def _within_dates(w: Window, local: int, before: int, after: int) -> bool:
    """Whether the wall clock ``local`` at either offset lies in ``[notBefore, notAfter)``."""
    lo = w.not_before if w.not_before is not None else -(1 << 62)
    hi = w.not_after if w.not_after is not None else 1 << 62
    return any(lo <= local - offset < hi for offset in (before, after))


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


def _openings(w: Window, fires: list[int]) -> str:
    """``the window opens twice, at A and at B`` (and how long it stays open if they merge)."""
    run = next(w.intervals(fires[0], fires[0] + 1, lookahead=YEAR), None)
    a, b = format_instant(fires[0]), format_instant(fires[-1])
    if run is not None and run.contains(fires[-1]):
        opens = f"opens at {a} and again at {b}" if len(fires) == 2 else f"opens {len(fires)} times"
        return (
            f"the window {opens}, and is open {_span(run.end - run.start)} in one "
            f"piece (until {format_instant(run.end)})"
        )
    if len(fires) == 2:
        return f"the window opens twice, at {a} and at {b}"
    return f"the window opens {len(fires)} times, from {a} to {b}"


def _is_are(walls: list[int], one: str, many: str) -> str:
    return f"{_named(walls)} {one if len(walls) == 1 else many}"


def _change(
    w: Window, change: int, before: int, after: int
) -> list[tuple[str, str, tuple[int, ...]]]:
    """What the change of offset at ``change`` (Unix seconds) does, day by day, from the firings.

    For each local day from the change's to the next, the wall-clock start times the
    fields name are set against robfig's firings that day: a named time in the gap that
    does not fire does not exist; a named time that exists and does not fire is skipped
    (robfig's chain after a half-hour shift); a time in the overlap that fires twice
    happens twice; more firings than the day's start times are said with their instants.
    Each is ``(kind, text, instants)`` (:class:`DstNote`).
    """
    location = w.schedule.location
    first_day, last_day = (change + before) // _DAY, (change + after) // _DAY + 1
    lo, hi = min(before, after), max(before, after)
    fires = w.firings(
        (first_day * _DAY - hi - 3600) * SECOND,
        ((last_day + 1) * _DAY - lo + 3600) * SECOND,
        limit=4 * 24 * 60 + 4,
    )
    by_day: dict[int, list[int]] = {}
    for f in fires:
        by_day.setdefault((f // SECOND + location.offset(f // SECOND)) // _DAY, []).append(f)
    shift = _span(abs(after - before) * SECOND)
    why = f"(robfig, after the {shift} daylight-saving shift)"
    texts: list[tuple[str, str, tuple[int, ...]]] = []
    for day in range(first_day, last_day + 1):
        that_day = by_day.get(day, [])
        fired: dict[int, int] = {}
        for f in that_day:
            wall = f // SECOND + location.offset(f // SECOND)
            fired[wall] = fired.get(wall, 0) + 1
        named = [
            t
            for t in range(day * _DAY, (day + 1) * _DAY, 60)
            if _starts_at(w, t) and _within_dates(w, t, before, after)
        ]
        gap, skipped, twice, expected = [], [], [], 0
        for t in named:
            exists = sum(1 for o in {before, after} if location.offset(t - o) == o)
            expected += exists
            if not exists:
                gap.append(t)
            elif not fired.get(t):
                skipped.append(t)
            elif exists == 2 and fired[t] == 2:
                twice.append(t)
        date = _wall(day * _DAY)[0]
        where = f"on {date} in {w.zone_name}"
        rest = [t for t in named if t not in gap]
        if gap:
            what = f"no occurrence starts at {_named(gap)}" if that_day else "no window that night"
            texts.append(
                (
                    "gap",
                    f"{_is_are(gap, 'does', 'do')} not exist {where}: {what}",
                    tuple((t - before) * SECOND for t in gap),
                )
            )
        if skipped:
            what = (
                f"no occurrence starts at {_named(skipped)}" if that_day else "no window that night"
            )
            texts.append(
                (
                    "skipped",
                    f"{_is_are(skipped, 'is', 'are')} skipped {where} {why}: {what}",
                    tuple(
                        (t - next(o for o in (before, after) if location.offset(t - o) == o))
                        * SECOND
                        for t in skipped
                    ),
                )
            )
        if twice:
            doubled = [f for f in that_day if f // SECOND + location.offset(f // SECOND) in twice]
            texts.append(
                (
                    "twice",
                    f"{_is_are(twice, 'happens', 'happen')} twice {where}: "
                    + _openings(w, doubled),
                    tuple(doubled),
                )
            )
        elif len(that_day) > expected - len(skipped) and rest:
            times = "twice" if len(that_day) == 2 else f"{len(that_day)} times"
            texts.append(
                (
                    "extra",
                    f"{_is_are(rest, 'happens', 'happen')} once {where} but robfig fires {times} "
                    f"that day (after the {shift} daylight-saving shift): "
                    + _openings(w, that_day),
                    tuple(that_day),
                )
            )
    return texts


def dst_notes(w: Window, start: int, until: int) -> list[DstNote]:
    """What each change of the window's UTC offset in ``[start, until)`` does to it."""
    location = w.schedule.location
    if w.zone_name == "UTC" or w.once is not None or w.never_closes(start):
        return []  # a one-shot start is one instant, written so that it exists once
    notes: list[DstNote] = []
    t, last = start // SECOND, until // SECOND
    for _ in range(MAX_CHANGES):
        before, _begin, end = location.lookup(t)
        if end >= last:
            break
        after = location.offset(end)
        if after != before:
            notes += [
                DstNote(end * SECOND, text, kind, instants)
                for kind, text, instants in _change(w, end, before, after)
            ]
        t = end
    return notes


def posix_sign_warning(zone_name: str) -> str:
    """``Etc/GMT+1 is UTC-01:00: ...`` for a zone named with POSIX's inverted sign; or ''."""
    found = _POSIX_NAME.fullmatch(zone_name)
    if found is None or int(found[2]) == 0:
        return ""
    sign, hours = found[1], int(found[2])
    real, meant = ("-", "+") if sign == "+" else ("+", "-")
    other = "-" if sign == "+" else "+"
    head = (
        f"{zone_name} is UTC{real}{hours:02d}:00: the Etc/ zones' signs are inverted (POSIX); "
        f"for UTC{meant}{hours:02d}:00 "
    )
    if hours > _ETC_HOURS[other]:
        return head + "there is no zone at all"
    return head + f"write Etc/GMT{other}{hours}"
