"""kumaco.core.schedule: robfig/cron v3 grammar, quirks, zones, never_fires and DST behaviour.

The expectations here are hard-coded; tests/unit/test_schedule_oracle.py
checks the same tables (and random schedules) against the real Go module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import zoneinfo

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core import gotime
from kumaco.core.cronfields import GO_SPACE, STAR
from kumaco.core.errors import InvalidInput
from kumaco.core.schedule import Schedule, parse_schedule
from kumaco.core.zones import load_zone, zone_location
from tests.support.judges.reference import next_reference


def unix(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp())


def bits(*values: int) -> int:
    out = 0
    for v in values:
        out |= 1 << v
    return out


def span(lo: int, hi: int) -> int:
    return bits(*range(lo, hi + 1))


ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH, ALL_DOW = (
    span(0, 59) | STAR,
    span(0, 23) | STAR,
    span(1, 31) | STAR,
    span(1, 12) | STAR,
    span(0, 6) | STAR,
)


# ---------------------------------------------------------------------------
# Accepted specs and their bit sets

# spec -> (minute, hour, day of month, month, day of week)
VALID: dict[str, tuple[int, int, int, int, int]] = {
    "0 0 * * *": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    "*/15 9-17 * * mon-fri": (bits(0, 15, 30, 45), span(9, 17), ALL_DOM, ALL_MONTH, span(1, 5)),
    "0 3 1,15 jan-MAR,Dec *": (bits(0), bits(3), bits(1, 15), bits(1, 2, 3, 12), ALL_DOW),
    "0 3 * * SUN,sat": (bits(0), bits(3), ALL_DOM, ALL_MONTH, bits(0, 6)),
    # Go lower-cases U+0130 to a plain "i": FRİ is Friday.
    "0 3 * * FR\u0130": (bits(0), bits(3), ALL_DOM, ALL_MONTH, bits(5)),
    # "?" means "*" in any field, also minute and hour.
    "? ? ? ? ?": (ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH, ALL_DOW),
    # "*-anything" is "*": robfig ignores what follows the hyphen.
    "*-5 *-x-y ?-3 * *": (ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH, ALL_DOW),
    # "n/step" means "n-max/step"; steps above 1 drop the star flag, */1 keeps it.
    "5/15 */1 */2 1/5 */3": (
        bits(5, 20, 35, 50),
        ALL_HOUR,
        bits(*range(1, 32, 2)),
        bits(1, 6, 11),
        bits(0, 3, 6),
    ),
    "10-20/5 */24 * * *": (bits(10, 15, 20), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    # Empty comma items are dropped; "," alone is an empty set.
    "1,,2 , * * *": (bits(1, 2), 0, ALL_DOM, ALL_MONTH, ALL_DOW),
    # strconv.Atoi: sign, leading zeros, any length of zeros.
    "+5 007 0000000000000000000000000000031 +12 */+2": (
        bits(5),
        bits(7),
        bits(31),
        bits(12),
        bits(0, 2, 4, 6),
    ),
    # Huge steps are fine.
    "0/9223372036854775807 0 * * *": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    # Fields split on Unicode White_Space (not on U+001C..U+001F).
    "\t0\u30000\xa0*\x85*\u2028*  ": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    # Descriptors.
    "@yearly": (bits(0), bits(0), bits(1), bits(1), ALL_DOW),
    "@annually": (bits(0), bits(0), bits(1), bits(1), ALL_DOW),
    "@monthly": (bits(0), bits(0), bits(1), ALL_MONTH, ALL_DOW),
    "@weekly": (bits(0), bits(0), ALL_DOM, ALL_MONTH, bits(0)),
    "@daily": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    "@midnight": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
    "@hourly": (bits(0), ALL_HOUR, ALL_DOM, ALL_MONTH, ALL_DOW),
    # Only after a zone prefix is the rest trimmed before the descriptor check.
    "TZ=UTC  @daily \u3000": (bits(0), bits(0), ALL_DOM, ALL_MONTH, ALL_DOW),
}


@pytest.mark.parametrize(("spec", "expected"), VALID.items())
def test_valid_specs(spec: str, expected: tuple[int, int, int, int, int]) -> None:
    s = parse_schedule(spec)
    assert (s.minute, s.hour, s.dom, s.month, s.dow) == expected
    assert s.source == spec


# ---------------------------------------------------------------------------
# Rejected specs: (spec, words the message must contain)

INVALID: list[tuple[str, tuple[str, ...]]] = [
    ("", ("empty",)),
    ("   ", ("expected 5 fields", "found 0")),
    ("0 0 * *", ("expected 5 fields", "found 4")),
    ("0 0 * * * *", ("expected 5 fields", "found 6")),  # no seconds field, no year field
    ("0\x1c0 * * *", ("found 4",)),  # U+001C is not white space for Go
    (" @daily", ("found 1",)),  # no trimming without a zone prefix
    ("@daily ", ("unrecognized descriptor", "'@daily '")),
    ("@DAILY", ("unrecognized descriptor",)),
    ("@reboot", ("unrecognized descriptor",)),
    ("@every 1h", ("@every has no anchor in time",)),
    ("TZ=Europe/Berlin @every 5m", ("@every has no anchor in time",)),
    ("@every", ("@every",)),
    ("60 * * * *", ("minute", "60", "above the maximum 59")),
    ("* 24 * * *", ("hour", "24", "above the maximum 23")),
    ("* * 0 * *", ("day of month", "0", "below the minimum 1")),
    ("* * 32 * *", ("day of month", "32", "maximum 31")),
    ("* * * 0 *", ("month", "below the minimum 1")),
    ("* * * 13 *", ("month", "13")),
    ("* * * * 7", ("day of week", "7", "above the maximum 6")),  # 7 is not Sunday
    ("* * * * 0-7", ("day of week", "0-7")),
    ("5-1 * * * *", ("minute", "range starts at 5, after its end 1", "'5-1'")),
    ("70/5 * * * *", ("minute",)),  # "n/step" means n-59: empty range
    ("*/0 * * * *", ("minute", "step must be a positive number", "'*/0'")),
    ("0/0 * 0/0 * *", ("minute", "step")),
    ("* * 0/0 * *", ("day of month", "below the minimum")),  # bounds are checked first
    ("*/-1 * * * *", ("minute", "negative number -1 not allowed")),
    ("-0 * * * *", ("minute", "not a number")),  # split on '-' first: "" is no number
    ("-5 * * * *", ("minute", "not a number")),
    ("1-2-3 * * * *", ("minute", "too many hyphens", "'1-2-3'")),
    ("*/2/3 * * * *", ("minute", "too many slashes", "'*/2/3'")),
    ("5- * * * *", ("minute", "not a number")),
    ("+ * * * *", ("minute", "not a number")),
    ("* * * * mon-", ("day of week", "not a number")),
    ("1_0 * * * *", ("minute", "'1_0'")),  # Python's int() would accept these three
    ("\u0663 * * * *", ("minute", "not a number")),
    ("\uff11 * * * *", ("minute", "not a number")),
    ("1.5 * * * *", ("minute", "'1.5'")),
    ("9223372036854775807 * * * *", ("minute", "above the maximum")),
    ("9223372036854775808 * * * *", ("minute", "not a number")),  # int64 overflow
    ("* * * * \u212a", ("day of week",)),  # KELVIN SIGN lowers to k: still no day name
    ("* * * january *", ("month", "'january'")),
    ("* * * * L", ("day of week",)),
    ("* * * * 5#3", ("day of week", "'5#3'")),
    ("* * L * *", ("day of month",)),
    ("* 1 * * monday", ("day of week", "'monday'")),
    ("* * * * jan", ("day of week",)),  # month names are not day names
    ("* * * mon *", ("month",)),
    # Zone prefixes.
    ("TZ=Europe/Berlin", ("followed by a space",)),
    ("CRON_TZ=Europe/Berlin\t0 3 * * *", ("unknown time zone", "Europe/Berlin\\t0")),
    ("TZ=Local 0 0 * * *", ('"Local" is not allowed',)),
    ("CRON_TZ=Local @daily", ('"Local" is not allowed',)),
    ("TZ=Mars/Olympus 0 0 * * *", ("unknown time zone", "Mars/Olympus")),
    ("TZ=america/new_york 0 0 * * *", ("unknown time zone",)),
    ("TZ=../../../etc/passwd 0 0 * * *", ("unknown time zone",)),
    ("TZ=/usr/share/zoneinfo/UTC 0 0 * * *", ("unknown time zone",)),
    ("TZ=Europe/Berlin  ", ("expected 5 fields", "found 0")),
    ("tz=Europe/Berlin 0 3 * * *", ("found 6",)),  # the prefix is case-sensitive
]


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

NEVER_FIRES = {
    ", * * * *": True,
    "* , * * *": True,
    "* * * , *": True,
    "0 0 30 2 *": True,
    "0 0 30,31 2 ?": True,
    "0 0 31 4,6,9,11 *": True,
    "0 0 31 2 */1": True,  # */1 keeps the star flag: AND
    "0 0 * * ,": True,  # day of month is '*': AND with an empty weekday set
    "0 0 30 2 ,": True,  # OR, but neither side can match
    "0 0 29 2 *": False,  # fires in leap years
    "0 0 31 2 mon": False,  # OR: every Monday in February
    "0 0 1 * ,": False,  # OR: the 1st of every month
    "0 0 31 * *": False,
    "0 0 * 2 sun": False,
    "@yearly": False,
    "1,,2 3 * * ?": False,
}


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

DAY_COMBINATION = [
    # (spec, after, the next three firings); 2024-01-01 is a Monday.
    ("0 0 * * mon", "2024-01-01T12:00:00+00:00", ["2024-01-08", "2024-01-15", "2024-01-22"]),
    ("0 0 ? * mon", "2024-01-01T12:00:00+00:00", ["2024-01-08", "2024-01-15", "2024-01-22"]),
    ("0 0 */1 * mon", "2024-01-01T12:00:00+00:00", ["2024-01-08", "2024-01-15", "2024-01-22"]),
    ("0 0 1-31 * mon", "2024-01-01T12:00:00+00:00", ["2024-01-02", "2024-01-03", "2024-01-04"]),
    ("0 0 13 * fri", "2024-01-01T12:00:00+00:00", ["2024-01-05", "2024-01-12", "2024-01-13"]),
    ("0 0 13 * *", "2024-01-01T12:00:00+00:00", ["2024-01-13", "2024-02-13", "2024-03-13"]),
    ("0 0 */2 * 1", "2024-01-01T12:00:00+00:00", ["2024-01-03", "2024-01-05", "2024-01-07"]),
    ("0 0 1 * */1", "2024-01-01T12:00:00+00:00", ["2024-02-01", "2024-03-01", "2024-04-01"]),
    ("0 0 1 * 0-6", "2024-01-01T12:00:00+00:00", ["2024-01-02", "2024-01-03", "2024-01-04"]),
]


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

DST_CASES: list[tuple[str, str, str, list[str]]] = [
    # (zone, spec, after, successive firings)
    # New York: 02:30 does not exist on 2024-03-10; 01:30 happens twice on 2024-11-03.
    (
        "America/New_York",
        "30 2 * * *",
        "2024-03-09T12:00:00-05:00",
        ["2024-03-11T02:30:00-04:00", "2024-03-12T02:30:00-04:00"],
    ),
    (
        "America/New_York",
        "30 1 * * *",
        "2024-11-02T12:00:00-04:00",
        ["2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"],
    ),
    (
        "America/New_York",
        "0 * * * *",
        "2024-11-03T00:30:00-04:00",
        [
            "2024-11-03T01:00:00-04:00",
            "2024-11-03T01:00:00-05:00",
            "2024-11-03T02:00:00-05:00",
            "2024-11-03T03:00:00-05:00",
        ],
    ),
    (
        "America/New_York",
        "0 2 * * *",
        "2024-11-02T12:00:00-04:00",
        ["2024-11-03T02:00:00-05:00", "2024-11-04T02:00:00-05:00"],
    ),
    # Berlin: the same, east of Greenwich.
    (
        "Europe/Berlin",
        "30 2 * * *",
        "2024-03-30T12:00:00+01:00",
        ["2024-04-01T02:30:00+02:00", "2024-04-02T02:30:00+02:00"],
    ),
    (
        "Europe/Berlin",
        "30 2 * * *",
        "2024-10-26T12:00:00+02:00",
        ["2024-10-27T02:30:00+02:00", "2024-10-27T02:30:00+01:00", "2024-10-28T02:30:00+01:00"],
    ),
    (
        "Europe/Berlin",
        "30 2 * * *",
        "2024-10-27T02:40:00+02:00",
        ["2024-10-27T02:30:00+01:00", "2024-10-28T02:30:00+01:00"],
    ),
    (
        "Europe/Berlin",
        "0 2 * * *",
        "2024-10-26T12:00:00+02:00",
        ["2024-10-27T02:00:00+02:00", "2024-10-27T02:00:00+01:00", "2024-10-28T02:00:00+01:00"],
    ),
    # Lord Howe: 30-minute DST.
    (
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2024-10-05T12:00:00+10:30",
        ["2024-10-07T02:15:00+11:00", "2024-10-08T02:15:00+11:00"],
    ),
    (
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2024-04-06T12:00:00+11:00",
        ["2024-04-07T01:45:00+11:00", "2024-04-07T01:45:00+10:30", "2024-04-08T01:45:00+10:30"],
    ),
    # Sao Paulo 2018: midnight did not exist on 2018-11-04; 2019-02-16 23:xx twice.
    (
        "America/Sao_Paulo",
        "0 0 * * *",
        "2018-11-03T12:00:00-03:00",
        ["2018-11-05T00:00:00-02:00", "2018-11-06T00:00:00-02:00"],
    ),
    (
        "America/Sao_Paulo",
        "0 1 * * *",
        "2018-11-03T12:00:00-03:00",
        ["2018-11-04T01:00:00-02:00", "2018-11-05T01:00:00-02:00"],
    ),
    (
        "America/Sao_Paulo",
        "0 0 4 11 *",
        "2018-10-01T12:00:00-03:00",
        ["2019-11-04T00:00:00-03:00"],
    ),
    (
        "America/Sao_Paulo",
        "30 23 * * *",
        "2019-02-16T12:00:00-02:00",
        ["2019-02-16T23:30:00-02:00", "2019-02-16T23:30:00-03:00", "2019-02-17T23:30:00-03:00"],
    ),
    # Kathmandu: +05:30 -> +05:45 at 1986-01-01 00:00 (a 15-minute gap at midnight).
    (
        "Asia/Kathmandu",
        "5 0 * * *",
        "1985-12-31T12:00:00+05:30",
        ["1986-01-02T00:05:00+05:45", "1986-01-03T00:05:00+05:45"],
    ),
    (
        "Asia/Kathmandu",
        "*/10 * * * *",
        "1985-12-31T23:45:00+05:30",
        [
            "1985-12-31T23:50:00+05:30",
            "1986-01-01T00:20:00+05:45",
            "1986-01-01T00:30:00+05:45",
            "1986-01-01T00:40:00+05:45",
        ],
    ),
]


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


# Days skipped by date-line changes: robfig's Next loops forever (each case is proven to
# hang the real robfig, by CPU time, in test_schedule_oracle.py); kumaco moves on to the next
# day that exists. So the expected answers are kumaco's own choice, with no robfig answer to
# compare: test_skipped_calendar_day checks them against the literal replay of robfig's
# algorithm (tests/support/judges/reference.py), which takes the same way out.
DATE_LINE_CASES: list[tuple[str, str, str, list[str]]] = [
    (
        "Pacific/Apia",
        "0 3 1 * *",
        "2011-12-27T00:00:00-10:00",
        ["2012-01-01T03:00:00+14:00", "2012-02-01T03:00:00+14:00"],
    ),
    (
        "Pacific/Apia",
        "0 3 * * sat",  # Friday 2011-12-30 did not exist
        "2011-12-27T00:00:00-10:00",
        ["2011-12-31T03:00:00+14:00", "2012-01-07T03:00:00+14:00"],
    ),
    (
        "Pacific/Apia",
        "0 3 30 12 *",
        "2011-12-27T00:00:00-10:00",
        ["2012-12-30T03:00:00+14:00", "2013-12-30T03:00:00+14:00"],
    ),
    (
        "Pacific/Kiritimati",
        "45 1 * * 0",  # 1994-12-31 did not exist
        "1994-12-28T00:00:00-10:00",
        ["1995-01-01T01:45:00+14:00", "1995-01-08T01:45:00+14:00"],
    ),
    (
        "Pacific/Kwajalein",
        "0 12 * * 1",  # 1993-08-21 did not exist
        "1993-08-18T00:00:00-12:00",
        ["1993-08-23T12:00:00+12:00", "1993-08-30T12:00:00+12:00"],
    ),
]


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

VALID_ZONES = [
    "",
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Sao_Paulo",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "Africa/Monrovia",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Pacific/Apia",
    "America/Santiago",
    "Antarctica/Troll",
    "Asia/Tehran",
    "Pacific/Kiritimati",
    "America/Nuuk",
    "Etc/GMT+12",
    "US/Eastern",
]
INVALID_ZONES = ["Local", "Mars/Olympus", "america/new_york", "../etc/passwd", "/etc/localtime"]
SPACES = ["  ", "\t", "\n", "\v", "\u3000", "\xa0", "\x85", "\u2028", "\x1c", "\u200b"]
DESCRIPTORS = [
    "@daily",
    "@hourly",
    "@weekly",
    "@monthly",
    "@yearly",
    "@annually",
    "@midnight",
    "@every 1h",
    "@every 90m",
    "@every",
    "@DAILY",
    "@daily ",
    "@ daily",
    "@reboot",
]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DOWS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
FIELD_BOUNDS: list[tuple[int, int, list[str]]] = [
    (0, 59, []),
    (0, 23, []),
    (1, 31, []),
    (1, 12, MONTHS),
    (0, 6, DOWS),
]
ODD_NUMBERS = [
    "+5",
    "-0",
    "007",
    "00000000000000000000003",
    "9223372036854775807",
    "9223372036854775808",
    "",
    "+",
    "-",
    "\u0663",
    "\uff11",
    "1_0",
    "1.5",
    "x",
    "L",
    "5#3",
]


def _mixed_case(draw: st.DrawFn, name: str) -> str:
    flags = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    out = "".join(c.upper() if f else c for c, f in zip(name, flags, strict=True))
    if "i" in out and draw(st.booleans()):
        out = out.replace("i", "\u0130")
    return out


@st.composite
def field_text(draw: st.DrawFn, index: int, wildness: int) -> str:
    """One field; each token is odd (out of range, garbage) with ``wildness`` percent."""
    lo, hi, names = FIELD_BOUNDS[index]

    def odd() -> bool:
        return draw(st.integers(0, 99)) < wildness

    def atom() -> str:
        if odd():
            if draw(st.booleans()):
                return str(draw(st.integers(lo - 1, hi + 2)))
            return draw(st.sampled_from(ODD_NUMBERS))
        if names and draw(st.integers(0, 2)) == 0:
            return _mixed_case(draw, draw(st.sampled_from(names)))
        return str(draw(st.integers(lo, hi)))

    def item() -> str:
        shape = draw(st.integers(0, 9))
        if shape <= 2:
            text = atom()
        elif shape <= 4:
            text = draw(st.sampled_from(["*", "?"]))
        elif shape <= 7:
            text = f"{atom()}-{atom()}"
        elif shape == 8 or not odd():
            text = "*-" + atom()  # robfig ignores what follows "*-"
        else:
            text = f"{atom()}-{atom()}-{atom()}"
        if draw(st.integers(0, 2)) == 0:
            steps = ["0", "+2", "-1", "100", "", "x"] if odd() else ["1", "2", "3", "5", "7", "15"]
            text += "/" + draw(st.sampled_from(steps))
            if odd():
                text += "/2"
        return text

    if odd():
        return draw(st.sampled_from([",", ",,", ""]))
    items = [item() for _ in range(draw(st.integers(1, 3)))]
    if odd():
        items.insert(draw(st.integers(0, len(items))), "")
    return ",".join(items)


@st.composite
def specs(draw: st.DrawFn, zones: list[str] = VALID_ZONES + INVALID_ZONES) -> tuple[str, str]:
    """A spec from robfig's grammar, valid or with odd parts, and its zone name."""
    wildness = draw(st.sampled_from([0, 0, 3, 10, 40]))

    def odd() -> bool:
        return draw(st.integers(0, 99)) < wildness

    zone = draw(st.sampled_from(zones))
    prefix = ""
    if draw(st.booleans()):
        key = draw(st.sampled_from(["TZ=", "CRON_TZ="]))
        end = draw(st.sampled_from(["  ", "\t", "", " \t"])) if odd() else " "
        prefix = key + zone + end
    else:
        zone = "UTC"
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.sampled_from(DESCRIPTORS))
    else:
        count = draw(st.sampled_from([4, 6])) if odd() else 5
        fields = [draw(field_text(i % 5, wildness)) for i in range(count)]
        seps = [draw(st.sampled_from(SPACES)) if odd() else " " for _ in range(count + 1)]
        body = seps[0] if odd() else ""
        for f, sep in zip(fields, seps[1:], strict=True):
            body += f + sep
        if not odd():
            body = body.rstrip(GO_SPACE)
    return prefix + body, zone


