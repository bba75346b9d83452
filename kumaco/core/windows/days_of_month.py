"""A window's ``daysOfMonth``: the days of the month an occurrence may start on, with AND.

Why: robfig (like Vixie cron) combines a restricted day-of-month and a restricted
day-of-week with OR, so ``0 1 1-7 * SAT`` fires on the 1st to the 7th *and* on every
Saturday, and "the first Saturday of the month" cannot be written as one schedule.
``startTime: "0 1 * * SAT"`` with ``daysOfMonth: "1-7"`` can: the firings of the
schedule, exactly as robfig computes them, kept only on the days listed.

Contract
--------
:func:`next_on_days` is the first firing of a schedule strictly after an instant
whose calendar day in the schedule's zone is one of ``days`` -- by definition the
first such firing along robfig's own chain of ``Next`` from that instant (which is
how ``tests/unit/core/windows/test_windows.py`` checks it, against the real robfig). It jumps
over days that are not listed (to the last second before the next listed day, or
the end of the current UTC offset, whichever comes first, so a DST change is never
jumped over) instead of walking every firing; ``None`` when robfig has no firing
within its five-year horizon. :func:`never_on_days` says statically whether a
schedule and a day set can never meet (``0 0 15 * *`` on days ``1-7``); the
window format rejects such a pair. :func:`either_day_warning` is the warning for a
schedule that restricts both day fields (it fires on either), with the way to write
the AND that was probably meant; given the window's ``daysOfMonth`` it says what is kept
of that OR (only the weekday on the listed days, every listed day, or the days of month
listed in both plus the weekday), as the window's firings are. Pure: no I/O, no clock.
"""

from __future__ import annotations

from kumaco.core.golang import gotime
from kumaco.core.time.cronfields import DAYS_IN_MONTH, STAR
from kumaco.core.time.schedule import Schedule

#: A day-of-week token (a number or robfig's name, lower case) -> the weekday's name.
WEEKDAYS = {
    key: name
    for i, name in enumerate(
        ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
    )
    for key in (str(i), name[:3].lower())
}
_DAY = 86400
#: robfig's horizon: a search gives up after five years (and kumaco's a little beyond).
_HORIZON = 6 * 366 * _DAY
#: How many days ahead the next listed day can be: day 31 alone is at most 62 days away.
_MAX_GAP = 400


def _next_listed_day(local_days: int, days: int) -> int:
    """The first date after ``local_days`` (days since 1970-01-01) whose day of month is listed."""
    for k in range(1, _MAX_GAP):
        if days >> gotime.civil_from_days(local_days + k)[2] & 1:
            return local_days + k
    raise AssertionError("a day set with a day 1-31 has one within two months")


def next_on_days(schedule: Schedule, days: int, after: int) -> int | None:
    """The schedule's first firing after ``after`` (Unix seconds) on a listed day of the month."""
    fire = schedule.next_fire(after)
    while fire is not None and fire - after <= _HORIZON:
        offset, _start, end = schedule.location.lookup(fire)
        local_days = (fire + offset) // _DAY
        if days >> gotime.civil_from_days(local_days)[2] & 1:
            return fire
        if offset % 60:
            # An offset of whole seconds (Monrovia until 1972, the LMTs): robfig's Next from
            # an instant between firings may pass the chain's next firing (its Truncate is
            # UTC's), so follow the chain itself, firing by firing.
            fire = schedule.next_fire(fire)
            continue
        # Every second up to the last one before the next listed day (at this offset) is on
        # a day that is not listed; past the offset's end, look again.
        skip = min(_next_listed_day(local_days, days) * _DAY - offset - 1, end - 1)
        fire = schedule.next_fire(max(skip, fire))
    return None


def never_on_days(schedule: Schedule, days: int) -> bool:
    """Whether no firing of ``schedule`` can ever fall on one of ``days`` (a static check)."""
    if schedule.never_fires:
        return True
    months = [m for m in range(1, 13) if schedule.month >> m & 1]
    possible = [
        d for d in range(1, 32) if days >> d & 1 and any(d <= DAYS_IN_MONTH[m] for m in months)
    ]
    if not possible:
        return True
    if schedule.dow & STAR and not schedule.dom & STAR:  # day of month decides, with AND
        return not any(schedule.dom >> d & 1 for d in possible)
    return False


