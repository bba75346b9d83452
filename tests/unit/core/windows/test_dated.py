"""Dated windows: a one-shot startTime, notBefore/notAfter, and when a window has ended.

The bounded window's firings are the unbounded window's firings that start in
``[notBefore, notAfter)`` -- a property over generated schedules, zones and bounds --
so every answer built on firings (open, closes, opens, runs, DST notes) follows.
"""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from kumaco.core.time.durations import HOUR, SECOND
from kumaco.core.windows.daylight_saving import dst_notes
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import YEAR, InvalidWindow, Window


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND


def window(start: str, duration: str = "1h", **extra: str) -> Window:
    w = parse_window(
        "ns", "w", {"startTime": start, "duration": duration, "nodeSelector": "", **extra}
    )
    assert isinstance(w, Window), w
    return w


def errors(**data: str) -> dict[str, str]:
    w = parse_window("ns", "w", {"duration": "1h", "nodeSelector": "", **data})
    assert isinstance(w, InvalidWindow), w
    return {e.key: e.message for e in w.errors}


def test_a_one_shot_window_opens_exactly_once_and_then_has_ended() -> None:
    w = window("2027-01-15T02:00:00", "4h", timeZone="Europe/Berlin")
    start, end = at("2027-01-15T01:00:00+00:00"), at("2027-01-15T05:00:00+00:00")
    before = w.state_at(at("2026-12-01T00:00:00+00:00"))
    assert (before.open, before.opens, before.ended) == (False, start, False)
    inside = w.state_at(start + HOUR)
    assert (inside.open, inside.closes, inside.ended) == (True, end, False)
    after = w.state_at(end)
    assert (after.open, after.opens, after.ended) == (False, None, True)
    assert [(iv.start, iv.end) for iv in w.intervals(0, at("2100-01-01T00:00:00+00:00"))] == [
        (start, end)
    ]
    assert w.firings(0, at("2261-01-01T00:00:00+00:00")) == [start]
    assert not w.ended(end - 1) and w.ended(end)
    assert w.zone_name == "Europe/Berlin"
    assert dst_notes(w, 0, at("2028-01-01T00:00:00+00:00")) == []


def test_an_offset_wins_over_the_zone_which_stays_the_windows_display_zone() -> None:
    w = window("2027-01-15T02:00:00+05:00", "1h", timeZone="America/New_York")
    assert w.firings(0, at("2100-01-01T00:00:00+00:00")) == [at("2027-01-14T21:00:00+00:00")]
    assert w.zone_name == "America/New_York"


def test_bounds_keep_the_occurrences_that_start_in_them_across_a_dst_change() -> None:
    w = window(
        "0 2 * * SUN",
        "3h",
        timeZone="America/New_York",
        notBefore="2027-03-01",
        notAfter="2027-03-22T02:00:00",
    )
    got = [(iv.start, iv.end) for iv in w.intervals(0, at("2028-01-01T00:00:00+00:00"))]
    assert got == [
        (at("2027-03-07T07:00:00+00:00"), at("2027-03-07T10:00:00+00:00")),  # EST
        # 2027-03-14 02:00 does not exist in New York: robfig does not fire that night
        (at("2027-03-21T06:00:00+00:00"), at("2027-03-21T09:00:00+00:00")),  # EDT
    ]
    notes = [
        n.text
        for n in dst_notes(w, at("2027-01-01T00:00:00+00:00"), at("2028-01-01T00:00:00+00:00"))
    ]
    assert notes == ["02:00 does not exist on 2027-03-14 in America/New_York: no window that night"]
    # the autumn change is after notAfter: nothing said of it
    assert w.ended(at("2027-03-21T09:00:00+00:00"))
    assert not w.ended(at("2027-03-21T08:59:59+00:00"))


def test_an_occurrence_that_starts_before_not_after_runs_its_whole_duration() -> None:
    w = window("0 22 * * *", "4h", notAfter="2027-01-02")
    state = w.state_at(at("2027-01-01T23:00:00+00:00"))
    assert state.open and state.closes == at("2027-01-02T02:00:00+00:00")
    assert w.state_at(at("2027-01-02T02:00:00+00:00")).ended


def test_a_not_after_beyond_robfigs_five_years_is_not_an_end_yet() -> None:
    w = window("0 0 29 2 *", "1h", notAfter="2200-01-01")  # February 29th: none from 2097 to 2103
    assert not w.ended(at("2097-03-01T00:00:00+00:00"))
    assert w.ended(at("2199-03-01T00:00:00+00:00"))