@functools.cache
def transitions(zone: str) -> list[int]:
    """Offset changes of ``zone`` in 1970-2100 (from the Go emulation's lookup)."""
    try:
        location = zone_location(zone or "UTC")
    except InvalidInput:
        return []
    out, t = [], 0
    while t < 4_102_444_800:
        offset, _, end = location.lookup(t)
        if end < gotime.OMEGA and location.offset(end) != offset:
            out.append(end)
        t = end
    return out


EDGES = [
    unix(f"{y}-{m:02d}-01T00:00:00+00:00")
    for y in (1970, 2000, 2024, 2096, 2099)
    for m in (1, 2, 3, 12)
]


@st.composite
def instants(draw: st.DrawFn, zone: str) -> list[int]:
    """1-6 instants in 1970-2100, most of them near the zone's DST transitions."""
    near = transitions(zone)
    out = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 9))
        if kind <= 5 and near:
            base = draw(st.sampled_from(near))
        elif kind <= 7:
            base = draw(st.sampled_from(EDGES))
        else:
            out.append(draw(st.integers(0, 4_102_444_800)))
            continue
        delta = draw(
            st.one_of(
                st.sampled_from([0, -1, 1, -60, 60, -1800, 1800, -3600, 3600, -86400, 86400]),
                st.integers(-4 * 3600, 4 * 3600),
                st.integers(-40 * 86400, 40 * 86400),
            )
        )
        out.append(base + delta)
    return out


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
