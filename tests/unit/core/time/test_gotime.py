"""kumaco.core.golang.gotime: Go time semantics (calendar, zone lookup, Date, AddDate, Truncate).

Every Go behaviour pinned here is also asked of Go itself (``robfig_oracle``: the Go
program of ``hack/oracle``, reading the same ``tzdata`` files): zone offsets of every
tzdata zone, TZif files built here (TZ footer rules, Go's first-zone rules, what Go
rejects), ``time.Date`` normalisation and its choice in gaps and overlaps, ``AddDate``,
``Truncate`` and the wall-clock fields -- the tables, and random inputs. The calendar
arithmetic is checked against Python's calendar.
"""

from __future__ import annotations

import datetime as dt
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kumaco.core.golang import gotime
from kumaco.core.time.zones import load_zone, zone_location, zone_names
from tests.support.judges import reference
from tests.support.judges.oracle import Oracle

UTC = dt.UTC


def unix(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp())


def loc(name: str) -> gotime.Location:
    return zone_location(name)


# ---------------------------------------------------------------------------
# Calendar


@given(st.integers(min_value=dt.date.min.toordinal(), max_value=dt.date.max.toordinal()))
def test_civil_matches_python_calendar(ordinal: int) -> None:
    days = ordinal - dt.date(1970, 1, 1).toordinal()
    d = dt.date.fromordinal(ordinal)
    assert gotime.civil_from_days(days) == (d.year, d.month, d.day)
    assert gotime.days_from_civil(d.year, d.month, d.day) == days


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_civil_roundtrip_far_outside_python_range(days: int) -> None:
    y, m, d = gotime.civil_from_days(days)
    assert 1 <= m <= 12
    assert 1 <= d <= 31
    assert gotime.days_from_civil(y, m, d) == days


def test_wall_fields_and_weekday(robfig_oracle: Oracle) -> None:
    # 2024-03-10 07:00:00Z is the New York spring-forward instant: 03:00 EDT, a Sunday.
    spring = unix("2024-03-10T07:00:00+00:00")
    w = reference.wall(spring, loc("America/New_York"))
    assert w == reference.Wall(2024, 3, 10, 3, 0, 0, 0)
    assert robfig_oracle.walls("America/New_York", [spring]) == [tuple(w)]
    assert reference.wall(0, gotime.UTC) == reference.Wall(1970, 1, 1, 0, 0, 0, 4)  # Thursday
    assert reference.wall(-1, gotime.UTC) == reference.Wall(1969, 12, 31, 23, 59, 59, 3)
    assert robfig_oracle.walls("UTC", [0, -1]) == [
        (1970, 1, 1, 0, 0, 0, 4),
        (1969, 12, 31, 23, 59, 59, 3),
    ]


GO_ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia"]


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from([*GO_ZONES, "Asia/Kathmandu", "America/Sao_Paulo", "Africa/Monrovia"]),
    t=st.integers(-(2**40), 2**40),
)
def test_wall_fields_equal_gos(robfig_oracle: Oracle, zone: str, t: int) -> None:
    assert robfig_oracle.walls(zone, [t]) == [tuple(reference.wall(t, loc(zone)))]


# ---------------------------------------------------------------------------
# Zone lookup


def _boundaries(location: gotime.Location, lo: int, hi: int) -> list[int]:
    out = []
    t = lo
    while t < hi:
        offset, start, end = location.lookup(t)
        assert start <= t < end
        # the claimed interval really has one offset
        assert location.offset(end - 1) == offset
        out.append(end)
        t = end
    return out


