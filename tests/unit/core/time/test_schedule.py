"""kumaco.core.time.schedule: robfig/cron v3 grammar, quirks, zones, never_fires and DST behaviour.

The expectations are hard-coded (the tables of tests/support/builders/schedules.py);
tests/unit/core/time/test_schedule_oracle.py checks the same tables (and random schedules) against
the real Go module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import zoneinfo

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time.schedule import Schedule, parse_schedule
from kumaco.core.time.zones import load_zone
from tests.support.builders.schedules import (
    DATE_LINE_CASES,
    DAY_COMBINATION,
    DST_CASES,
    INVALID,
    NEVER_FIRES,
    VALID,
    VALID_ZONES,
    instants,
    specs,
    unix,
)
from tests.support.judges.reference import next_reference

# ---------------------------------------------------------------------------
# Accepted specs and their bit sets


@pytest.mark.parametrize(("spec", "expected"), VALID.items())
def test_valid_specs(spec: str, expected: tuple[int, int, int, int, int]) -> None:
    s = parse_schedule(spec)
    assert (s.minute, s.hour, s.dom, s.month, s.dow) == expected
    assert s.source == spec


# ---------------------------------------------------------------------------
# Rejected specs: (spec, words the message must contain)


@pytest.mark.parametrize(("spec", "words"), INVALID)
def test_invalid_specs(spec: str, words: tuple[str, ...]) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_schedule(spec)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_error_messages_are_bounded() -> None:
    for spec in ("1" * 100_000 + " * * * *", "* * * * " + "x" * 100_000, "@" + "y" * 100_000):
        with pytest.raises(InvalidInput) as info:
            parse_schedule(spec)
        assert len(str(info.value)) < 400
    with pytest.raises(InvalidInput) as info:
        parse_schedule("TZ=" + "Z" * 100_000 + " 0 0 * * *")
    assert len(str(info.value)) < 400


def test_non_string_rejected() -> None:
    with pytest.raises(InvalidInput):
        parse_schedule(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Zones


@pytest.mark.parametrize(
    ("spec", "prefix_zone", "zone_name"),
    [
        ("0 3 * * *", None, "UTC"),
        ("TZ=Europe/Berlin 0 3 * * *", "Europe/Berlin", "Europe/Berlin"),
        ("CRON_TZ=Asia/Kathmandu 0 3 * * *", "Asia/Kathmandu", "Asia/Kathmandu"),
        ("TZ=UTC 0 3 * * *", "UTC", "UTC"),
        ("TZ= 0 3 * * *", "", "UTC"),  # Go: LoadLocation("") is UTC
        ("TZ=Europe/Kiev 0 3 * * *", "Europe/Kiev", "Europe/Kiev"),  # backward links
        ("TZ=US/Eastern @daily", "US/Eastern", "US/Eastern"),
        ("TZ=Etc/GMT+5 0 3 * * *", "Etc/GMT+5", "Etc/GMT+5"),
    ],
)
def test_zone_prefix(spec: str, prefix_zone: str | None, zone_name: str) -> None:
    s = parse_schedule(spec)
    assert (s.prefix_zone, s.zone_name) == (prefix_zone, zone_name)
    assert s.zone.key == zone_name


def test_no_prefix_means_utc() -> None:
    s = parse_schedule("0 3 * * *")
    assert s.next_fire(unix("2024-06-01T12:00:00+00:00")) == unix("2024-06-02T03:00:00+00:00")


def test_in_zone() -> None:
    s = parse_schedule("0 3 * * *")
    berlin = s.in_zone("Europe/Berlin")
    assert (berlin.zone_name, berlin.prefix_zone, berlin.source) == (
        "Europe/Berlin",
        None,
        s.source,
    )
    assert berlin.next_fire(unix("2024-06-01T12:00:00+00:00")) == unix("2024-06-02T03:00:00+02:00")
    assert berlin != s
    assert berlin == parse_schedule("0 3 * * *").in_zone("Europe/Berlin")
    assert s.in_zone("").zone_name == "UTC"
    prefixed = parse_schedule("TZ=Asia/Tokyo 0 3 * * *").in_zone("Europe/Berlin")
    assert (prefixed.prefix_zone, prefixed.zone_name) == ("Asia/Tokyo", "Europe/Berlin")
    with pytest.raises(InvalidInput, match="Local"):
        s.in_zone("Local")
    with pytest.raises(InvalidInput, match="Nowhere/Land"):
        s.in_zone("Nowhere/Land")


def test_load_zone_reads_tzdata_and_caches() -> None:
    berlin = load_zone("Europe/Berlin")
    assert isinstance(berlin, zoneinfo.ZoneInfo)
    assert berlin.key == "Europe/Berlin"
    assert load_zone("Europe/Berlin") is berlin
    assert load_zone("").key == "UTC"
    assert load_zone("UTC") is load_zone("")
    summer = dt.datetime(2024, 7, 1, 12, tzinfo=berlin)
    assert summer.utcoffset() == dt.timedelta(hours=2)


@pytest.mark.parametrize(
    "name",
    [
        "Local",
        "local",
        "Nowhere/Land",
        "../UTC",
        "Europe/../UTC",
        "/etc/localtime",
        "\\UTC",
        "./UTC",
        "America//New_York",
        "America/New_York/",
        "America",
        "zone.tab",
        "tzdata.zi",
        "__init__.py",
        "Europe/__init__",
        "posixrules",  # exists on many hosts, but is not a zone of the tzdata package
        "localtime",
        "right/UTC",
        "posix/UTC",
        "UTC\x00",
        "Europe/Berlin ",
        "x" * 10_000,
    ],
)
def test_load_zone_rejects(name: str) -> None:
    with pytest.raises(InvalidInput):
        load_zone(name)
    if " " not in name:  # the prefix's zone ends at the first space
        with pytest.raises(InvalidInput):
            parse_schedule(f"TZ={name} 0 0 * * *")


# ---------------------------------------------------------------------------
# never_fires


@pytest.mark.parametrize(("spec", "expected"), NEVER_FIRES.items())
def test_never_fires(spec: str, expected: bool) -> None:
    s = parse_schedule(spec)
    assert s.never_fires is expected
    if expected:
        assert s.next_fire(unix("2024-01-01T00:00:00+00:00")) is None


def test_leap_day_schedule_can_exceed_robfigs_horizon() -> None:
    s = parse_schedule("0 0 29 2 *")
    assert not s.never_fires
    assert s.next_fire(unix("2024-01-01T00:00:00+00:00")) == unix("2024-02-29T00:00:00+00:00")
    # 2100 is no leap year: from late 2096 the next Feb 29 (2104) is beyond five years.
    assert s.next_fire(unix("2096-10-02T00:00:00+00:00")) is None


# ---------------------------------------------------------------------------
# Day-of-month / day-of-week combination


@pytest.mark.parametrize(("spec", "after", "expected"), DAY_COMBINATION)
def test_day_of_month_and_day_of_week(spec: str, after: str, expected: list[str]) -> None:
    s = parse_schedule(spec)
    t = unix(after)
    got = []
    for _ in expected:
        nxt = s.next_fire(t)
        assert nxt is not None
        got.append(dt.datetime.fromtimestamp(nxt, dt.UTC).date().isoformat())
        t = nxt
    assert got == expected


# ---------------------------------------------------------------------------
# DST behaviour (confirmed against robfig; see test_schedule_oracle.py)


@pytest.mark.parametrize(("zone", "spec", "after", "expected"), DST_CASES)
def test_dst(zone: str, spec: str, after: str, expected: list[str]) -> None:
    for s in (parse_schedule(f"CRON_TZ={zone} {spec}"), parse_schedule(spec).in_zone(zone)):
        t = unix(after)
        for want in expected:
            got = s.next_fire(t)
            assert got == unix(want), (
                want,
                got and dt.datetime.fromtimestamp(got, load_zone(zone)).isoformat(),
            )
            t = got


@pytest.mark.parametrize(("zone", "spec", "after", "expected"), DATE_LINE_CASES)
def test_skipped_calendar_day(zone: str, spec: str, after: str, expected: list[str]) -> None:
    s = parse_schedule(f"TZ={zone} {spec}")
    t = unix(after)
    for want in expected:
        got = s.next_fire(t)
        assert got == unix(want)
        assert got == next_reference(s, t)
        t = got


# ---------------------------------------------------------------------------
# croniter is not robfig: why kumaco does not use it for schedule semantics


def croniter_next(spec: str, after: dt.datetime) -> dt.datetime:
    nxt = croniter(spec, after).get_next(dt.datetime)
    assert isinstance(nxt, dt.datetime)
    return nxt


def test_croniter_differs_from_robfig() -> None:
    # 7 as Sunday, 6-field (seconds) specs, L and # are croniter extensions robfig rejects.
    for spec in ("0 0 * * 7", "0 0 * * * 0", "0 0 L * *", "0 0 * * 5#3", "0 0 * * 7-1"):
        assert croniter.is_valid(spec)
        with pytest.raises(InvalidInput):
            parse_schedule(spec)
    # robfig accepts empty comma items, "*-5" and "?" in the minute field; croniter does not.
    for spec in ("1,,2 * * * *", "*-5 * * * *", "? * * * *"):
        assert not croniter.is_valid(spec)
        parse_schedule(spec)
    # "*/1" in the day-of-month field: robfig keeps the star flag (AND: Mondays
    # only), croniter treats it as a restriction (OR: every day).
    monday_noon = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
    assert croniter_next("0 0 */1 * mon", monday_noon) == dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    kumaco = parse_schedule("0 0 */1 * mon").next_fire(int(monday_noon.timestamp()))
    assert kumaco == unix("2024-01-08T00:00:00+00:00")
    # Spring-forward gap: croniter fires at 03:00 EDT, robfig skips the day.
    ny = zoneinfo.ZoneInfo("America/New_York")
    before = dt.datetime(2024, 3, 9, 12, tzinfo=ny)
    assert croniter_next("30 2 * * *", before) == dt.datetime(2024, 3, 10, 3, 0, tzinfo=ny)
    kumaco = parse_schedule("30 2 * * *").in_zone("America/New_York")
    assert kumaco.next_fire(int(before.timestamp())) == unix("2024-03-11T02:30:00-04:00")


# ---------------------------------------------------------------------------
# Robustness and the fast path


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_only_raises_invalid_input(text: str) -> None:
    for spec in (text, "TZ=" + text, "CRON_TZ=UTC " + text, "@" + text):
        try:
            s = parse_schedule(spec)
        except InvalidInput as err:
            message = str(err)
        else:
            assert isinstance(s, Schedule)
            s.next_fire(0)
            continue
        assert "\n" not in message


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape")))
def test_parse_survives_lone_surrogates(text: str) -> None:
    with contextlib.suppress(InvalidInput):
        parse_schedule(text)


# Shared with test_schedule_oracle.py.


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fast_search_equals_literal_replay(data: st.DataObject) -> None:
    spec, zone = data.draw(specs(VALID_ZONES))
    try:
        s = parse_schedule(spec)
    except InvalidInput:
        return
    for after in data.draw(instants(zone)):
        assert s.next_fire(after) == next_reference(s, after), (spec, after)