def test_what_a_dated_window_refuses_names_the_key_and_the_fix() -> None:
    assert errors(startTime="2027-01-15T02:00:00Z", daysOfMonth="1-7", notBefore="2027-01-01") == {
        "daysOfMonth": "applies to a cron startTime only: a date-time startTime is one "
        "occurrence; remove the key",
        "notBefore": "applies to a cron startTime only: a date-time startTime is one "
        "occurrence; remove the key",
    }
    assert errors(startTime="0 2 * * *", notBefore="2027-02-01", notAfter="2027-02-01") == {
        "notAfter": "'2027-02-01' is not after notBefore '2027-02-01': no occurrence could count"
    }
    assert errors(startTime="0 2 * * SUN", notBefore="2027-03-01", notAfter="2027-03-06") == {
        "notAfter": "no occurrence of startTime '0 2 * * SUN' starts between notBefore "
        "'2027-03-01' and '2027-03-06' (in UTC)"
    }
    assert "timeZone" in errors(startTime="2027-01-15T02:00:00", timeZone="Mars/Olympus")
    assert errors(startTime="2027-01-15T02:00:00", timeZone="") == {
        "timeZone": "is empty; remove the key to use UTC"
    }
    assert errors(startTime="0 2 * * *", notAfter="soon")["notAfter"].startswith(
        "'soon' is not an RFC 3339 date-time or a date such as"
    )
    assert errors(startTime="2027-01-15T02:00:00Z", describe="x")["describe"].startswith(
        "is not a window key"
    )


def test_bounds_are_read_in_the_zone_of_a_cron_prefix() -> None:
    w = window("CRON_TZ=Asia/Tokyo 0 9 * * *", "1h", notBefore="2027-01-10", notAfter="2027-01-12")
    assert w.firings(0, at("2028-01-01T00:00:00+00:00")) == [
        at("2027-01-10T00:00:00+00:00"),
        at("2027-01-11T00:00:00+00:00"),
    ]


def test_describe_says_once_and_the_bounds() -> None:
    assert (
        "once (Europe/Berlin)" in window("2027-01-15T02:00:00", timeZone="Europe/Berlin").describe()
    )
    text = window("0 2 * * *", notBefore="2027-01-01", notAfter="2027-02-01").describe()
    assert ", not before 2027-01-01, not after 2027-02-01, nodes:" in text


SCHEDULES = [
    "0 2 * * *",
    "*/20 * * * *",
    "30 1 * * SUN",
    "0 */6 1-7 * *",
    "15 2 * * *",
    "0 0 29 2 *",
]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
EPOCH_2026 = 1_767_225_600  # 2026-01-01T00:00:00Z


@settings(max_examples=150, deadline=None)
@given(
    spec=st.sampled_from(SCHEDULES),
    zone=st.sampled_from(ZONES),
    duration=st.sampled_from(["10m", "1h", "3h", "30h"]),
    lo=st.integers(0, 400 * 86_400),
    width=st.integers(3600, 40 * 86_400),  # at most 2,880 firings of */20: under the limit
    probe=st.integers(-30 * 86_400, 500 * 86_400),
)
def test_a_bounded_window_is_the_unbounded_one_with_the_firings_outside_dropped(
    spec: str, zone: str, duration: str, lo: int, width: int, probe: int
) -> None:
    plain = window(spec, duration, timeZone=zone)
    nb, na = EPOCH_2026 + lo, EPOCH_2026 + lo + width
    text = {
        k: dt.datetime.fromtimestamp(v, dt.UTC).isoformat() for k, v in (("nb", nb), ("na", na))
    }
    parsed = parse_window(
        "ns",
        "w",
        {
            "startTime": spec,
            "duration": duration,
            "nodeSelector": "",
            "timeZone": zone,
            "notBefore": text["nb"],
            "notAfter": text["na"],
        },
    )
    expected = [
        f
        for f in plain.firings((nb - 86_400) * SECOND, (na + 86_400) * SECOND, 5000)
        if nb * SECOND <= f < na * SECOND
    ]
    if not expected:
        assert isinstance(parsed, InvalidWindow)
        return
    assert isinstance(parsed, Window)
    span = ((nb - 40 * 86_400) * SECOND, (na + 40 * 86_400) * SECOND)
    assert parsed.firings(*span, 5000) == expected
    t = (EPOCH_2026 + probe) * SECOND
    state = parsed.state_at(t)
    open_now = any(f <= t < f + parsed.duration for f in expected)
    assert state.open == open_now
    later = [f for f in expected if f > t]
    assert state.ended == (not open_now and not later)
    if not state.open:
        assert state.opens == (later[0] if later else None)
    assert parsed.never_closes(t, YEAR) is False
