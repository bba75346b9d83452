"""Long chained runs: their end found exactly, with a bounded number of firings asked.

A run's end (``Window._run_end``) jumps over whole blocks of a day's firings instead
of asking for each; the property test holds it to the firing-by-firing follower (the
definition: a run ends at the first firing whose next firing comes more than one
duration later) on random schedules, durations, ``daysOfMonth`` and zones with
daylight saving. The bounds count the firings asked (``Window._fire`` calls), not time.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, ClassVar

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from kumaco.core.time.durations import SECOND
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import YEAR, Window

DAY = 86400 * SECOND


def at(text: str) -> int:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(t.timestamp()) * SECOND


class CountingWindow(Window):
    """A window that counts the firings it asks robfig for (its ``_fire`` calls)."""

    calls: ClassVar[list[int]] = [0]

    def _fire(self, after: int) -> int | None:
        CountingWindow.calls[0] += 1
        return super()._fire(after)


@dataclasses.dataclass(frozen=True)
class CutWindow(Window):
    """A window whose firings stop after ``cut`` (Unix seconds), as a closing date stops them."""

    cut: int = 0

    def _fire(self, after: int) -> int | None:
        fire = super()._fire(after)
        return None if fire is None or fire > self.cut else fire


def init_fields(w: Window) -> dict[str, Any]:
    """The fields a window is made of (not its memos)."""
    return {
        f.name: getattr(w, f.name) for f in dataclasses.fields(w) if f.init and f.name[0] != "_"
    }


def window(start: str, duration: str, **extra: str) -> CountingWindow:
    w = parse_window(
        "ns", "w", {"startTime": start, "duration": duration, "nodeSelector": "", **extra}
    )
    assert isinstance(w, Window), w
    return CountingWindow(**init_fields(w))


def calls_of(w: CountingWindow, start: int, until: int) -> tuple[list[tuple[int, int, bool]], int]:
    """The runs of ``[start, until)`` with a year's look-ahead, and the firings asked."""
    CountingWindow.calls[0] = 0
    runs = [(iv.start, iv.end, iv.open_ended) for iv in w.intervals(start, until, YEAR)]
    return runs, CountingWindow.calls[0]


def followed(w: Window, last: int, limit: int) -> tuple[int, bool]:
    """The definition: follow the run from its firing ``last``, firing by firing."""
    end = last + w.duration
    fire = w._next_fire(last)
    while fire is not None and fire <= end:
        if fire > limit:
            return end, False
        end = fire + w.duration
        fire = w._next_fire(fire)
    return end, True


ZONES = (
    "",
    "CRON_TZ=Europe/Berlin ",
    "CRON_TZ=America/New_York ",
    "CRON_TZ=Australia/Lord_Howe ",
    "CRON_TZ=America/Sao_Paulo ",
    "CRON_TZ=Asia/Kathmandu ",
    "CRON_TZ=America/Santiago ",
    "CRON_TZ=Africa/Monrovia ",
)
MINUTES = ("*", "*/5", "*/7", "0", "0,30", "0-29", "10-50", "59", "0-58", "*/15")
#: ``0,2-3`` (New York) and ``1,3-4`` (Berlin): the hour a fall-back change repeats
#: falls between, so a wall-clock gap of an hour is a real gap of two.
HOURS = ("*", "0-22", "1-23", "*/2", "2", "0-1,3-23", "22-23", "0-10,12-23", "0,2-3", "1,3-4")
DOMS = ("*", "*", "1-15", "1,31", "28-31")
MONTHS = ("*", "*", "12", "3", "10-11", "2")
DOWS = ("*", "*", "SAT,SUN", "1-5")
DURATIONS = ("1m", "90s", "2m", "5m", "6m", "10m", "59m", "61m", "62m", "2h", "25h", "49h", "59s")
#: Instants around daylight-saving changes, month ends and a leap day.
PLACES = tuple(
    at(t)
    for t in (
        "2027-03-28T00:00:00Z",
        "2027-03-14T05:00:00Z",
        "2027-11-07T04:00:00Z",
        "2027-10-31T00:00:00Z",
        "2027-04-04T00:00:00Z",
        "2027-10-03T00:00:00Z",
        "2028-02-28T12:00:00Z",
        "2027-12-30T00:00:00Z",
        "2018-11-03T12:00:00Z",
        "2027-09-05T00:00:00Z",
        "1985-12-31T12:00:00Z",
    )
)


