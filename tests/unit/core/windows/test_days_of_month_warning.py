"""The day-field warning with ``daysOfMonth`` (kumaco.core.windows.days_of_month).

The table pins the sentences; each case's claim is then checked against the window's
own firings over 2026 (robfig's, kept on ``daysOfMonth``): the days of month that
fire whatever the weekday, and that the weekday decides on the other listed days.
"""

from __future__ import annotations

import datetime as dt

import pytest

from kumaco.core.time.durations import SECOND
from kumaco.core.windows.days_of_month import either_day_warning
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window

SAT = 5  # datetime's weekday() of a Saturday


def window(start: str, days: str) -> Window:
    data = {"startTime": start, "duration": "1h", "nodeSelector": ""}
    w = parse_window("m", "w", {**data, **({"daysOfMonth": days} if days else {})})
    assert isinstance(w, Window), w
    return w


CASES = [
    # (startTime, daysOfMonth, warning, days of month firing whatever the weekday)
    (
        "0 2 15 * SAT",
        "1-7",
        "fires only on Saturdays on days 1-7 (the first Saturday of the month): day 15 of "
        'startTime is never one of daysOfMonth: "1-7"; write startTime: "0 2 * * SAT" to '
        "say so",
        set(),
    ),
    (
        "0 1 1-7 * SAT",
        "1-7",
        "fires on every one of days 1-7, whatever the weekday: days 1-7 of startTime OR "
        "Saturdays (robfig's rule when both day fields are restricted), kept on daysOfMonth: "
        '"1-7"; for Saturdays on days 1-7 only, write startTime: "0 1 * * SAT"',
        set(range(1, 8)),
    ),
    (
        "0 2 1,15 * SAT",
        "1-14",
        "fires on day 1 of the month OR on Saturdays on days 1-14 (robfig's rule when both "
        'day fields are restricted, kept on daysOfMonth: "1-14"); for Saturdays on days 1-14 '
        'only, write startTime: "0 2 * * SAT"',
        {1},
    ),
    (
        "0 1 1-7 * SAT",
        "",
        "fires on days 1-7 of the month OR on Saturdays (robfig's rule when both day fields "
        "are restricted); for the first Saturday of the month only, write startTime: "
        '"0 1 * * SAT" with daysOfMonth: "1-7"',
        set(range(1, 8)),
    ),
]


@pytest.mark.parametrize(("start", "days", "expected", "every"), CASES)
def test_the_warning_says_what_fires(start: str, days: str, expected: str, every: set[int]) -> None:
    w = window(start, days)
    assert either_day_warning(w.schedule, w.days, w.days_text) == expected
    year = (
        int(dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()) * SECOND,
        int(dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp()) * SECOND,
    )
    fired = {
        dt.datetime.fromtimestamp(f // SECOND, dt.UTC).date() for f in w.firings(*year, limit=1000)
    }
    listed = {d for d in range(1, 32) if not w.days or w.days >> d & 1}
    for i in range(365):
        day = dt.date(2026, 1, 1) + dt.timedelta(days=i)
        should = day.day in listed and (day.day in every or day.weekday() == SAT)
        assert (day in fired) == should, day
