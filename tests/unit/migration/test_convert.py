"""``kumaco convert``: kured v1's schedule and flags as window ConfigMaps and flags.

* kured's value syntax, exactly: its times through Go's own ``time.ParseInLocation`` with
  kured's layouts (the Go oracle), its days by hand-computed tables;
* the round trip: the converted windows are open at exactly the instants kured v1's
  ``TimeWindow.Contains`` accepts (:func:`tests.support.judges.reference.kured_contains`,
  written from kured's source), tested at every boundary of both and on a grid through a
  year, in UTC and a fixed-offset zone; in zones with daylight-saving time only on the
  days the clocks change may they differ, and the conversion warns;
* the console script: the output (hand-computed), ``kubectl apply``-able YAML that
  ``kumaco validate`` accepts, the document, warnings, exit codes and messages;
* docs/migrating-from-kured-v1.md's console examples print what the page shows
  (tests/unit/rig/test_readme.py runs them with the README's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time import zones
from kumaco.core.time.instants import parse_time
from kumaco.core.windows.configmaps import windows_of
from kumaco.core.windows.window import Window
from kumaco.migration.kuredv1 import (
    LAYOUTS,
    NO_EQUIVALENT,
    Clock,
    KuredFlags,
    convert,
    cron_days,
    parse_clock,
    parse_days,
    regexp_error,
    weekly_intervals,
)
from kumaco.views.conversion import Converted, configmaps
from tests.support.builders import cli
from tests.support.judges.oracle import Oracle
from tests.support.judges.reference import date, kured_contains, wall

ROOT = Path(__file__).resolve().parents[3]
NS = 1_000_000_000
NOW = parse_time("2027-01-01T00:00:00Z")


def kumaco(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script, with no ``KURED_*`` variable but those of ``env``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("KURED_")}
    return cli.kumaco(*args, stdin=stdin, env={**inherited, **(env or {})})


# --- kured's value syntax ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "days"),
    [
        (["su", "mo", "tu", "we", "th", "fr", "sa"], {0, 1, 2, 3, 4, 5, 6}),  # kured's default
        (["SAT", "Sunday", "mon"], {6, 0, 1}),  # any case, short and long names
        (["0", "6", "+3", "03"], {0, 6, 3}),  # numbers as Go's Atoi reads them
        (["", "fri", ""], {5}),  # empty items skipped
        ([], set()),
    ],
)
def test_days_are_read_as_kured_reads_them(values: list[str], days: set[int]) -> None:
    assert parse_days(values) == frozenset(days)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("7", "number out of range"),
        ("-1", "number out of range"),
        (" sat", "invalid weekday"),
        ("saturdays", "invalid weekday"),
        ("sa,su", "invalid weekday"),
    ],
)
def test_days_kured_refuses_are_refused_naming_the_flag(value: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_days([value])
    assert caught.value.reason.startswith(f"--reboot-days: {value!r}: kured rejects it (")
    assert reason in caught.value.reason


CLOCKS = [
    "0:00",
    "00:00",
    "9:05",
    "9:5",
    "23:59:59",
    "24:00",
    "12:60",
    "12pm",
    "12am",
    "00pm",
    "13pm",
    "3pm",
    "03pm",
    "3PM",
    "11:30pm",
    "3:04pm",
    "03:04pm",
    "1130",
    "7",
    "07",
    "007",
    " 7",
    "7 ",
    "+7",
    "",
    "22:00:00.5",
    "22:00:00,25",
    "22:00:00.1234567891234",
    "22:00:0",
    "22:00:00.",
    "\u0663pm",
    "4am",
    "4:00am",
]


@pytest.mark.oracle
def test_times_are_read_as_go_reads_them_with_kureds_layouts(robfig_oracle: Oracle) -> None:
    for text in CLOCKS:
        _compare_clock(robfig_oracle, text)


@pytest.mark.oracle
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="0123456789:.,apmAPM ", max_size=9))
def test_any_time_text_is_read_as_go_reads_it(robfig_oracle: Oracle, text: str) -> None:
    _compare_clock(robfig_oracle, text)


def _compare_clock(oracle: Oracle, text: str) -> None:
    go = oracle.parse_clock(LAYOUTS, text)
    try:
        mine: object = parse_clock("--start-time", text)
    except InvalidInput as exc:
        assert "error" in go, f"{text!r}: Go reads {go}, kumaco refuses: {exc.reason}"
        assert exc.reason.startswith(f"--start-time: {text!r}: kured rejects it")
        return
    assert "clock" in go, f"{text!r}: kumaco reads {mine}, Go refuses"
    assert mine == Clock(*go["clock"]), text


# --- the round trip ------------------------------------------------------------------------------

CASES = [
    # (reboot days, start, end): what kured users write
    (("su", "mo", "tu", "we", "th", "fr", "sa"), "0:00", "23:59:59"),  # kured's defaults
    (("sat",), "22:00", "04:00"),  # crosses midnight on one day
    (("fri", "sat", "sun"), "22:00", "04:00"),  # nights join, Saturday into Sunday
    (("mon", "tue", "wed", "thu", "fri"), "1:00", "5:30"),
    (("su", "mo", "tu", "we", "th", "fr", "sa"), "11pm", "1am"),  # every night
    (("tue",), "3pm", "3pm"),  # one second a day
    (("wed", "6"), "22:00:00.5", "22:00"),  # the start's nanoseconds make it cross midnight
    (("sun", "thu"), "02:30", "02:29:59"),
]


def windows_for(days: tuple[str, ...], start: str, end: str, zone: str) -> list[Window]:
    result = convert(KuredFlags(days, start, end, zone), NOW)
    cms = configmaps(Converted(result, "kured-v1", "maintenance", "test"))
    found = windows_of(cms)
    assert all(isinstance(w, Window) for w in found), found
    return [w for w in found if isinstance(w, Window)]


def instants(days: tuple[str, ...], start: str, end: str, zone: str) -> Iterator[int]:
    """Every boundary of kured's window and of the windows, a nanosecond either side,
    and an hourly grid (off the minute) through 2027."""
    loc = zones.zone_location(zones.resolve_zone(zone)[0])
    s, e = parse_clock("--start-time", start), parse_clock("--end-time", end)
    first, last = parse_time("2027-01-01T00:00:00Z"), parse_time("2028-01-01T00:00:00Z")
    edges = set()
    for day in range(366):
        w = wall(first // NS + day * 86400, loc)
        for clock in ((s.hour, s.minute, s.second), (e.hour, e.minute, e.second + 1), (0, 0, 0)):
            edges.add(date(loc, w.year, w.month, w.day, *clock) * NS)
    for window in windows_for(days, start, end, zone):
        for iv in window.intervals(first, last):
            edges |= {iv.start, iv.end}
    for edge in sorted(edges):
        yield from (edge - 1, edge, edge + 1)
    yield from range(first + 17 * NS, last, 3600 * NS + 61 * NS)


def mismatches(days: tuple[str, ...], start: str, end: str, zone: str) -> list[int]:
    loc = zones.zone_location(zones.resolve_zone(zone)[0])
    bits = parse_days(days)
    s, e = parse_clock("--start-time", start), parse_clock("--end-time", end)
    clocks = (s.hour, s.minute, s.second, s.nanosecond), (e.hour, e.minute, e.second, e.nanosecond)
    windows = windows_for(days, start, end, zone)

    def last_nanosecond(t: int) -> bool:
        """kured's own quirk: crossing midnight, its end's last nanosecond is out (at
        ``end + 999999999 ns`` Contains finds the instant not before the end and moves the
        end a day on instead of the start a day back), where a window lasts to ``end + 1 s``.
        """
        w = wall(t // NS, loc)
        return s > e and t == date(loc, w.year, w.month, w.day, *clocks[1][:3]) * NS + NS - 1

    return [
        t
        for t in instants(days, start, end, zone)
        if any(w.state_at(t).open for w in windows) != kured_contains(bits, *clocks, loc, t)
        and not last_nanosecond(t)
    ]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{','.join(c[0])}-{c[1]}-{c[2]}")
def test_the_windows_are_open_exactly_when_kureds_window_is(
    case: tuple[tuple[str, ...], str, str], zone: str
) -> None:
    assert mismatches(*case, zone) == []


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York"])
@pytest.mark.parametrize("case", CASES[1:5], ids=lambda c: f"{','.join(c[0])}-{c[1]}-{c[2]}")
def test_with_daylight_saving_time_they_differ_only_when_the_clocks_change_and_it_warns(
    case: tuple[tuple[str, ...], str, str], zone: str
) -> None:
    loc = zones.zone_location(zone)
    changes = []
    t = parse_time("2026-12-01T00:00:00Z") // NS
    while t < parse_time("2028-01-01T00:00:00Z") // NS:
        t = loc.lookup(t)[2]
        changes.append(t)
    misses = mismatches(*case, zone)
    for miss in misses:
        assert any(abs(miss // NS - c) < 86400 for c in changes), (case, miss)
    warnings = convert(KuredFlags(case[0], case[1], case[2], zone), NOW).warnings
    warned = any(w.startswith(f"{zone} changes its clocks inside kured's window") for w in warnings)
    assert warned == bool(misses), (case, zone, misses)


@pytest.mark.parametrize(
    ("days", "start", "end", "zone", "changes"),
    [
        # The EU and the US change their clocks on Sundays: a weekday window never sees it.
        (("mon", "tue"), "02:00", "06:00", "Europe/Paris", None),
        (("mon", "tue", "wed", "thu", "fri"), "1:00", "5:30", "America/New_York", None),
        (("sat",), "22:00", "04:00", "Europe/Berlin", None),  # Saturday 00:00-04:00 and 22:00-24:00
        (("fri",), "01:00", "03:00", "Europe/Paris", None),
        # Israel springs forward on a Friday at 02:00: the same window meets it there.
        (("fri",), "01:00", "03:00", "Asia/Jerusalem", "Friday 02:00 -> 03:00"),
        (
            ("sun",),
            "02:00",
            "06:00",
            "Europe/Paris",
            "Sunday 02:00 -> 03:00, Sunday 03:00 -> 02:00",
        ),
        (
            ("sun",),
            "01:00",
            "05:00",
            "America/New_York",
            "Sunday 02:00 -> 03:00, Sunday 02:00 -> 01:00",
        ),
        # To 01:00:00 on Sunday: New York's 01:00 comes twice in November, but kured's end
        # is the first (Go's time.Date), as the window's is: nothing differs.
        (("sun",), "11pm", "1am", "America/New_York", None),
    ],
)
def test_it_warns_only_when_a_clock_change_falls_inside_kureds_window(
    days: tuple[str, ...], start: str, end: str, zone: str, changes: str | None
) -> None:
    warnings = convert(KuredFlags(days, start, end, zone), NOW).warnings
    dst = [w for w in warnings if w.startswith(f"{zone} changes its clocks")]
    if changes is None:
        assert (warnings, mismatches(days, start, end, zone)) == ((), [])
    else:
        assert dst and dst[0].startswith(
            f"{zone} changes its clocks inside kured's window ({changes}):"
        )


def test_the_warning_says_what_each_change_does_to_the_windows() -> None:
    """The window notes of kumaco/core/windows/daylight_saving.py, for the converted windows."""
    warnings = convert(KuredFlags(("sun",), "02:00", "06:00", "Europe/Paris"), NOW).warnings
    assert warnings[1:] == (
        "02:00 does not exist on 2027-03-28 in Europe/Paris: no window that night",
        "02:00 happens twice on 2027-10-31 in Europe/Paris: the window opens at "
        "2027-10-31T00:00:00Z and again at 2027-10-31T01:00:00Z, and is open 5h0m1s in one "
        "piece (until 2027-10-31T05:00:01Z)",
    )
    assert mismatches(("sun",), "02:00", "06:00", "Europe/Paris")  # they do differ


@pytest.mark.parametrize(
    ("days", "start", "end", "expected"),
    [
        # Hand-computed: kured tests the instant's own day. Saturday 22:00-04:00 is Saturday
        # 00:00-04:00:01 and Saturday 22:00-24:00.
        (("sat",), "22:00", "04:00", [("0 0 * * SAT", "4h1s"), ("0 22 * * SAT", "2h")]),
        # Fri, Sat, Sun: Friday 00:00-04:00:01 alone (Thursday is no reboot day), then the
        # nights Fri->Sat and Sat->Sun join (22:00 to 04:00:01 = 6h0m1s), Sunday's evening
        # runs to Monday 00:00, and Sunday's morning joins Saturday's night.
        (
            ("fri", "sat", "sun"),
            "22:00",
            "04:00",
            [("0 22 * * SUN", "2h"), ("0 0 * * FRI", "4h1s"), ("0 22 * * FRI,SAT", "6h1s")],
        ),
        (("mo", "tu", "we", "th", "fr"), "1:00", "5:30", [("0 1 * * MON-FRI", "4h30m1s")]),
        (("su", "mo", "tu", "we", "th", "fr", "sa"), "0:00", "23:59:59", [("0 0 * * *", "24h")]),
        (("tue",), "3pm", "3pm", [("0 15 * * TUE", "1s")]),
    ],
)
def test_hand_computed_windows(
    days: tuple[str, ...], start: str, end: str, expected: list[tuple[str, str]]
) -> None:
    result = convert(KuredFlags(days, start, end), NOW)
    assert [(w.start_time, w.duration_text) for w in result.windows] == expected


def test_the_week_wraps_and_day_fields_compress() -> None:
    days, start, end = frozenset({6, 0}), Clock(23, 0, 0), Clock(1, 0, 0)
    # Saturday 00:00-01:00:01, Saturday 23:00 into Sunday 01:00:01, Sunday 23:00-24:00.
    assert weekly_intervals(days, start, end) == [
        (0 * 86400 + 23 * 3600, 1 * 86400),
        (6 * 86400, 6 * 86400 + 3601),
        (6 * 86400 + 23 * 3600, 7 * 86400 + 3601),
    ]
    assert cron_days((1, 2, 3, 5)) == "MON-WED,FRI" and cron_days((0, 6)) == "SUN,SAT"


# --- the console script -------------------------------------------------------------------------

ISSUE = [
    *("--reboot-days", "sat,sun", "--start-time", "22:00", "--end-time", "04:00"),
    *("--time-zone", "UTC", "--concurrency", "2", "--blocking-pod-selector", "app=db"),
    *("--blocking-pod-selector", "team=storage", "--prometheus-url", "http://prom:9090"),
    *("--alert-filter-regexp", "^Watchdog$", "--lock-release-delay", "10m", "-n", "maintenance"),
]


def test_convert_prints_configmaps_kubectl_applies_and_kumaco_validates() -> None:
    done = kumaco("convert", *ISSUE)
    assert (done.returncode, done.stderr) == (0, "")
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    # Saturday 00:00-04:00:01 alone; Saturday 22:00 through Sunday 04:00:01; Sunday 22:00
    # to midnight (Monday is no reboot day).
    assert [(d["metadata"]["name"], d["data"]) for d in docs] == [
        ("kured-v1-2200-sun", {"startTime": "0 22 * * SUN", "duration": "2h", "nodeSelector": ""}),
        ("kured-v1-0000-sat", {"startTime": "0 0 * * SAT", "duration": "4h1s", "nodeSelector": ""}),
        (
            "kured-v1-2200-sat",
            {"startTime": "0 22 * * SAT", "duration": "6h1s", "nodeSelector": ""},
        ),
    ]
    assert {d["metadata"]["namespace"] for d in docs} == {"maintenance"}
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "# kumaco convert: kured v1 --reboot-days=sat,sun --start-time=22:00 --end-time=04:00"
    )
    flags = [line.removeprefix("#   ") for line in lines if line.startswith("#   --")]
    assert flags == [
        "--max-in-progress=2",
        "--under-maintenance-condition=kured.dev/under-maintenance-window",
        "--in-progress-condition=kured.dev/maintenance-in-progress",
        "--require-condition=kured.dev/reboot-required",
        "--block-condition=kured.dev/reboot-inhibited",
        "--count-released-unavailable=30m",
        "--release-delay=10m",
        "--blocking-pod-selector=app=db",
        "--blocking-pod-selector=team=storage",
        "--prometheus-url=http://prom:9090",
        "--alert-filter-regexp=^Watchdog$",
    ]
    valid = kumaco("validate", "-", stdin=done.stdout)
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout == "".join(f"valid maintenance/{d['metadata']['name']}\n" for d in docs)


def test_the_document_and_the_warnings() -> None:
    done = kumaco("convert", *ISSUE, "--time-zone", "Local", "--concurrency", "0", "-o", "json")
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert set(doc) == {"windows", "kumaco", "rebootInhibitors", "notes", "warnings"}
    assert doc["kumaco"][0] == "--max-in-progress=1"
    assert "timeZone" not in doc["windows"][0]["data"]  # Local: converted as UTC
    assert done.stderr.splitlines() == [f"warning: {w}" for w in doc["warnings"]]
    assert doc["warnings"][0].startswith("--time-zone Local is the kured pod's own zone")
    assert (
        doc["warnings"][1] == "--concurrency 0: kured takes its lock alone below 1; converted as 1"
    )
    assert yaml.safe_load(kumaco("convert", *ISSUE, "-o", "yaml").stdout) == json.loads(
        kumaco("convert", *ISSUE, "-o", "json").stdout
    )
    berlin = kumaco("convert", "--reboot-days", "sun", "--time-zone", "Europe/Berlin", "-o", "json")
    assert json.loads(berlin.stdout)["windows"][0]["data"]["timeZone"] == "Europe/Berlin"
    assert "warning: Europe/Berlin changes its clocks inside kured's window" in berlin.stderr


def test_a_weekday_window_in_a_zone_that_changes_on_sundays_gets_no_clock_warning() -> None:
    paris = [*("--start-time", "02:00", "--end-time", "06:00", "--time-zone", "Europe/Paris")]
    weekdays = kumaco("convert", "--reboot-days", "mon,tue", *paris)
    assert (weekdays.returncode, weekdays.stderr) == (0, "")
    assert "timeZone: Europe/Paris" in weekdays.stdout
    sunday = kumaco("convert", "--reboot-days", "sun", *paris)
    assert sunday.returncode == 0
    assert sunday.stderr.startswith(
        "warning: Europe/Paris changes its clocks inside kured's window (Sunday 02:00 -> 03:00, "
        "Sunday 03:00 -> 02:00): "
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--start-time", "25:00"],
            "--start-time: '25:00': kured rejects it (invalid time format)",
        ),
        (["--end-time", "4 am"], "--end-time: '4 am': kured rejects it (invalid time format)"),
        (
            ["--reboot-days", "sat,sonday"],
            "--reboot-days: 'sonday': kured rejects it (invalid weekday)",
        ),
        (["--time-zone", "Mars/Olympus"], "--time-zone: unknown time zone 'Mars/Olympus'"),
        (["--concurrency", "two"], "--concurrency: 'two' is not a number"),
        (["--lock-ttl", "1d"], "--lock-ttl: "),
        (["--period", "1d"], "--period: "),
        (["--metrics-port", "http"], "--metrics-port: 'http' is not a number"),
    ],
)
def test_what_kured_would_refuse_is_a_usage_error_naming_its_flag(
    args: list[str], message: str
) -> None:
    done = kumaco("convert", *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"kumaco convert: {message}"), done.stderr


def test_no_reboot_day_is_no_window_and_a_warning() -> None:
    done = kumaco("convert", "--reboot-days", "", "-o", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["windows"] == []
    assert (
        done.stderr
        == "warning: --reboot-days names no day: kured never reboots; no window is made\n"
    )


DAEMONSET = [
    *("--period", "1h", "--ds-name", "kured", "--ds-namespace=kube-system"),
    *(
        "--reboot-sentinel",
        "/sentinel/reboot-required",
        "--force-reboot",
        "--drain-grace-period=-1",
    ),
    *(
        "--pre-reboot-node-labels",
        "kured=rebooting",
        "--log-format=json",
        "--metrics-port",
        "0x1f90",
    ),
]


def test_flags_copied_from_a_kured_daemonset_are_accepted_and_noted() -> None:
    done = kumaco("convert", "--reboot-days", "sat", *DAEMONSET, "-o", "json")
    assert (done.returncode, done.stderr) == (0, "")
    doc = json.loads(done.stdout)
    plain = json.loads(kumaco("convert", "--reboot-days", "sat", "-o", "json").stdout)
    assert doc["windows"] == plain["windows"] and doc["kumaco"] == plain["kumaco"]
    noted = doc["notes"][len(plain["notes"]) :]
    assert [n.split(":")[0] for n in noted] == [
        "--period",
        "--reboot-sentinel",
        "--ds-name",
        "--ds-namespace",
        "--metrics-port",
        "--log-format",
        "--force-reboot",
        "--drain-grace-period",
        "--pre-reboot-node-labels",
    ]  # in kured's order of NO_EQUIVALENT, once each
    assert noted[0] == (
        "--period: kumaco has no polling period: it admits a node the moment its window opens, "
        "not at the next look (kured v2's reboot-required-detector has its own --period)"
    )
    assert "--ds-name: kured v1's lock was an annotation on its DaemonSet" in noted[2]
    bad = kumaco("convert", "--force-reboot=maybe")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.splitlines()[-1] == (
        "kumaco convert: error: argument --force-reboot: 'maybe' is not a boolean (true/false)"
    )


def test_every_flag_of_kured_v1_in_the_guide_is_accepted() -> None:
    """The guide's table lists kured v1's flags (its first column): convert takes them all."""
    guide = (ROOT / "docs" / "migrating-from-kured-v1.md").read_text()
    table = guide[
        guide.index("| kured v1 | becomes |") : guide.index("`kumaco convert` accepts every")
    ]
    rows = [row.split("|")[1] for row in table.splitlines()[2:] if row.startswith("|")]
    flags = [f for row in rows for f in re.findall(r"`(--[a-z-]+)`", row)]
    # kured v1's cmd/kured/main.go declares 43 flags (its cobra version); all are here.
    assert len(set(flags)) == len(flags) == 43 and set(NO_EQUIVALENT) < set(flags)
    usage = kumaco("convert", "--help").stdout
    assert [f for f in flags if f"  {f}" not in usage] == []


def test_a_flag_kured_v1_does_not_have_is_a_usage_error_naming_it() -> None:
    done = kumaco("convert", "--period", "1h", "--reboot-sentinal", "/x")
    assert (done.returncode, done.stdout) == (2, "")
    assert "unrecognized arguments: --reboot-sentinal /x" in done.stderr


def test_kured_variables_are_its_flags_and_the_command_line_wins() -> None:
    env = {
        "KURED_REBOOT_DAYS": "sat,sun",  # a list: comma-separated, as kured's Set reads it
        "KURED_START_TIME": "21:00",
        "KURED_END_TIME": "04:00",
        "KURED_CONCURRENCY": "2",
        "KURED_BLOCKING_POD_SELECTOR": "app=db",
        "KURED_PROMETHEUS_URL": "http://prom:9090",
        "KURED_ALERT_FILTER_REGEXP": "^Watchdog$",
        "KURED_LOCK_RELEASE_DELAY": "10m",
        "KURED_TIME_ZONE": "",  # empty: unset (viper), kured's default UTC
    }
    given = ["--start-time", "22:00", "--blocking-pod-selector", "team=storage"]
    by_env = kumaco("convert", *given, "-n", "maintenance", "-o", "json", env=env)
    assert (by_env.returncode, by_env.stderr) == (0, "")
    by_flags = kumaco(
        "convert",
        *("--reboot-days", "sat,sun", "--start-time", "22:00", "--end-time", "04:00"),
        *("--concurrency", "2", "--blocking-pod-selector", "team=storage"),
        *("--prometheus-url", "http://prom:9090", "--alert-filter-regexp", "^Watchdog$"),
        *("--lock-release-delay", "10m", "-n", "maintenance", "-o", "json"),
    )
    assert json.loads(by_env.stdout) == json.loads(by_flags.stdout)
    doc = json.loads(by_env.stdout)
    assert [w["data"]["startTime"] for w in doc["windows"]] == [
        "0 22 * * SUN",  # 22:00 from the command line, not the variable's 21:00
        "0 0 * * SAT",
        "0 22 * * SAT",
    ]
    assert doc["rebootInhibitors"][0] == "--blocking-pod-selector=team=storage"
    assert doc["kumaco"][0] == "--max-in-progress=2"


def test_a_kured_variable_without_a_kumaco_equivalent_is_noted_and_a_refused_one_ignored() -> None:
    env = {"KURED_PERIOD": "30m", "KURED_DS_NAME": "kured", "KURED_LOCK_TTL": "1d"}
    env |= {"KURED_ALERT_FIRING_ONLY": "yes", "KURED_PROMETHEUS_URL": "http://p"}
    done = kumaco("convert", "--reboot-days", "sat", "-o", "json", env=env)
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert [n.split(":")[0] for n in doc["notes"] if n.startswith("--")] == [
        "--period",
        "--ds-name",
    ]
    # kured's Set refuses 1d and kured does not check that error: no --lock-ttl, as there.
    assert not any(f.startswith("--in-progress-timeout") for f in doc["kumaco"])
    # Go's ParseBool refuses "yes": --alert-firing-only stays false there too.
    assert doc["rebootInhibitors"] == ["--prometheus-url=http://p"]
    assert doc["warnings"][:1] == [  # in the order convert lists the flags
        "KURED_ALERT_FIRING_ONLY: 'yes' is not a boolean; kured v1 ignores a variable its flag "
        "refuses (it does not check that error): --alert-firing-only keeps its default, and so "
        "does the conversion"
    ]
    assert doc["warnings"][1:] == [
        'KURED_LOCK_TTL: unknown unit "d" in duration "1d" (e.g. 90s, 10m, 1h30m); kured v1 '
        "ignores a "
        "variable its flag refuses (it does not check that error): --lock-ttl keeps its "
        "default, and so does the conversion"
    ]
    assert done.stderr == "".join(f"warning: {w}\n" for w in doc["warnings"])


# --- --alert-filter-regexp: Go's regexp.Compile refuses it at kured's start ----------------------

REFUSED_REGEXPS = ["(", ")", "[a", "[^]", "*", "a|*", "(*)", "a**", "x**?", "a{2}*", "a{3,2}"]
REFUSED_REGEXPS += ["[z-a]", "\\", "(?:a", "^(Watchdog|InfoInhibitor$"]
KEPT_REGEXPS = ["^Watchdog$", "^(Watchdog|InfoInhibitor)$", "", "(?i)abc", "a*?", "x{,3}"]
KEPT_REGEXPS += [
    r"\pL+",
    r"\z",
    "(?P<n>x)",
    "^*",
    "$*",
    r"\b*",
    "[[:alpha:]]+",
    "{,}",
    "a|{,}",
]  # RE2's, not re's


@pytest.mark.oracle
def test_a_regexp_refused_is_one_go_refuses_and_the_kept_ones_go_accepts(
    robfig_oracle: Oracle,
) -> None:
    for text in REFUSED_REGEXPS:
        assert regexp_error(text) is not None, text
        assert "error" in robfig_oracle.regexp(text), text
    for text in KEPT_REGEXPS:
        assert regexp_error(text) is None, text
        assert robfig_oracle.regexp(text) == {"ok": True}, text


@pytest.mark.oracle
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="()[]{}*+?|^$\\-:,a1pPz", max_size=8))
def test_any_regexp_refused_is_one_go_refuses(robfig_oracle: Oracle, text: str) -> None:
    if regexp_error(text) is not None:
        assert "error" in robfig_oracle.regexp(text), text


def test_an_invalid_alert_filter_regexp_is_a_usage_error_naming_the_flag() -> None:
    done = kumaco("convert", "--prometheus-url", "http://prom:9090", "--alert-filter-regexp", "(")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kumaco convert: --alert-filter-regexp: '(': kured rejects it (not a Go regular "
        "expression: missing ), unterminated subpattern at position 0)\n"
    )
    alone = kumaco("convert", "--alert-filter-regexp", "a**")  # kured checks it at start
    assert alone.returncode == 2 and "--alert-filter-regexp: 'a**'" in alone.stderr
    for text in (r"^(Watchdog|InfoInhibitor)$", r"\pL+"):  # valid Go: passed on
        kept = kumaco("convert", "--prometheus-url", "http://p", "--alert-filter-regexp", text)
        assert (kept.returncode, kept.stderr) == (0, "")
        assert f"#   --alert-filter-regexp={text}\n" in kept.stdout