@settings(max_examples=300)
# A fall-back change between hours 0 and 2 (New York), 1 and 3 (Berlin): a real gap of two
# hours where the wall clock shows one; Kathmandu's 15 minutes skipped at midnight.
@example(
    "CRON_TZ=America/New_York ",
    "*",
    "0,2-3",
    "*",
    "*",
    "*",
    "",
    "61m",
    PLACES[2],
    -36000,
    86400,
    None,
)
@example(
    "CRON_TZ=Europe/Berlin ", "*", "1,3-4", "*", "*", "*", "", "62m", PLACES[3], -7200, 86400, None
)
@example(
    "CRON_TZ=Asia/Kathmandu ", "*/10", "*", "*", "*", "*", "", "10m", PLACES[-1], 0, 86400, None
)
@given(
    st.sampled_from(ZONES),
    st.sampled_from(MINUTES),
    st.sampled_from(HOURS),
    st.sampled_from(DOMS),
    st.sampled_from(MONTHS),
    st.sampled_from(DOWS),
    st.sampled_from(("", "", "1-7", "10-20,31")),
    st.sampled_from(DURATIONS),
    st.sampled_from(PLACES),
    st.integers(-3 * DAY // SECOND, 3 * DAY // SECOND),
    st.integers(3600, 4 * DAY // SECOND),
    st.none() | st.integers(0, 4 * DAY // SECOND),
)
def test_the_end_of_a_run_is_the_firing_by_firing_followers(
    zone: str,
    minute: str,
    hour: str,
    dom: str,
    month: str,
    dow: str,
    days: str,
    duration: str,
    place: int,
    shift: int,
    span: int,
    cut: int | None,
) -> None:
    spec = f"{zone}{minute} {hour} {dom} {month} {dow}"
    data = {"startTime": spec, "duration": duration, "nodeSelector": ""}
    w = parse_window("ns", "w", {**data, **({"daysOfMonth": days} if days else {})})
    assume(isinstance(w, Window))  # a schedule and daysOfMonth that never meet are refused
    assert isinstance(w, Window)
    if cut is not None:  # the firings stop (a closing date, through _fire)
        w = CutWindow(**init_fields(w), cut=place // SECOND + shift + cut)
    first = w._fire_at_or_after(place + shift * SECOND)
    if first is None:
        return
    for last in (first, w._next_fire(first)):
        if last is None:
            continue
        limit = last + span * SECOND
        assert w._run_end(last, limit) == followed(w, last, limit), (spec, days, duration, last)


def test_a_december_freeze_of_every_minute_ends_on_january_1st_whatever_the_range() -> None:
    for zone, new_year in (
        ("", "2028-01-01T00:00:00Z"),
        ("CRON_TZ=Europe/Berlin ", "2027-12-31T23:00:00Z"),
        ("CRON_TZ=America/New_York ", "2028-01-01T05:00:00Z"),
    ):
        w = window(f"{zone}* * * 12 *", "1m")
        ranges = (
            ("2027-12-05T00:00:00Z", "2027-12-05T01:00:00Z"),
            ("2027-12-05T00:00:00Z", "2028-02-01T00:00:00Z"),
            ("2027-12-31T22:00:00Z", "2028-01-02T00:00:00Z"),
        )
        for start, until in ranges:
            runs, calls = calls_of(w, at(start), at(until))
            assert runs[0][1:] == (at(new_year), False), (zone, start, until)
            # 256 firings asked walking back for where the run began (MAX_WALK), about
            # two per day of December to its end, then the next run's first firing.
            assert calls <= 256 + 2 * 31 + 16, (zone, start, until, calls)
        assert not w.never_closes(at("2027-12-05T00:00:00Z"))


def test_a_window_of_every_five_minutes_for_ten_never_closes_with_bounded_work() -> None:
    w = window("*/5 * * * *", "10m")
    for until in ("2027-12-05T01:00:00Z", "2028-06-01T00:00:00Z"):
        runs, calls = calls_of(w, at("2027-12-05T00:00:00Z"), at(until))
        assert len(runs) == 1 and runs[0][2], runs  # open-ended, and nothing after it
        # The walk back (MAX_WALK), then about two firings asked per day of a year.
        assert calls <= 256 + 2 * 366 + 16, calls
    assert w.never_closes(at("2027-12-05T00:00:00Z"))


def test_a_run_that_chains_for_longer_than_a_year_never_closes() -> None:
    assert window("0 0 1 1 *", "9000h").never_closes(at("2027-06-01T00:00:00Z"))
    assert not window("0 0 1 1 *", "8000h").never_closes(at("2027-06-01T00:00:00Z"))
    # All of February to November: ten months of chained firings, then a gap.
    long = window("* * * 2-11 *", "1m")
    assert not long.never_closes(at("2027-03-01T00:00:00Z"))
    runs, _ = calls_of(long, at("2027-03-01T00:00:00Z"), at("2027-03-02T00:00:00Z"))
    assert runs[0][1:] == (at("2027-12-01T00:00:00Z"), False)


def test_following_a_run_asks_for_about_two_firings_a_day() -> None:
    """The bounds docs/design.md gives: December in 62 firings asked, a year of ``*/5`` in 732."""
    for zone, first in (
        ("", "2027-12-01T00:00:00Z"),
        ("CRON_TZ=Europe/Berlin ", "2027-11-30T23:00:00Z"),
        ("CRON_TZ=America/New_York ", "2027-12-01T05:00:00Z"),
    ):
        w = window(f"{zone}* * * 12 *", "1m")
        CountingWindow.calls[0] = 0
        end, ended = w._run_end(at(first), at(first) + YEAR)
        assert ended and end == at(first) + 31 * DAY  # the 44,640th firing plus a minute
        assert CountingWindow.calls[0] <= 2 * 31, zone
    w = window("*/5 * * * *", "10m")
    CountingWindow.calls[0] = 0
    assert w._run_end(at("2027-12-05T00:00:00Z"), at("2027-12-05T00:00:00Z") + YEAR)[1] is False
    assert CountingWindow.calls[0] <= 2 * 366