def test_offsets_agree_with_go_and_zoneinfo_for_every_tzdata_zone(robfig_oracle: Oracle) -> None:
    """kumaco's reading of the TZif data (table + TZ footer per UTC year) equals Go's, and
    Python's: at every transition in 1970-2100 (both sides of it) and 30 random instants."""
    lo = unix("1970-01-01T00:00:00+00:00")
    hi = unix("2100-01-01T00:00:00+00:00")
    rng = random.Random(1)
    mismatches = []
    for name in sorted(zone_names()):
        location, zone = loc(name), load_zone(name)
        points = {rng.randrange(lo, hi) for _ in range(30)}
        for b in _boundaries(location, lo, hi):
            points.update((b - 1, b))
        inside = sorted(p for p in points if lo <= p < hi)
        go = dict(zip(inside, robfig_oracle.offsets(inside, zone=name), strict=True))
        for p in inside:
            expected = dt.datetime.fromtimestamp(p, zone).utcoffset()
            assert expected is not None
            if not location.offset(p) == go[p] == int(expected.total_seconds()):
                mismatches.append((name, p, location.offset(p), go[p]))
    assert mismatches == []


@pytest.mark.parametrize(
    "name", ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Sao_Paulo"]
)
def test_offsets_agree_with_zoneinfo_hour_by_hour(name: str) -> None:
    location, zone = loc(name), load_zone(name)
    for year in (1975, 2000, 2018, 2024, 2077):
        start = unix(f"{year}-01-01T00:00:00+00:00")
        for p in range(start, start + 366 * 86400, 3600):
            expected = dt.datetime.fromtimestamp(p, zone).utcoffset()
            assert expected is not None
            assert location.offset(p) == int(expected.total_seconds()), (name, p)


def test_transition_boundaries_are_exact(robfig_oracle: Oracle) -> None:
    ny = loc("America/New_York")
    spring = unix("2024-03-10T07:00:00+00:00")  # from the TZ footer (last table entry: 2007)
    assert ny.offset(spring - 1) == -5 * 3600
    assert ny.offset(spring) == -4 * 3600
    assert ny.lookup(spring)[1] == spring
    assert ny.lookup(spring - 1)[2] == spring
    lord_howe = loc("Australia/Lord_Howe")
    back = unix("2024-04-07T02:00:00+11:00")
    assert (lord_howe.offset(back - 1), lord_howe.offset(back)) == (39600, 37800)
    assert robfig_oracle.offsets([spring - 1, spring], zone="America/New_York") == [
        -5 * 3600,
        -4 * 3600,
    ]
    assert robfig_oracle.offsets([back - 1, back], zone="Australia/Lord_Howe") == [39600, 37800]


def test_lookup_before_first_transition_uses_gos_first_zone(robfig_oracle: Oracle) -> None:
    ny = loc("America/New_York")
    assert ny.lookup(-(10**11)) == (-17762, gotime.ALPHA, ny.transitions[0])  # LMT -4:56:02
    assert robfig_oracle.offsets([-(10**11)], zone="America/New_York") == [-17762]
    assert gotime.UTC.lookup(-(10**15)) == (0, gotime.ALPHA, gotime.OMEGA)


def test_fixed_zone_gets_gos_fake_transition() -> None:
    gmt5 = loc("Etc/GMT+5")
    assert gmt5.transitions == (gotime.ALPHA,)
    assert gmt5.lookup(0) == (-5 * 3600, gotime.ALPHA, gotime.OMEGA)
    assert loc("UTC") is gotime.UTC


def _tzif(footer: bytes, types: list[tuple[int, int]], times: list[tuple[int, int]]) -> bytes:
    """A minimal version-2 TZif file (empty v1 block)."""
    chars = b"AAA\0"
    body = struct.pack(">6L", 0, 0, 0, len(times), len(types), len(chars))
    body += b"".join(struct.pack(">q", t) for t, _ in times)
    body += bytes(i for _, i in times)
    body += b"".join(struct.pack(">lBB", off, dst, 0) for off, dst in types)
    body += chars
    empty_v1 = b"TZif2" + b"\0" * 15 + struct.pack(">6L", 0, 0, 0, 0, 0, 0)
    return empty_v1 + b"TZif2" + b"\0" * 15 + body + b"\n" + footer + b"\n"


