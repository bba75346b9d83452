"""Go ``time.ParseDuration`` semantics of window durations (kumaco.core.time.durations).

Table tests pin each grammar rule; the differential test in
``test_durations_oracle.py`` compares with Go itself.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time.durations import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    SECOND,
    format_go_duration,
    parse_go_duration,
    parse_window_duration,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("1h", HOUR),
        ("1h30m", HOUR + 30 * MINUTE),
        ("1.5h", HOUR + 30 * MINUTE),
        (".5h", 30 * MINUTE),
        ("5.h", 5 * HOUR),
        ("1h1h", 2 * HOUR),  # Go allows repeated units
        ("90m", 90 * MINUTE),
        ("3600s", HOUR),
        ("1ms", MILLISECOND),
        ("1us", MICROSECOND),
        ("1µs", MICROSECOND),  # U+00B5 micro sign
        ("1μs", MICROSECOND),  # U+03BC Greek mu
        ("1ns", 1),
        ("0.000000001s", 1),
        ("1.0000000001s", SECOND),  # below a nanosecond is truncated
        ("2562047h47m16.854775807s", 2**63 - 1),  # the largest int64
        ("-2562047h47m16.854775808s", -(2**63)),
        ("0h", 0),
        ("00001s", SECOND),
        ("1.00000000000000000000000000000000000000000001h", HOUR),  # fraction overflow is ignored
    ],
)
def test_accepts_go_syntax(text: str, ns: int) -> None:
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", 'invalid duration ""'),
        ("1", 'missing unit in duration "1"'),
        ("10", 'missing unit in duration "10"'),
        ("1d", 'unknown unit "d" in duration "1d"'),
        ("1w", 'unknown unit "w" in duration "1w"'),
        ("1H", 'unknown unit "H" in duration "1H"'),
        ("1 h", 'unknown unit " h" in duration "1 h"'),
        (" 1h", 'invalid duration " 1h"'),
        ("1h ", 'unknown unit "h " in duration "1h "'),
        ("1h 30m", 'unknown unit "h " in duration "1h 30m"'),
        ("h", 'invalid duration "h"'),
        (".h", 'invalid duration ".h"'),
        ("-.h", 'invalid duration "-.h"'),
        ("1.2.3h", 'missing unit in duration "1.2.3h"'),
        ("--1h", 'invalid duration "--1h"'),
        ("1h-1m", 'unknown unit "h-" in duration "1h-1m"'),
        ("2562047h47m16.854775808s", 'invalid duration "2562047h47m16.854775808s"'),
        ("9223372036854775808ns", 'invalid duration "9223372036854775808ns"'),
        ("99999999999999999999h", 'invalid duration "99999999999999999999h"'),
        ("1\x00h", 'unknown unit "\\x00h" in duration "1\\x00h"'),
        ("1é", 'unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
        ("１h", 'invalid duration "\\xef\\xbc\\x91h"'),  # a full-width digit is not a digit
    ],
)
def test_rejects_with_gos_words(text: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_go_duration(text)
    assert err.value.reason == reason


@pytest.mark.parametrize("text", ["0", "-1h", "0s", "0.0h", "-0", "0.0000000001s"])
def test_a_window_duration_must_be_positive(text: str) -> None:
    with pytest.raises(InvalidInput, match="must be greater than 0"):
        parse_window_duration(text)


def test_a_huge_value_is_reported_shortly() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_go_duration("1" * (1 << 20) + "h")
    assert len(err.value.reason) < 300
    assert "first 200 of 1048577 bytes shown" in err.value.reason


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1500, "1.5µs"),
        (MILLISECOND, "1ms"),
        (SECOND, "1s"),
        (90 * SECOND, "1m30s"),
        (HOUR + 30 * MINUTE, "1h30m0s"),
        (HOUR + SECOND // 2, "1h0m0.5s"),
        (-HOUR, "-1h0m0s"),
    ],
)
def test_formats_like_go(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_format_then_parse_round_trips(ns: int) -> None:
    assert parse_go_duration(format_go_duration(ns)) == ns


@given(st.text())
def test_only_invalid_input_is_raised(text: str) -> None:
    with contextlib.suppress(InvalidInput):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("1d", "write 24h"),
        ("1.5w", "write 252h"),
        (".5d", "write 12h"),
        ("..0D", ""),  # found by the fuzzer: the hint itself raised on these
        ("0..D", ""),
        (".d", ""),
    ],
)
def test_a_window_duration_in_days_gets_its_hours_and_a_malformed_one_no_crash(
    text: str, hint: str
) -> None:
    from kumaco.core.windows.format import parse_window

    result = parse_window("ns", "w", {"startTime": "0 2 * * *", "duration": text})
    message = str(getattr(result, "reason", result))
    assert "duration" in message, message
    assert hint in message and ("no days or weeks" in message) == bool(hint), message
