"""Window ConfigMaps: validation naming keys (kumaco.core.windows.format), open/close arithmetic (windows).

The property test checks ``Window.state_at`` (open or closed, and when that next
changes) against robfig's own firings around DST changes in several zones: the
chain of ``Next`` a robfig cron runner walks, asked of the real robfig/cron v3 (the
Go oracle, ``hack/oracle``), not of kumaco's ``next_fire``.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kumaco.core.time.durations import HOUR, SECOND
from kumaco.core.windows.format import MAX_VALUE_LENGTH, parse_window
from kumaco.core.windows.window import Interval, InvalidWindow, Window, WindowState
from tests.support.judges.oracle import Oracle


def at(text: str) -> int:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(t.timestamp()) * SECOND


def window(start: str, duration: str = "1h", selector: str = "", **extra: object) -> Window:
    w = parse_window(
        "ns", "w", {"startTime": start, "duration": duration, "nodeSelector": selector, **extra}
    )
    assert isinstance(w, Window), w
    return w


def errors(data: object, **kw: bool) -> dict[str, str]:
    w = parse_window("ns", "w", data, **kw)  # type: ignore[arg-type]
    assert isinstance(w, InvalidWindow)
    return {e.key: e.message for e in w.errors}


# ----------------------------------------------------------------------------- validation


def test_a_valid_window() -> None:
    w = window("0 3 * * *", "2h", "zone=a")
    assert (w.key, w.duration, str(w.selector), w.zone_name) == ("ns/w", 2 * HOUR, "zone=a", "UTC")


@pytest.mark.parametrize("key", ["startTime", "duration", "nodeSelector"])
def test_each_required_key_missing_is_named(key: str) -> None:
    data = {"startTime": "0 3 * * *", "duration": "1h", "nodeSelector": ""}
    del data[key]
    assert errors(data) == {key: "is missing"}


def test_a_case_variant_of_a_key_is_pointed_out() -> None:
    assert errors({"starttime": "0 3 * * *", "duration": "1h", "nodeSelector": ""}) == {
        "startTime": "is missing (found 'starttime': keys are case-sensitive)"
    }


def test_every_case_variant_of_a_missing_key_is_named_once() -> None:
    """The missing key's hint names the first variant; any other variant is an unknown key."""
    w = parse_window(
        "ns",
        "w",
        {"starttime": "0 3 * * *", "STARTTIME": "0 4 * * *", "duration": "1h", "nodeSelector": ""},
    )
    assert isinstance(w, InvalidWindow)
    assert [(e.key, e.message) for e in w.errors] == [
        ("startTime", "is missing (found 'starttime': keys are case-sensitive)"),
        ("STARTTIME", "is not a window key: did you mean startTime? (keys are case-sensitive)"),
    ]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (1, "an integer"),
        (True, "a boolean"),
        (None, "null"),
        ([1], "a list"),
        ({"a": 1}, "a map"),
        (1.5, "a number"),
    ],
)
def test_wrong_types_are_named(value: object, kind: str) -> None:
    data = {"startTime": value, "duration": value, "nodeSelector": value}
    assert errors(data) == dict.fromkeys(data, f"must be a string, got {kind}")


def test_empty_values() -> None:
    assert errors({"startTime": " ", "duration": "", "nodeSelector": ""}) == {
        "startTime": "is empty",
        "duration": "is empty",
    }


def test_all_problems_are_reported_at_once_in_key_order() -> None:
    w = parse_window(
        "ns", "w", {"nodeSelector": "a in (b", "duration": "1d", "startTime": "61 * * * *"}
    )
    assert isinstance(w, InvalidWindow)
    assert [e.key for e in w.errors] == ["startTime", "duration", "nodeSelector"]
    assert w.reason.startswith("startTime: minute: ")


def test_binary_data_only_is_explained() -> None:
    assert errors(None, has_binary_data=True)["startTime"] == "is missing (binaryData is not read)"


def test_data_that_is_not_a_map() -> None:
    assert errors(["x"])["duration"] == "is missing (data must be a map of strings, got a list)"