_NTH = {"1-7": "first", "8-14": "second", "15-21": "third", "22-28": "fourth"}


def _day_list(bits: int) -> str:
    """Day bits as the day-of-month field writes them: ``1-7``, ``1,15``, ``1-3,20``."""
    days = [d for d in range(1, 32) if bits >> d & 1]
    runs: list[str] = []
    i = 0
    while i < len(days):
        j = i
        while j + 1 < len(days) and days[j + 1] == days[j] + 1:
            j += 1
        runs.append(f"{days[i]}-{days[j]}" if j > i + 1 else ",".join(map(str, days[i : j + 1])))
        i = j + 1
    return ",".join(runs)


def _days_named(days_field: str) -> str:
    return f"day {days_field}" if days_field.isdigit() else f"days {days_field}"


def either_day_warning(schedule: Schedule, days: int = 0, days_text: str = "") -> str:
    """What a schedule restricting both day fields does (robfig's OR), and the AND way; or ''.

    ``0 1 1-7 * SAT`` fires on the 1st to the 7th *and* on every Saturday; the first
    Saturday is ``0 1 * * SAT`` with ``daysOfMonth: "1-7"``. With ``daysOfMonth``
    (``days``, its text ``days_text``) the firings are those kept on its days, and the
    warning says those: the weekday is moot when every listed day is a day of month of
    the schedule, the day of month when none is.
    """
    if schedule.dom & STAR or schedule.dow & STAR:
        return ""
    prefix, rest = "", schedule.source
    if rest.startswith(("TZ=", "CRON_TZ=")) and " " in rest:
        prefix, rest = rest.split(" ", 1)
    fields = rest.split()
    if len(fields) != 5:
        return ""
    dom, dow = fields[2], fields[4]
    named = WEEKDAYS.get(dow.lower())
    weekdays = f"{named}s" if named else f"days of week {dow}"
    spec = " ".join([*([prefix] if prefix else []), *fields[:2], "*", fields[3], dow])
    if days:
        return _kept_warning(schedule, days, days_text, (dom, weekdays, spec, named))
    nth = _NTH.get(dom)
    on_days = _days_named(dom)
    only = f"the {nth} {named} of the month" if nth and named else f"{weekdays} on {on_days}"
    return (
        f"fires on {on_days} of the month OR on {weekdays} (robfig's rule when both day "
        f'fields are restricted); for {only} only, write startTime: "{spec}" with '
        f'daysOfMonth: "{dom}"'
    )


def _kept_warning(
    schedule: Schedule, days: int, days_text: str, words: tuple[str, str, str, str | None]
) -> str:
    """The day-field warning when ``daysOfMonth`` keeps only some of robfig's OR."""
    dom, weekdays, spec, named = words
    both = schedule.dom & days
    kept = f'daysOfMonth: "{days_text}"'
    listed = _days_named(days_text)
    nth = _NTH.get(days_text)
    first = f" (the {nth} {named} of the month)" if nth and named else ""
    if not both:
        return (
            f"fires only on {weekdays} on {listed}{first}: {_days_named(dom)} of startTime "
            f'is never one of {kept}; write startTime: "{spec}" to say so'
        )
    if both == days:
        return (
            f"fires on every one of {listed}, whatever the weekday: {_days_named(dom)} "
            f"of startTime OR {weekdays} (robfig's rule when both day fields are "
            f"restricted), kept on {kept}; for {weekdays} on {listed} only, write "
            f'startTime: "{spec}"'
        )
    return (
        f"fires on {_days_named(_day_list(both))} of the month OR on {weekdays} on {listed} "
        f"(robfig's rule when both day fields are restricted, kept on {kept}); for "
        f'{weekdays} on {listed} only, write startTime: "{spec}"'
    )
