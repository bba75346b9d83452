"""Dates and date-times in a window (kumaco.core.time.dates): one instant, or a clear refusal."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time.dates import looks_dated, parse_local_instant


def unix(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp())


@pytest.mark.parametrize(
    ("text", "zone", "instant"),
    [
        ("2027-01-15T02:00:00+01:00", "UTC", "2027-01-15T01:00:00+00:00"),
        ("2027-01-15T02:00:00Z", "Europe/Berlin", "2027-01-15T02:00:00+00:00"),
        ("2027-01-15t02:00:00z", "UTC", "2027-01-15T02:00:00+00:00"),
        ("2027-01-15 02:00", "UTC", "2027-01-15T02:00:00+00:00"),
        ("2027-01-15T02:00:00", "Europe/Berlin", "2027-01-15T01:00:00+00:00"),
        ("2027-07-15T02:00", "Europe/Berlin", "2027-07-15T00:00:00+00:00"),
        ("\u00a02027-07-15T02:00:00-09:30\t", "UTC", "2027-07-15T11:30:00+00:00"),
        # Lord Howe's 30-minute shift: 02:15 exists (after the clocks go forward at 02:00)
        ("2027-10-03T02:45", "Australia/Lord_Howe", "2027-10-02T15:45:00+00:00"),
    ],
)
def test_a_date_time_names_one_instant(text: str, zone: str, instant: str) -> None:
    assert looks_dated(text)
    assert parse_local_instant(text, zone) == unix(instant)


def test_a_date_is_its_midnight_in_the_zone_only_where_allowed() -> None:
    assert parse_local_instant("2027-02-01", "Europe/Berlin", date_allowed=True) == unix(
        "2027-01-31T23:00:00+00:00"
    )
    with pytest.raises(InvalidInput, match=r"a date without a time: write its start, e\.g\. 2027"):
        parse_local_instant("2027-02-01", "UTC")


@pytest.mark.parametrize(
    ("text", "zone", "message"),
    [
        (
            "2027-03-28T02:30:00",
            "Europe/Berlin",
            "does not exist in Europe/Berlin: the clocks move forward over it; write a time "
            "after the change, e.g. 2027-03-28T03:30:00+02:00",
        ),
        (
            "2027-10-31T02:30:00",
            "Europe/Berlin",
            "happens twice in Europe/Berlin (the clocks go back): write its offset, "
            "2027-10-31T02:30:00+02:00 for the first or 2027-10-31T02:30:00+01:00 for the second",
        ),
        (
            "2027-04-04T01:45",
            "Australia/Lord_Howe",
            "happens twice in Australia/Lord_Howe (the clocks go back): write its offset, "
            "2027-04-04T01:45:00+11:00 for the first or 2027-04-04T01:45:00+10:30",
        ),
        ("2027-01-15T02:00:00.5Z", "UTC", "has a fraction of a second"),
        ("2027-13-15T02:00:00Z", "UTC", "is not a valid date-time (month 01-12"),
        ("2027-02-29T02:00:00Z", "UTC", "is not a valid date-time"),
        ("2027-01-15T24:00:00Z", "UTC", "is not a valid date-time"),
        ("2027-01-15T02:00:00+24:00", "UTC", "is not a valid date-time"),
        ("9999-01-15T02:00:00Z", "UTC", "outside the years 1678 to 2261"),
        ("2027-01-15T2:00", "UTC", "is not an RFC 3339 date-time such as"),
        ("2027-01-15 at 2", "UTC", "is not an RFC 3339 date-time such as"),
        ("\x1c2027-01-15T02:00Z", "UTC", "is not an RFC 3339 date-time"),
        ("２０２７-01-15T02:00Z", "UTC", "is not an RFC 3339 date-time"),
    ],
)
def test_a_time_that_is_not_one_instant_is_refused_with_the_fix(
    text: str, zone: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_local_instant(text, zone)
    assert message in str(info.value)


def test_cron_fields_never_look_dated() -> None:
    for spec in ("0 2 * * *", "@daily", "CRON_TZ=UTC 0 2 * * *", "2027 * * * *", "1-7 2 * * *"):
        assert not looks_dated(spec)


@given(
    moment=st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 12, 31)).map(
        lambda d: d.replace(microsecond=0)
    ),
    zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"]),
)
def test_a_wall_clock_time_is_read_exactly_or_refused_exactly_when_it_is_not_one_instant(
    moment: dt.datetime, zone: str
) -> None:
    z = zoneinfo.ZoneInfo(zone)
    instants = {
        moment.replace(tzinfo=z, fold=f).astimezone(dt.UTC)
        for f in (0, 1)
        if moment.replace(tzinfo=z, fold=f).astimezone(z).replace(tzinfo=None) == moment
    }
    text = moment.isoformat(timespec="seconds")
    if len(instants) == 1:
        assert parse_local_instant(text, zone) == int(instants.pop().timestamp())
    else:
        with pytest.raises(InvalidInput, match="does not exist" if not instants else "twice"):
            parse_local_instant(text, zone)