def test_a_huge_value_is_rejected_before_parsing() -> None:
    big = "1" * (1 << 20)
    found = errors({"startTime": big, "duration": big + "h", "nodeSelector": "a=" + big})
    assert (
        found["startTime"]
        == f"is {1 << 20} characters long; at most {MAX_VALUE_LENGTH} are accepted"
    )
    assert set(found) == {"startTime", "duration", "nodeSelector"}


def test_time_zone_key() -> None:
    assert window("0 3 * * *", timeZone="Europe/Berlin").zone_name == "Europe/Berlin"
    assert "timeZone" in errors(
        {"startTime": "0 3 * * *", "duration": "1h", "nodeSelector": "", "timeZone": "Mars/Olympus"}
    )
    combined = errors(
        {
            "startTime": "CRON_TZ=Asia/Tokyo 0 3 * * *",
            "duration": "1h",
            "nodeSelector": "",
            "timeZone": "Europe/Berlin",
        }
    )
    assert list(combined) == ["timeZone"]
    assert "cannot be combined" in combined["timeZone"]
    assert "timeZone" in errors(
        {"startTime": "0 3 * * *", "duration": "1h", "nodeSelector": "", "timeZone": ""}
    )


@pytest.mark.parametrize("start", ["0 0 30 2 *", "0 0 31 4,6,9,11 *", ", * * * *"])
def test_a_schedule_that_never_fires_is_invalid(start: str) -> None:
    assert (
        "never fires"
        in errors({"startTime": start, "duration": "1h", "nodeSelector": ""})["startTime"]
    )


@pytest.mark.parametrize("duration", ["0", "-1h", "0s"])
def test_duration_must_be_positive(duration: str) -> None:
    assert (
        "greater than 0"
        in errors({"startTime": "0 3 * * *", "duration": duration, "nodeSelector": ""})["duration"]
    )


def test_every_is_rejected_with_a_clear_message() -> None:
    msg = errors({"startTime": "@every 1h", "duration": "1h", "nodeSelector": ""})["startTime"]
    assert "@every" in msg and "anchor" in msg


# ----------------------------------------------------------------------------- open / closed


def test_open_on_the_half_open_interval() -> None:
    w = window("0 3 * * *", "2h")
    assert not w.state_at(at("2026-12-01T02:59:59Z")).open
    s = w.state_at(at("2026-12-01T03:00:00Z"))
    assert (s.open, s.closes) == (True, at("2026-12-01T05:00:00Z"))
    assert w.run_start(at("2026-12-01T03:00:00Z")) == at("2026-12-01T03:00:00Z")
    assert w.state_at(at("2026-12-01T04:59:59Z")).open
    closed = w.state_at(at("2026-12-01T05:00:00Z"))
    assert (closed.open, closed.opens) == (False, at("2026-12-02T03:00:00Z"))