def test_first_zone_rules_follow_go(robfig_oracle: Oracle) -> None:
    # Zone 0 unused by transitions: it applies before the first one (Go case 1).
    data = _tzif(b"", [(100, 0), (200, 0)], [(1000, 1)])
    z = gotime.location_from_tzif("x", data)
    assert z.first_offset == 100
    assert robfig_oracle.offsets([999, 1000], tzif=data) == [100, 200]
    # First transition goes to DST: the closest earlier standard zone (case 2).
    data = _tzif(b"", [(0, 1), (300, 0), (400, 1)], [(1000, 2), (2000, 0)])
    z = gotime.location_from_tzif("x", data)
    assert z.first_offset == 300
    assert robfig_oracle.offsets([999], tzif=data) == [300]
    # Otherwise the first standard zone (case 3).
    data = _tzif(b"", [(0, 1), (500, 0)], [(1000, 0), (2000, 1)])
    z = gotime.location_from_tzif("x", data)
    assert z.first_offset == 500
    # Without a footer the last transition's zone lasts forever.
    assert z.lookup(10**12) == (500, 2000, gotime.OMEGA)
    assert robfig_oracle.offsets([999, 10**12], tzif=data) == [500, 500]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"TZiX" + b"\0" * 60,
        b"TZif4" + b"\0" * 60,  # Go only knows versions 1-3
        b"TZif2" + b"\0" * 15 + struct.pack(">6L", 0, 0, 0, 5, 1, 4),  # truncated
        b"TZif\0" + b"\0" * 15 + struct.pack(">6L", 0, 0, 0, 0, 0, 0),  # no zones
    ],
)
def test_bad_tzif_rejected(robfig_oracle: Oracle, data: bytes) -> None:
    with pytest.raises(gotime.TZifError):
        gotime.location_from_tzif("bad", data)
    with pytest.raises(ValueError, match="Go"):
        robfig_oracle.offsets([0], tzif=data)


@pytest.mark.parametrize(
    ("footer", "instant", "offset"),
    [
        # Default rules ",M3.2.0,M11.1.0" and DST = std + 1h when omitted.
        (b"EST5EDT", "2030-07-01T00:00:00+00:00", -4 * 3600),
        (b"EST5EDT", "2030-03-10T06:59:59+00:00", -5 * 3600),
        (b"EST5EDT", "2030-03-10T07:00:00+00:00", -4 * 3600),
        # Julian day (Feb 29 never counted) and zero-based day-of-year rules.
        (b"<+01>-1<+02>,J60/0,J300/0", "2032-02-29T23:59:59+01:00", 3600),  # J60 is Mar 1
        (b"<+01>-1<+02>,J60/0,J300/0", "2032-03-01T00:00:00+01:00", 7200),
        (b"<+01>-1<+02>,59/0,300/0", "2031-03-01T00:00:00+01:00", 7200),  # day 59: Mar 1
        (b"<+01>-1<+02>,59/0,300/0", "2032-02-28T23:59:59+01:00", 3600),  # leap: Feb 29
        (b"<+01>-1<+02>,59/0,300/0", "2032-02-29T00:00:00+01:00", 7200),
        # Southern hemisphere (end before start) and negative DST (Dublin).
        (b"AEST-10AEDT,M10.1.0,M4.1.0/3", "2030-01-15T00:00:00+00:00", 11 * 3600),
        (b"IST-1GMT0,M10.5.0,M3.5.0/1", "2030-01-15T00:00:00+00:00", 0),
        (b"IST-1GMT0,M10.5.0,M3.5.0/1", "2030-07-15T00:00:00+00:00", 3600),
        # Times beyond 24h and negative times (tzcode extensions Go accepts).
        (b"IST-2IDT,M3.4.4/26,M10.5.0", "2030-03-29T01:59:59+02:00", 2 * 3600),
        (b"IST-2IDT,M3.4.4/26,M10.5.0", "2030-03-29T02:00:00+02:00", 3 * 3600),
        (b"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2030-03-30T23:00:00-02:00", -3600),
        # Unparseable footers are ignored, as Go ignores them.
        (b"EST5EDT,M3.2.0", "2030-07-01T00:00:00+00:00", 3600),
        (b"E5", "2030-07-01T00:00:00+00:00", 3600),
    ],
)
def test_tz_footer_rules(robfig_oracle: Oracle, footer: bytes, instant: str, offset: int) -> None:
    data = _tzif(footer, [(3600, 0)], [(0, 0)])
    zone = gotime.location_from_tzif("x", data)
    assert zone.offset(unix(instant)) == offset
    assert robfig_oracle.offsets([unix(instant)], tzif=data) == [offset]


