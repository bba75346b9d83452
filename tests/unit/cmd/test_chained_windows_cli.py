"""Long chained windows through the console scripts: one end, whatever the range asked.

``* * * 12 *`` for ``1m`` chains 44,640 firings into one run that closes on January 1st
in the window's zone; ``*/5 * * * *`` for ``10m`` never closes. ``kumaco windows`` (text,
JSON, iCalendar) and ``kumaco validate`` must say so for every range and instant asked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import icalendar
import pytest
import yaml

from tests.support.builders.cli import LABEL, cm, kumaco

#: Ranges of ``kumaco windows``: an hour in December, a day, the whole winter, its last hour.
RANGES = (
    ("2027-12-05T00:00:00Z", "2027-12-05T01:00:00Z"),
    ("2027-12-05T00:00:00Z", "2027-12-06T00:00:00Z"),
    ("2027-11-01T00:00:00Z", "2028-02-01T00:00:00Z"),
    ("2027-12-31T21:00:00Z", "2027-12-31T22:00:00Z"),
)


def windows_file(tmp_path: Path, start: str, duration: str, freeze: bool = False) -> Path:
    f = tmp_path / "w.yaml"
    data = {"startTime": start, "duration": duration, "nodeSelector": ""}
    f.write_text(
        yaml.safe_dump(
            cm("w", {**data, **({"freeze": "true"} if freeze else {})}, labels={LABEL: ""})
        )
    )
    return f


def events(f: Path, start: str, until: str) -> list[icalendar.cal.Component]:
    done = kumaco("windows", str(f), "--from", start, "--until", until, "-o", "ics")
    assert done.returncode == 0, done.stderr
    return list(icalendar.Calendar.from_ical(done.stdout).walk("VEVENT"))


def stamp(e: icalendar.cal.Component, key: str) -> str:
    return str(e.decoded(key).strftime("%Y-%m-%dT%H:%M:%SZ"))


@pytest.mark.parametrize(
    ("zone", "new_year"),
    [("", "2028-01-01T00:00:00Z"), ("CRON_TZ=Europe/Berlin ", "2027-12-31T23:00:00Z")],
)
@pytest.mark.parametrize("freeze", [True, False])
def test_a_december_window_of_every_minute_closes_on_january_1st_whatever_the_range(
    tmp_path: Path, zone: str, new_year: str, freeze: bool
) -> None:
    f = windows_file(tmp_path, f"{zone}* * * 12 *", "1m", freeze)
    for start, until in RANGES:
        span = ["--from", start, "--until", until]
        rows = json.loads(kumaco("windows", str(f), *span, "-o", "json").stdout)
        assert [r["end"] for r in rows] == [new_year], (start, until, rows)
    text = kumaco("windows", str(f), "--from", RANGES[0][0], "--until", RANGES[0][1]).stdout
    assert text.split()[1] == new_year and "open-ended" not in text
    [event] = events(f, *RANGES[0])
    assert stamp(event, "dtend") == new_year and "open-ended" not in str(event["summary"])
    if not freeze:  # validate says "never closes" of maintenance windows only
        for at in ("2027-12-01", "2027-12-20T12:34:00Z"):
            done = kumaco("validate", str(f), "--at", at)
            assert (done.returncode, done.stderr) == (0, ""), at


def test_a_window_of_every_five_minutes_for_ten_never_closes_for_every_range(
    tmp_path: Path,
) -> None:
    f = windows_file(tmp_path, "*/5 * * * *", "10m")
    for start, until in RANGES:
        span = ["--from", start, "--until", until]
        rows = json.loads(kumaco("windows", str(f), *span, "-o", "json").stdout)
        assert len(rows) == 1 and rows[0]["end"] is None, (start, until, rows)
    span = ["--from", RANGES[0][0], "--until", RANGES[0][1]]
    assert kumaco("windows", str(f), *span).stdout.split()[1] == "open-ended"
    for start, until in RANGES[:3]:
        # The calendar's event has to end: it ends with the feed, and says it never closes.
        [event] = events(f, start, until)
        assert stamp(event, "dtend") == until
        assert str(event["summary"]).endswith("(open-ended)")
        assert "never closes" in str(event["description"])
    done = kumaco("validate", str(f), "--at", "2028-06-01T12:34:00Z")
    assert done.returncode == 0 and "maintenance/w never closes" in done.stderr


def test_a_window_chained_for_ten_months_closes_and_one_chained_past_a_year_never_does(
    tmp_path: Path,
) -> None:
    """ "Never closes" is: still chained a year after it began (whatever the instant asked)."""
    ten_months = windows_file(tmp_path, "* * * 2-11 *", "1m")
    for at in ("2027-01-15", "2027-07-01"):
        done = kumaco("validate", str(ten_months), "--at", at)
        assert (done.returncode, done.stderr) == (0, ""), at
    rows = json.loads(
        kumaco(
            "windows",
            str(ten_months),
            "--from",
            "2027-07-01",
            "--until",
            "2027-07-02",
            "-o",
            "json",
        ).stdout
    )
    assert [r["end"] for r in rows] == ["2027-12-01T00:00:00Z"]
    forever = windows_file(tmp_path, "0 0 1 1 *", "9000h")
    done = kumaco("validate", str(forever), "--at", "2027-07-01")
    assert "never closes" in done.stderr


def test_the_timeline_page_says_when_a_december_window_closes(tmp_path: Path) -> None:
    """The table's "At now" column: the real close of a long run, or "never closes".

    The controller follows a run an hour or two ("closes after <the next hour>"); the views
    follow it to its end (``kubectl kumaco status`` words it through the same function).
    """
    december = windows_file(tmp_path, "CRON_TZ=Europe/Berlin * * * 12 *", "1m")
    span = ["--from", "2027-12-10T00:00:00Z", "--until", "2027-12-11T00:00:00Z"]
    done = kumaco("timeline", str(december), *span, "--at", "2027-12-10T12:00:00Z", "-o", "html")
    assert done.returncode == 0, done.stderr
    cell = re.search(
        r"<strong>maintenance/w</strong>.*?<td>(<span class=\"open\">.*?)</td>", done.stdout
    )
    assert cell is not None and "closes after" not in cell.group(1)
    assert 'closes <span class="nw">2027-12-31T23:00:00Z</span>' in cell.group(1), cell.group(1)