def test_sub_second_durations_and_instants() -> None:
    w = window("0 3 * * *", "1.5s")
    assert w.state_at(at("2026-12-01T03:00:01Z") + SECOND // 2 - 1).open
    assert not w.state_at(at("2026-12-01T03:00:01Z") + SECOND // 2).open


def test_overlapping_occurrences_merge() -> None:
    w = window("0 1-5 * * *", "90m")  # five overlapping occurrences: one run 01:00-06:30
    t = at("2026-12-01T05:10:00Z")  # the end lies before the end of the next hour: exact
    assert w.state_at(t) == WindowState(open=True, closes=at("2026-12-01T06:30:00Z"))
    assert w.run_start(t) == at("2026-12-01T01:00:00Z")
    # Earlier, the end is beyond the horizon: "no end in sight", looked at again each full hour.
    early = w.state_at(at("2026-12-01T01:10:00Z"))
    assert early == WindowState(open=True, recheck=at("2026-12-01T02:00:00Z"))


def test_a_window_that_never_closes_has_no_end_in_sight_and_a_recheck() -> None:
    w = window("0 * * * *", "90m")  # every hour for 90 minutes: always open
    t = at("2026-12-01T10:30:00Z")
    s = w.state_at(t)
    assert (s.open, s.closes) == (True, None)
    assert s.recheck == at("2026-12-01T11:00:00Z")
    assert s.next_change == s.recheck
    assert w.run_start(t) is None  # it began beyond the walk-back bound
    assert w.state_at(t + 60 * SECOND) == s  # the same answer while it holds


def test_the_answer_is_a_pure_function_of_the_instant() -> None:
    t = at("2026-12-01T10:30:00Z")
    for spec, duration in (("* 3-4 * * *", "2m"), ("0 * * * *", "90m"), ("*/5 * * * *", "6m")):
        asked_before = window(spec, duration)
        for earlier in (t - 3600 * SECOND, t - 1, t - 1800 * SECOND):
            asked_before.state_at(earlier)
        assert asked_before.state_at(t) == window(spec, duration).state_at(t), spec


def test_touching_occurrences_merge() -> None:
    w = window("0 1,2 * * *", "1h")  # 01:00-02:00 and 02:00-03:00 touch
    s = w.state_at(at("2026-12-01T01:30:00Z"))
    assert s.closes == at("2026-12-01T03:00:00Z")
    assert w.run_start(at("2026-12-01T01:30:00Z")) == at("2026-12-01T01:00:00Z")
    assert list(w.intervals(at("2026-12-01T00:00:00Z"), at("2026-12-01T12:00:00Z"))) == [
        Interval(at("2026-12-01T01:00:00Z"), at("2026-12-01T03:00:00Z"))
    ]


def test_intervals_begin_before_the_range_when_open_at_its_start() -> None:
    w = window("0 3 * * *", "2h")
    runs = list(w.intervals(at("2026-12-01T04:00:00Z"), at("2026-12-03T00:00:00Z")))
    assert [(r.start, r.end) for r in runs] == [
        (at("2026-12-01T03:00:00Z"), at("2026-12-01T05:00:00Z")),
        (at("2026-12-02T03:00:00Z"), at("2026-12-02T05:00:00Z")),
    ]


def test_a_zone_shifts_the_utc_instants_with_dst() -> None:
    w = window("CRON_TZ=Europe/Berlin 0 3 * * *", "1h")
    assert w.run_start(at("2026-12-01T02:30:00Z")) == at("2026-12-01T02:00:00Z")  # 03:00 CET
    assert w.run_start(at("2026-07-01T01:30:00Z")) == at("2026-07-01T01:00:00Z")  # 03:00 CEST
    assert w.state_at(at("2026-07-01T01:30:00Z")).closes == at("2026-07-01T02:00:00Z")


def test_spring_forward_gap_does_not_fire_and_fall_back_fires_twice() -> None:
    gap = window("CRON_TZ=America/New_York 30 2 * * *", "10m")
    runs = list(gap.intervals(at("2024-03-09T12:00:00Z"), at("2024-03-11T12:00:00Z")))
    assert [r.start for r in runs] == [at("2024-03-11T06:30:00Z")]  # not on 2024-03-10
    twice = window("CRON_TZ=America/New_York 30 1 * * *", "10m")
    runs = list(twice.intervals(at("2024-11-03T04:00:00Z"), at("2024-11-03T08:00:00Z")))
    assert [r.start for r in runs] == [at("2024-11-03T05:30:00Z"), at("2024-11-03T06:30:00Z")]


def test_lord_howe_fall_back_follows_robfig_not_the_wall_clock(robfig_oracle: Oracle) -> None:
    """On 2025-04-06 (02:00 +11 -> 01:30 +10:30) robfig skips 06:00-06:29, and so does kumaco."""
    w = window("CRON_TZ=Australia/Lord_Howe 0 6 * * *", "10m")
    after = at("2025-04-05T15:00:00Z")  # 01:30 +10:30, just after the fall-back
    state = w.state_at(after)
    assert state.opens == at("2025-04-06T19:30:00Z")  # 2025-04-07 06:00 +10:30: April 6 is skipped
    assert robfig_oracle.cron(w.start_time, [after // SECOND]) == {"next": [state.opens // SECOND]}


# ----------------------------------------------------------------------------- robfig's firings

# Zones whose DST shifts are whole hours (and Kathmandu's +05:45, no DST). Lord Howe's
# 30-minute shifts are left out: there robfig's answer depends on where its search starts, so
# "open at t" has no single robfig answer. On 2025-04-06 (fall-back at 02:00 +11), for
# ``* */6 * * *``, robfig's Next from 05:00 or 05:59 is 06:00 +10:30, but the chain a runner
# walks (Next from 00:59 +11) jumps to 06:30, skipping 06:00-06:29. kumaco takes Next from
# (t - duration), which equals robfig's Next (test_schedule_oracle.py), and pins the skipped
# day of ``0 6 * * *`` above.
ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Kathmandu",
    "America/Sao_Paulo",
    "Europe/London",
]
# Instants near DST changes (UTC): New York, Berlin/London, Lord Howe's dates, Sao Paulo 2018.
AROUND = [
    at("2024-03-10T07:00:00Z"),
    at("2024-11-03T06:00:00Z"),
    at("2025-03-30T01:00:00Z"),
    at("2025-10-26T01:00:00Z"),
    at("2025-04-05T15:00:00Z"),
    at("2025-10-04T15:30:00Z"),
    at("2018-11-04T03:00:00Z"),
    at("2019-02-17T02:00:00Z"),
    at("2026-06-15T12:00:00Z"),
]


def brute_open(oracle: Oracle, w: Window, t: int) -> bool:
    """Open iff a firing of robfig's chain lies in ``(t - duration, t]``.

    The firings are what a robfig cron runner yields, each ``Next`` taken from
    the previous firing, started a day before the interval, as the real robfig
    computes them (:meth:`Oracle.chain`). Not a wall-clock field match: robfig
    has DST quirks the fields alone do not show (e.g. ``* 1-3 */2 * *`` in
    America/Sao_Paulo fires at 2018-11-04 01:00 -02, an even day, because
    midnight was skipped and robfig steps back an hour into the 3rd), and
    ``Next`` from a second before such a firing can skip it, so "fires at s"
    only means something along the chain.
    """
    lo = (t - w.duration) // SECOND
    fires = on_days(oracle, w, oracle.chain(w.start_time, lo - 86400, t // SECOND))
    return any(f * SECOND > t - w.duration for f in fires)


def on_days(oracle: Oracle, w: Window, fires: list[int]) -> list[int]:
    """The firings on the window's ``daysOfMonth`` (all without one), by Go's calendar day of
    each firing in the window's zone: what ``daysOfMonth`` means, asked of Go itself."""
    if not w.days or not fires:
        return fires
    walls = oracle.walls(w.zone_name, fires)
    return [f for f, wall in zip(fires, walls, strict=True) if w.days >> wall[2] & 1]


_FIELD = st.one_of(
    st.just("*"), st.integers(0, 59).map(str), st.just("*/15"), st.just("10-40/10"), st.just("0,30")
)
_HOUR = st.one_of(
    st.just("*"), st.integers(0, 23).map(str), st.just("1-3"), st.just("*/6"), st.just("0,2,23")
)
_DOM = st.sampled_from(["*", "?", "1", "15", "1-7", "*/2", "29,30,31"])
_DOW = st.sampled_from(["*", "?", "0", "1-5", "SUN", "sat", "*/3"])
#: ``daysOfMonth`` ("": no such key): the nth weekday's weeks, month ends, single days.
_DAYS = st.sampled_from(["", "", "", "1-7", "8-14", "29-31", "1,15", "*/2", "31", "13"])


@pytest.mark.oracle
@settings(max_examples=300, deadline=None)
@given(
    minute=_FIELD,
    hour=_HOUR,
    dom=_DOM,
    dow=_DOW,
    zone=st.sampled_from(ZONES),
    minutes=st.integers(1, 180),
    extra_s=st.integers(0, 59),
    anchor=st.sampled_from(AROUND),
    offset=st.integers(-3 * 86400, 3 * 86400),
    days=_DAYS,
)
def test_open_closed_agrees_with_robfigs_firings_across_dst(
    robfig_oracle: Oracle,
    minute: str,
    hour: str,
    dom: str,
    dow: str,
    zone: str,
    minutes: int,
    extra_s: int,
    anchor: int,
    offset: int,
    days: str,
) -> None:
    """Also with ``daysOfMonth``: robfig's firings on those days (Go's calendar) only."""
    spec = f"CRON_TZ={zone} {minute} {hour} {dom} * {dow}"
    data = {"startTime": spec, "duration": f"{minutes}m{extra_s}s", "nodeSelector": ""}
    w = parse_window("ns", "w", {**data, **({"daysOfMonth": days} if days else {})})
    if isinstance(w, InvalidWindow):
        assert "never fires" in w.reason or "never meet" in w.reason, w.reason
        return
    t = anchor + offset * SECOND
    state = w.state_at(t)
    assert state.open == brute_open(robfig_oracle, w, t), (spec, minutes, extra_s, t)
    nxt = state.next_change
    if nxt is not None:
        assert nxt > t
        if not state.open:  # it opens exactly then, and stays closed until then
            assert brute_open(robfig_oracle, w, nxt)
            assert not brute_open(robfig_oracle, w, nxt - SECOND)
        elif state.closes is not None:  # it closes exactly then
            assert not brute_open(robfig_oracle, w, nxt)
            assert brute_open(robfig_oracle, w, nxt - 1)
        else:  # a run with no end in sight: still open when it is looked at again
            assert brute_open(robfig_oracle, w, nxt - 1)


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    t=st.integers(at("1990-01-01T00:00:00Z"), at("2090-01-01T00:00:00Z")),
)
def test_next_change_is_strictly_after_now(zone: str, t: int) -> None:
    for spec in ("0 3 * * *", "*/7 * * * *", "0 0 29 2 *", "30 2 * * sun"):
        w = window(f"CRON_TZ={zone} {spec}", "45m")
        nc = w.state_at(t).next_change
        assert nc is None or nc > t


def test_the_state_of_a_run_does_not_depend_on_the_instant_asked_before() -> None:
    """Found by hypothesis (test_plan_does_not_depend_on_what_was_planned_before): asked at
    03:09:59.999999999 the run of ``5-10 3 * * *`` for 2h was followed from its 03:09 firing
    and given up as "no end in sight" when its end passed the horizon, and the memoised
    answer then served 03:10:00, where a fresh search said "closes 05:10". Now a run is
    followed through the same firings wherever the search starts."""

    def fresh() -> Window:
        w = parse_window(
            "m", "w", {"startTime": "5-10 3 * * *", "duration": "2h", "nodeSelector": ""}
        )
        assert isinstance(w, Window)
        return w

    at_0310 = 1_704_078_600 * SECOND  # 2024-01-01T03:10:00Z
    w = fresh()
    before = w.state_at(at_0310 - 1)
    assert w.state_at(at_0310) == fresh().state_at(at_0310) == before
    assert before.closes == at_0310 + 2 * 3600 * SECOND


# ----------------------------------------------------------------------------- daysOfMonth


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("zone", "spec", "days", "after"),
    [
        ("UTC", "0 1 * * SAT", "1-7", "2026-11-08T00:00:00Z"),
        ("Europe/Berlin", "0 2 * * SUN", "22-28", "2026-03-01T00:00:00Z"),  # the DST night
        ("Europe/Berlin", "30 2 * * *", "29,30", "2026-03-28T00:00:00Z"),  # 29th: in the gap
        ("America/New_York", "30 1 * * *", "1-3", "2024-10-31T00:00:00Z"),  # fall back twice
        ("America/Sao_Paulo", "0 0 * * *", "4", "2018-11-01T00:00:00Z"),  # midnight skipped
        ("Pacific/Apia", "0 3 * * *", "29-31", "2011-12-25T00:00:00Z"),  # the 30th skipped
        ("UTC", "0 0 * 2 *", "29", "2025-01-01T00:00:00Z"),  # next: 2028-02-29
        ("UTC", "*/10 * * * *", "31", "2026-04-01T00:00:00Z"),
    ],
)
def test_a_firing_on_days_is_robfigs_next_firing_on_those_days(
    robfig_oracle: Oracle, zone: str, spec: str, days: str, after: str
) -> None:
    """``daysOfMonth``'s firings, from ``after`` on: robfig's chain, kept on those days."""
    w = window(f"CRON_TZ={zone} {spec}", daysOfMonth=days)
    t = at(after) // SECOND
    chain = robfig_oracle.chain(w.start_time, t, t + 4 * 366 * 86400)
    expected = on_days(robfig_oracle, w, chain)[:6]
    got = w.firings(at(after) + SECOND, at(after) + 4 * 366 * 86400 * SECOND, len(expected))
    assert [f // SECOND for f in got] == expected