def test_footer_before_1970_follows_gos_truncated_remainder(robfig_oracle: Oracle) -> None:
    # Go computes the position in the year as (yday-1)*86400 + sec%86400 with a
    # truncated remainder: before 1970, DST switches a day late except at midnight.
    data = _tzif(b"EST5EDT", [(-18000, 0)], [(-(10**10), 0)])
    zone = gotime.location_from_tzif("x", data)
    switch = unix("1960-03-13T07:00:00+00:00")  # default rule M3.2.0 at 02:00 EST
    assert zone.offset(switch - 1) == -5 * 3600
    assert zone.offset(switch) == -5 * 3600  # a day late
    assert zone.offset(switch + 86400) == -4 * 3600
    assert zone.lookup(switch)[1:] == (switch, switch + 1)
    instants = [switch - 1, switch, switch + 86400]
    assert robfig_oracle.offsets(instants, tzif=data) == [zone.offset(t) for t in instants]


# ---------------------------------------------------------------------------
# Date, AddDate, Truncate


@pytest.mark.parametrize(
    ("zone", "wall", "expected"),
    [
        # Normalisation carries like Go (floor division).
        ("UTC", (2024, 13, 1, 0, 0, 0), "2025-01-01T00:00:00+00:00"),
        ("UTC", (2024, 0, 1, 0, 0, 0), "2023-12-01T00:00:00+00:00"),
        ("UTC", (2024, 1, 31 + 29 + 1, 0, 0, 0), "2024-03-01T00:00:00+00:00"),
        ("UTC", (2024, 3, 0, 0, 0, 0), "2024-02-29T00:00:00+00:00"),
        ("UTC", (2024, 1, 1, -1, 0, 0), "2023-12-31T23:00:00+00:00"),
        ("UTC", (2024, 1, 1, 0, 0, -1), "2023-12-31T23:59:59+00:00"),
        ("UTC", (2024, -25, 1, 0, 0, 0), "2021-11-01T00:00:00+00:00"),
        # Spring-forward gaps: west of Greenwich the wall clock lands earlier,
        # east of it later (Go uses the offset in force at "wall read as UTC").
        ("America/New_York", (2024, 3, 10, 2, 30, 0), "2024-03-10T01:30:00-05:00"),
        ("Europe/Berlin", (2024, 3, 31, 2, 30, 0), "2024-03-31T03:30:00+02:00"),
        ("Australia/Lord_Howe", (2024, 10, 6, 2, 15, 0), "2024-10-06T02:45:00+11:00"),
        ("America/Sao_Paulo", (2018, 11, 4, 0, 0, 0), "2018-11-03T23:00:00-03:00"),
        # Fall-back overlaps: west picks the first (daylight) reading, east the second.
        ("America/New_York", (2024, 11, 3, 1, 30, 0), "2024-11-03T01:30:00-04:00"),
        ("Europe/Berlin", (2024, 10, 27, 2, 30, 0), "2024-10-27T02:30:00+01:00"),
        ("Australia/Lord_Howe", (2024, 4, 7, 1, 45, 0), "2024-04-07T01:45:00+10:30"),
        # A 15-minute gap at midnight (Kathmandu, 1986).
        ("Asia/Kathmandu", (1986, 1, 1, 0, 5, 0), "1986-01-01T00:20:00+05:45"),
    ],
)
def test_date_follows_go(
    robfig_oracle: Oracle, zone: str, wall: tuple[int, ...], expected: str
) -> None:
    assert reference.date(loc(zone), *wall) == unix(expected)
    assert robfig_oracle.date(zone, *wall) == unix(expected)


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from([*GO_ZONES, "America/Sao_Paulo", "Asia/Kathmandu", "Pacific/Chatham"]),
    year=st.integers(1900, 2100),
    month=st.integers(-30, 40),
    day=st.integers(-70, 70),
    hour=st.integers(-30, 50),
    minute=st.integers(-100, 100),
    second=st.integers(-100, 100),
)
def test_date_equals_gos_for_any_fields(
    robfig_oracle: Oracle,
    zone: str,
    year: int,
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
) -> None:
    """Normalisation of out-of-range fields and the choice in gaps and overlaps, as Go."""
    wall = (year, month, day, hour, minute, second)
    assert reference.date(loc(zone), *wall) == robfig_oracle.date(zone, *wall)


