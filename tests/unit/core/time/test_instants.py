"""Instants print as RFC 3339 with a four-digit year, at the edges of the calendar too."""

from __future__ import annotations

import pytest

from kumaco.core.errors import InvalidInput
from kumaco.core.time.instants import format_exact_instant, format_instant, parse_time


@pytest.mark.parametrize(
    ("text", "second", "exact"),
    [
        ("0001-01-01", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"),
        ("0999-06-30T12:00:00Z", "0999-06-30T12:00:00Z", "0999-06-30T12:00:00.000000Z"),
        ("1969-12-31T23:59:59.25Z", "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.250000Z"),
        ("2027-03-20T02:00:00+01:00", "2027-03-20T01:00:00Z", "2027-03-20T01:00:00.000000Z"),
        ("9999-12-31T23:59:59.5Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.500000Z"),
    ],
)
def test_an_instant_prints_with_a_four_digit_year(text: str, second: str, exact: str) -> None:
    t = parse_time(text)
    assert (format_instant(t), format_exact_instant(t)) == (second, exact)


def test_the_exact_form_rounds_up_to_the_microsecond() -> None:
    t = parse_time("0001-01-01") + 1
    assert format_exact_instant(t) == "0001-01-01T00:00:00.000001Z"
    assert format_instant(t) == "0001-01-01T00:00:00Z"


def test_an_instant_past_the_years_rfc_3339_writes_still_formats() -> None:
    """Past year 9999 (or before year 1) the year is written as it is, never an exception."""
    after = parse_time("9999-12-31T23:59:59Z") + 10**9
    assert format_instant(after) == "10000-01-01T00:00:00Z"
    before = parse_time("0001-01-01") - 10**9
    assert format_instant(before) == "0000-12-31T23:59:59Z"


def test_an_offset_can_take_a_time_out_of_the_calendar_and_it_still_parses() -> None:
    assert format_instant(parse_time("0001-01-01T00:30:00+01:00")) == "0000-12-31T23:30:00Z"
    with pytest.raises(InvalidInput):
        parse_time("10000-01-01")
