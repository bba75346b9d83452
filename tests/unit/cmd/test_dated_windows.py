"""Dated windows through the installed ``kumaco`` script: every command gives the same answer.

A one-shot ``startTime`` has exactly one occurrence; ``notBefore``/``notAfter`` keep a
cron window's occurrences that start between them (across a daylight-saving change);
a window whose dates leave nothing to come has ended, and ``validate``, ``windows``
(text, JSON, ICS), ``timeline``, ``plan`` and ``forecast`` all say so or act on it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from icalendar import Calendar

from tests.support.builders.cli import LABEL, REQ, cm, kumaco

ONCE = {
    "startTime": "2027-01-15T02:00:00",
    "timeZone": "Europe/Berlin",
    "duration": "4h",
    "nodeSelector": "",
}
SPRING = {  # every Sunday 02:00 New York time, March 2027 only: the clocks change on the 14th
    "startTime": "0 2 * * SUN",
    "timeZone": "America/New_York",
    "notBefore": "2027-03-01",
    "notAfter": "2027-04-01",
    "duration": "3h",
    "nodeSelector": "",
}
ENDED_ONCE = "has ended: its one occurrence (2027-01-15T01:00:00Z) is over; it will never open again: delete its ConfigMap"


def write(tmp_path: Path, **windows: dict[str, str]) -> str:
    path = tmp_path / "windows.yaml"
    docs = [cm(name, data, labels={LABEL: ""}) for name, data in windows.items()]
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def nodes(tmp_path: Path, count: int = 2) -> str:
    cond = {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    items = [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"conditions": [cond]}}
        for i in range(count)
    ]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    return str(path)


def test_validate_accepts_dated_windows_and_warns_once_they_have_ended(tmp_path: Path) -> None:
    w = write(tmp_path, once=ONCE, spring=SPRING)
    before = kumaco("validate", w, "--at", "2027-01-01")
    assert before.returncode == 0, before.stderr
    assert before.stdout == "valid maintenance/once\nvalid maintenance/spring\n"
    assert before.stderr == (
        "warning: maintenance/spring: 02:00 does not exist on 2027-03-14 in America/New_York: "
        "no window that night\n"
    )
    after = kumaco("validate", w, "--at", "2027-04-10")
    assert after.returncode == 0, "an ended window is a warning, not an error"
    assert after.stderr == (
        f"warning: maintenance/once {ENDED_ONCE}\n"
        "warning: maintenance/spring has ended: no occurrence starts before its notAfter "
        "2027-04-01 (2027-04-01T04:00:00Z); it will never open again: delete its ConfigMap\n"
    )
    as_json = json.loads(kumaco("validate", w, "--at", "2027-04-10", "-o", "json").stdout)
    assert json.dumps(as_json).count("has ended") == 2


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        (
            {**ONCE, "startTime": "2027-03-28T02:30:00"},
            "startTime",
            "'2027-03-28T02:30:00' does not exist in Europe/Berlin: the clocks move forward",
        ),
        ({**ONCE, "daysOfMonth": "1-7"}, "daysOfMonth", "applies to a cron startTime only"),
        ({**SPRING, "notAfter": "2027-03-01"}, "notAfter", "is not after notBefore"),
        ({**SPRING, "notAfter": "2027-03-07"}, "notAfter", "no occurrence of startTime"),
    ],
)
def test_validate_names_the_key_of_a_bad_date(
    tmp_path: Path, data: dict[str, str], key: str, message: str
) -> None:
    done = kumaco("validate", write(tmp_path, bad=data), "--at", "2027-01-01")
    assert done.returncode == 1
    assert done.stdout.startswith(f"invalid maintenance/bad: {key}: "), done.stdout
    assert message in done.stdout
    assert "Traceback" not in done.stderr


def test_windows_lists_the_occurrences_between_the_bounds_in_every_format(tmp_path: Path) -> None:
    w = write(tmp_path, once=ONCE, spring=SPRING)
    span = ["--from", "2027-01-01", "--until", "2027-06-01", "--at", "2027-01-01"]
    text = kumaco("windows", w, *span)
    assert text.returncode == 0, text.stderr
    assert text.stdout == (
        "2027-01-15T01:00:00Z  2027-01-15T05:00:00Z  maintenance/once\n"
        "2027-03-07T07:00:00Z  2027-03-07T10:00:00Z  maintenance/spring\n"
        "2027-03-21T06:00:00Z  2027-03-21T09:00:00Z  maintenance/spring\n"
        "2027-03-28T06:00:00Z  2027-03-28T09:00:00Z  maintenance/spring\n"
    )
    doc = json.loads(kumaco("windows", w, *span, "-o", "json").stdout)
    assert [(o["name"], o["start"]) for o in doc] == [
        ("once", "2027-01-15T01:00:00Z"),
        ("spring", "2027-03-07T07:00:00Z"),
        ("spring", "2027-03-21T06:00:00Z"),
        ("spring", "2027-03-28T06:00:00Z"),
    ]
    ics = Calendar.from_ical(kumaco("windows", w, *span, "-o", "ics").stdout)
    summaries = [str(e["SUMMARY"]) for e in ics.walk("VEVENT")]
    assert summaries == [
        "Maintenance window: maintenance/once (last occurrence)",
        "Maintenance window: maintenance/spring",
        "Maintenance window: maintenance/spring",
        "Maintenance window: maintenance/spring (last occurrence)",
    ]
    described = str(ics.walk("VEVENT")[1]["DESCRIPTION"])
    assert "notBefore: 2027-03-01\nnotAfter: 2027-04-01" in described
    # the answer does not depend on the range asked
    longer = kumaco(
        "windows", w, "--from", "2026-01-01", "--until", "2030-01-01", "--at", "2027-01-01"
    )
    assert longer.stdout == text.stdout


def test_windows_says_which_windows_have_ended_at_the_instant_given(tmp_path: Path) -> None:
    w = write(tmp_path, once=ONCE)
    after = kumaco("windows", w, "--at", "2027-02-01", "-o", "json")
    assert after.returncode == 0
    assert json.loads(after.stdout) == []
    assert after.stderr == f"warning: maintenance/once {ENDED_ONCE}\n"
    assert kumaco("windows", w, "--at", "2027-01-15T03:00:00Z").stderr == ""


def test_plan_puts_nodes_under_maintenance_only_during_the_one_occurrence(tmp_path: Path) -> None:
    w, n = write(tmp_path, once=ONCE), nodes(tmp_path)

    def under(at: str) -> list[bool]:
        done = kumaco("plan", "--windows", w, "--nodes", n, "--at", at, "-o", "json")
        assert done.returncode == 0, done.stderr
        return [node["underMaintenance"] for node in json.loads(done.stdout)["nodes"]]

    assert under("2027-01-15T00:59:59Z") == [False, False]
    assert under("2027-01-15T01:00:00Z") == [True, True]
    assert under("2027-01-15T04:59:59Z") == [True, True]
    assert under("2027-01-15T05:00:00Z") == [False, False]
    assert under("2028-01-15T01:30:00Z") == [False, False]  # no second January 15th


def test_forecast_fits_the_fleet_into_the_one_occurrence_or_says_who_is_left(
    tmp_path: Path,
) -> None:
    w, n = write(tmp_path, once=ONCE), nodes(tmp_path, 3)
    base = [
        *[
            "forecast",
            "--windows",
            w,
            "--nodes",
            n,
            "--from",
            "2027-01-01",
            "--until",
            "2028-01-01",
        ],
        *["--max-in-progress", "1", "--require-condition", REQ, "-o", "json"],
    ]
    fits = kumaco(*base, "--maintenance-duration", "1h")
    assert fits.returncode == 0, fits.stderr
    assert json.loads(fits.stdout)["finishedAt"] == "2027-01-15T04:00:00Z"
    short = kumaco(*base, "--maintenance-duration", "2h")
    assert short.returncode == 1, "the second January 15th never comes"
    assert len(json.loads(short.stdout)["unfinished"]) == 1


def test_the_timeline_table_says_ended(tmp_path: Path) -> None:
    w = write(tmp_path, once=ONCE, spring=SPRING)
    page = kumaco(
        "timeline",
        w,
        "-o",
        "html",
        "--at",
        "2027-02-01",
        "--from",
        "2027-02-01",
        "--until",
        "2027-02-08",
    )
    assert page.returncode == 0, page.stderr
    assert "ended (it will never open again: delete its ConfigMap)" in page.stdout
    assert page.stdout.count("ended (it will never open again") == 1  # spring is still to come


def test_the_timeline_marks_an_ended_lane_and_keeps_the_bars_of_its_occurrence(
    tmp_path: Path,
) -> None:
    w = write(tmp_path, once=ONCE, spring=SPRING)
    span = ["--from", "2027-01-14", "--until", "2027-01-17"]
    ended = kumaco("timeline", w, *span, "--at", "2027-01-16")
    assert ended.returncode == 0, ended.stderr
    lanes = {
        g.get("data-window"): g
        for g in ET.fromstring(ended.stdout).iter("{http://www.w3.org/2000/svg}g")
        if "kt-lane" in (g.get("class") or "")
    }
    assert lanes["maintenance/once"].get("data-ended") == "true"
    assert lanes["maintenance/spring"].get("data-ended") is None
    assert "ended: its one occurrence (2027-01-15T01:00:00Z) is over" in ended.stdout
    before = kumaco("timeline", w, *span, "--at", "2027-01-14")
    assert 'data-ended="true"' not in before.stdout