def test_date_equals_double_lookup_formula() -> None:
    rng = random.Random(7)
    for name in ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Chatham"):
        z = loc(name)
        for _ in range(2000):
            w = rng.randrange(0, 4_102_444_800)
            days, sod = divmod(w, 86400)
            y, m, d = gotime.civil_from_days(days)
            got = reference.date(z, y, m, d, sod // 3600, sod // 60 % 60, sod % 60)
            assert got == w - z.offset(w - z.offset(w))


@pytest.mark.parametrize(
    ("start", "delta", "expected"),
    [
        ("2024-01-31T10:00:00+00:00", (0, 1, 0), "2024-03-02T10:00:00+00:00"),
        ("2023-01-31T10:00:00+00:00", (0, 1, 0), "2023-03-03T10:00:00+00:00"),
        ("2024-02-29T00:00:00+00:00", (1, 0, 0), "2025-03-01T00:00:00+00:00"),
        ("2024-12-31T00:00:00+00:00", (0, 0, 1), "2025-01-01T00:00:00+00:00"),
    ],
)
def test_add_date(
    robfig_oracle: Oracle, start: str, delta: tuple[int, int, int], expected: str
) -> None:
    assert reference.add_date(unix(start), gotime.UTC, *delta) == unix(expected)
    assert robfig_oracle.add_date(unix(start), "UTC", *delta) == unix(expected)


def test_add_date_keeps_wall_clock_across_dst(robfig_oracle: Oracle) -> None:
    ny = loc("America/New_York")
    before = unix("2024-03-09T12:00:00-05:00")
    assert reference.add_date(before, ny, 0, 0, 1) == unix("2024-03-10T12:00:00-04:00")
    assert robfig_oracle.add_date(before, "America/New_York", 0, 0, 1) == unix(
        "2024-03-10T12:00:00-04:00"
    )


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(GO_ZONES),
    t=st.integers(0, 4_102_444_800),
    years=st.integers(-3, 3),
    months=st.integers(-30, 30),
    days=st.integers(-400, 400),
)
def test_add_date_equals_gos(
    robfig_oracle: Oracle, zone: str, t: int, years: int, months: int, days: int
) -> None:
    assert reference.add_date(t, loc(zone), years, months, days) == robfig_oracle.add_date(
        t, zone, years, months, days
    )


def test_truncate_is_on_absolute_time(robfig_oracle: Oracle) -> None:
    assert gotime.truncate(119, 60) == 60
    assert gotime.truncate(-1, 60) == -60  # rounds down, not towards zero
    assert gotime.truncate(7, 0) == 7
    # Go's zero time (year 1) is a multiple of a day before the epoch; for
    # Monrovia (-0:44:30) a truncated minute is hh:mm:30 on the wall clock.
    monrovia = loc("Africa/Monrovia")
    t = gotime.truncate(unix("1971-06-01T10:00:45+00:00"), 60)
    assert reference.wall(t, monrovia).second == 30
    assert robfig_oracle.walls("Africa/Monrovia", [t])[0][5] == 30
    assert gotime.truncate(-62135596800 - 1, 86400) == -62135596800 - 86400
    instants = [119, -1, 7, unix("1971-06-01T10:00:45+00:00"), -62135596800 - 1]
    for d in (60, 86400, 3600, 1):
        assert robfig_oracle.truncate(instants, d) == [gotime.truncate(i, d) for i in instants]
    assert robfig_oracle.truncate([7], 0) == [7]
