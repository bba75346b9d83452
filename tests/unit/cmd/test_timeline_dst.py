"""The timeline next to a DST switch, its local axis, long names and the forecast's legend.

Through the installed console script (``kumaco timeline``, ``kumaco forecast -o svg``),
the SVG parsed with ``xml.etree``; local times are computed here from ``zoneinfo``, not
by kumaco's code:

* every bar has its start-time label (``data-start`` the bar's), in the window's zone,
  on both sides of a switch (Berlin, New York, Lord Howe's half hour);
* a night DST skips is a dashed outline with a ``skipped (DST)`` note where the
  occurrence would have been, and is no bar; a start time repeated is noted;
* under the UTC tick labels, one row per zone of the windows gives the wall time at
  the same gridlines;
* a long name is wrapped, never cut without its whole text at hand (tooltip, HTML);
* the forecast's legend names every kind of bar the picture draws.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.builders.cli import LABEL, cm, kumaco

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"


def window(name: str, start_time: str, zone: str, duration: str = "4h") -> dict[str, Any]:
    data = {"startTime": start_time, "timeZone": zone, "duration": duration, "nodeSelector": ""}
    return cm(name, data, labels={LABEL: ""})


def picture(
    tmp_path: Path, windows: list[dict[str, Any]], start: str, until: str, *extra: str
) -> ET.Element:
    """``kumaco timeline`` of ``windows`` over ``[start, until)``, parsed."""
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"kind": "List", "items": windows}))
    proc = kumaco("timeline", str(path), "--from", start, "--until", until, "--at", start, *extra)
    assert proc.returncode == 0, proc.stderr
    return ET.fromstring(proc.stdout)


def classes(e: ET.Element) -> list[str]:
    return (e.get("class") or "").split()


def visible(e: ET.Element) -> str:
    """A ``<text>``'s visible content: its text and tspans, not its ``<title>``."""
    title = e.find(f"{SVG}title")
    parts = [title.tail or ""] if title is not None else [e.text or ""]
    parts += [s.text or "" for s in e.iter(f"{SVG}tspan")]
    return "".join(parts).strip()


def lane(svg: ET.Element, key: str) -> ET.Element:
    return next(
        g for g in svg.iter(f"{SVG}g") if "kt-lane" in classes(g) and g.get("data-window") == key
    )


def bars(e: ET.Element) -> list[ET.Element]:
    return [r for r in e.iter(f"{SVG}rect") if "kt-bar" in classes(r)]


def labels(e: ET.Element) -> list[ET.Element]:
    return [t for t in e.iter(f"{SVG}text") if "kt-barlabel" in classes(t)]


def wall(instant: str, zone: str) -> dt.datetime:
    return dt.datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))


SWITCHES = [
    # zone, startTime, range, the local start every bar has, how many bars (of 7 nights:
    # after Lord Howe's half-hour shift robfig's chain of firings skips a night, marked)
    ("Europe/Berlin", "0 3 * * *", "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z", "03:00", 7),
    ("Europe/Berlin", "0 3 * * *", "2026-10-22T00:00:00Z", "2026-10-29T00:00:00Z", "03:00", 7),
    ("America/New_York", "0 3 * * *", "2024-03-07T00:00:00Z", "2024-03-14T00:00:00Z", "03:00", 7),
    ("America/New_York", "30 23 * * *", "2024-11-01T00:00:00Z", "2024-11-08T00:00:00Z", "23:30", 7),
    ("Australia/Lord_Howe", "0 3 * * *", "2026-04-02T00:00:00Z", "2026-04-09T00:00:00Z", "03:00", 6),
    ("Australia/Lord_Howe", "0 4 * * *", "2026-10-01T00:00:00Z", "2026-10-08T00:00:00Z", "04:00", 6),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "start_time", "start", "until", "local", "count"), SWITCHES)
def test_every_bar_keeps_its_local_start_label_across_a_dst_switch(
    tmp_path: Path, zone: str, start_time: str, start: str, until: str, local: str, count: int
) -> None:
    svg = picture(tmp_path, [window("nightly", start_time, zone)], start, until)
    g = lane(svg, "maintenance/nightly")
    assert len(g.findall(f".//{SVG}line[@class='kt-dst']")) == 1  # the switch is in the range
    starts = [b.get("data-start", "") for b in bars(g)]
    assert len(starts) == count
    assert len([r for r in g.iter(f"{SVG}rect") if "kt-skip" in classes(r)]) == 7 - count
    by_start = {t.get("data-start"): visible(t) for t in labels(g)}
    assert sorted(by_start) == sorted(starts), "a bar without its label"
    for s in starts:
        text = by_start[s]
        assert text.startswith(f"{local} "), (s, text)
        assert text.split(" ", 1)[0] == f"{wall(s, zone):%H:%M}"
    # The abbreviation changes at the switch, on the labels as in the zone.
    assert len({text.split(" ", 1)[1] for text in by_start.values()}) == 2


def test_the_docs_picture_labels_all_seven_berlin_nights_beside_the_switch_marker(
    tmp_path: Path,
) -> None:
    windows = [
        window("berlin-nightly", "0 3 * * *", "Europe/Berlin"),
        window("ny-weekend", "0 22 * * sat", "America/New_York", "10h"),
        window("db-patch", "30 12 * * 1-5", "UTC", "90m"),
    ]
    svg = picture(
        tmp_path,
        windows,
        "2026-03-26T00:00:00Z",
        "2026-04-02T00:00:00Z",
        "--at",
        "2026-03-29T02:30:00Z",
    )
    for key, count in (
        ("maintenance/berlin-nightly", 7),
        ("maintenance/db-patch", 5),
        ("maintenance/ny-weekend", 1),
    ):
        g = lane(svg, key)
        assert len(bars(g)) == count and len(labels(g)) == count, key
    berlin = lane(svg, "maintenance/berlin-nightly")
    assert [visible(t) for t in labels(berlin)] == ["03:00 CET"] * 3 + ["03:00 CEST"] * 4
    marker = [visible(t) for t in berlin.iter(f"{SVG}text") if "kt-dst-text" in classes(t)]
    assert marker == ["CET→CEST"]


SKIPS = [
    # zone, startTime, range, the instant the skipped night would have started
    ("Europe/Berlin", "30 2 * * *", "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z",
     "2026-03-29T01:30:00Z", "02:30 does not exist on 2026-03-29 in Europe/Berlin"),
    ("America/New_York", "30 2 * * *", "2024-03-07T00:00:00Z", "2024-03-14T00:00:00Z",
     "2024-03-10T07:30:00Z", "02:30 does not exist on 2024-03-10 in America/New_York"),
    ("Australia/Lord_Howe", "0 0 * * *", "2026-04-02T00:00:00Z", "2026-04-09T00:00:00Z",
     "2026-04-05T13:30:00Z", "00:00 is skipped on 2026-04-06 in Australia/Lord_Howe"),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "start_time", "start", "until", "at", "said"), SKIPS)
def test_a_night_dst_skips_is_marked_not_just_missing(
    tmp_path: Path, zone: str, start_time: str, start: str, until: str, at: str, said: str
) -> None:
    svg = picture(tmp_path, [window("nightly", start_time, zone, "1h")], start, until)
    g = lane(svg, "maintenance/nightly")
    nights = {wall(b.get("data-start", ""), zone).date() for b in bars(g)}
    skipped = wall(at, zone).date()
    assert len(nights) == 6 and skipped not in nights  # 7 nights, one without a bar
    outline = [r for r in g.iter(f"{SVG}rect") if "kt-skip" in classes(r)]
    assert [r.get("data-at") for r in outline] == [at]
    assert said in (outline[0].findtext(f"{SVG}title") or "")
    # Where the occurrence would have been: between its neighbours, a bar's width.
    x = float(outline[0].get("x", ""))
    before = [float(b.get("x", "")) for b in bars(g) if b.get("data-start", "") < at]
    after = [float(b.get("x", "")) for b in bars(g) if b.get("data-start", "") > at]
    assert max(before) < x < min(after)
    assert outline[0].get("width") == bars(g)[0].get("width")
    note = [t for t in g.iter(f"{SVG}text") if "kt-dst-note" in classes(t)]
    assert [(visible(t), t.get("data-kind"), t.get("data-at")) for t in note] == [
        ("skipped (DST)", "skipped" if "robfig" in said or "skipped" in said else "gap", at)
    ]
    assert said in (note[0].findtext(f"{SVG}title") or "")
    # Every bar keeps its label, the ones beside the skipped night too.
    assert len(labels(g)) == len(bars(g))


def test_a_start_time_the_fall_back_repeats_is_noted(tmp_path: Path) -> None:
    svg = picture(
        tmp_path,
        [window("nightly", "30 1 * * *", "America/New_York", "1h")],
        "2024-10-31T00:00:00Z",
        "2024-11-07T00:00:00Z",
    )
    g = lane(svg, "maintenance/nightly")
    note = [t for t in g.iter(f"{SVG}text") if "kt-dst-note" in classes(t)]
    assert [(visible(t), t.get("data-kind"), t.get("data-at")) for t in note] == [
        ("opens twice (DST)", "twice", "2024-11-03T05:30:00Z")
    ]
    assert "01:30 happens twice on 2024-11-03" in (note[0].findtext(f"{SVG}title") or "")
    assert not [r for r in g.iter(f"{SVG}rect") if "kt-skip" in classes(r)]


def test_no_dst_mark_where_dst_changes_nothing(tmp_path: Path) -> None:
    svg = picture(
        tmp_path,
        [window("nightly", "0 3 * * *", "Europe/Berlin"), window("utc", "30 2 * * *", "UTC")],
        "2026-03-26T00:00:00Z",
        "2026-04-02T00:00:00Z",
    )
    lanes = [g for g in svg.iter(f"{SVG}g") if "kt-lane" in classes(g)]
    assert len(lanes) == 2
    assert not [e for g in lanes for e in g.iter() if {"kt-skip", "kt-dst-note"} & set(classes(e))]


def local_rows(svg: ET.Element) -> dict[str, list[ET.Element]]:
    rows: dict[str, list[ET.Element]] = {}
    for t in svg.iter(f"{SVG}text"):
        if "kt-local" in classes(t):
            rows.setdefault(t.get("data-zone", ""), []).append(t)
    return rows


def test_the_axis_gives_the_windows_wall_time_under_utc(tmp_path: Path) -> None:
    start, until = "2026-03-28T12:00:00Z", "2026-03-29T12:00:00Z"
    svg = picture(tmp_path, [window("nightly", "0 3 * * *", "Europe/Berlin")], start, until)
    names = [visible(t) for t in svg.iter(f"{SVG}text") if "kt-local-zone" in classes(t)]
    assert names == ["Europe/Berlin"]
    rows = local_rows(svg)
    assert list(rows) == ["Europe/Berlin"]
    texts = [(t.get("data-at", ""), visible(t)) for t in rows["Europe/Berlin"]]
    assert len(texts) >= 12  # hourly gridlines over a day, most of them labelled
    for at, text in texts:
        assert text.split(" ")[0] == f"{wall(at, 'Europe/Berlin'):%H:%M}", (at, text)
    # The abbreviation is said first and where it changes: CET, then CEST after 01:00Z.
    said = [(at, text.split(" ")[1]) for at, text in texts if " " in text]
    assert said[0] == (texts[0][0], "CET")
    assert said[-1][1] == "CEST" and said[-1][0] >= "2026-03-29T01:00:00Z"
    # Each local label sits at its UTC gridline's x.
    utc = {
        visible(t): float(t.get("x", ""))
        for t in svg.iter(f"{SVG}text")
        if classes(t)[:2] == ["kt-tick", "kt-muted"]
    }
    for t in rows["Europe/Berlin"]:
        assert utc[t.get("data-at", "")[11:16]] == float(t.get("x", ""))
    legend = " ".join(visible(t) for t in svg.iter(f"{SVG}text") if "kt-legend" in classes(t))
    assert "wall time in Europe/Berlin" in legend


def test_one_local_row_per_zone_and_none_for_utc(tmp_path: Path) -> None:
    start, until = "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z"
    svg = picture(tmp_path, [window("utc", "0 3 * * *", "UTC")], start, until)
    assert local_rows(svg) == {}
    svg = picture(
        tmp_path,
        [
            window("b", "0 3 * * *", "Europe/Berlin"),
            window("n", "0 3 * * *", "America/New_York"),
            window("b2", "0 5 * * *", "Europe/Berlin"),
        ],
        start,
        until,
    )
    assert list(local_rows(svg)) == ["America/New_York", "Europe/Berlin"]


def test_a_long_name_is_wrapped_or_kept_whole_in_tooltip_and_table(tmp_path: Path) -> None:
    wrapped = "payments-eu-west-nightly-workers-of-the-platform"
    huge = "w" + "-segment" * 30
    windows = [window(wrapped, "0 3 * * *", "Europe/Berlin"), window(huge, "0 4 * * *", "UTC")]
    start, until = "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z"
    svg = picture(tmp_path, windows, start, until)
    for name in (wrapped, huge):
        key = f"maintenance/{name}"
        g = lane(svg, key)
        text = next(t for t in g.iter(f"{SVG}text") if "kt-key" in classes(t))
        shown = visible(text)
        assert (text.findtext(f"{SVG}title") or "").split("\n")[0] == key
        if name == wrapped:
            assert len(text.findall(f"{SVG}tspan")) == 2 and shown == key  # all of it, 2 lines
        else:
            assert shown.endswith("…") and key.startswith(shown[:-1])  # shortened, said so
    html = kumaco(
        "timeline", str(tmp_path / "windows.json"), "--from", start, "--until", until, "-o", "html"
    )
    assert html.returncode == 0, html.stderr
    for name in (wrapped, huge):
        assert f"<strong>maintenance/{name}</strong>" in html.stdout


def legend(svg: ET.Element) -> dict[str, str]:
    """The legend's marks by class, each with the text that follows it."""
    marks: dict[str, str] = {}
    items = [e for e in svg.iter() if "kt-legend-mark" in classes(e) or "kt-legend" in classes(e)]
    for mark, text in itertools.pairwise(items):
        if "kt-legend-mark" in classes(mark):
            marks[classes(mark)[0]] = visible(text)
    return marks


def test_the_forecast_legend_names_every_kind_of_bar(tmp_path: Path) -> None:
    proc = kumaco(
        "forecast",
        "--windows",
        str(EXAMPLES / "policy.yaml"),
        "--nodes",
        str(EXAMPLES / "nodes.yaml"),
        "--from",
        "2027-04-04T00:00:00Z",
        "--until",
        "2027-04-04T03:00:00Z",
        "--maintenance-duration",
        "40m",
        "--max-in-progress",
        "3",
        "--require-condition",
        "kured.dev/RebootRequired",
        "-o",
        "svg",
    )
    assert proc.returncode in (0, 1), proc.stderr
    svg = ET.fromstring(proc.stdout)
    turns = [r for r in svg.iter(f"{SVG}rect") if "kt-turn-bar" in classes(r)]
    assert turns  # the nodes' maintenance is drawn
    marks = legend(svg)
    assert marks.get("kt-swatch-turn") == "a node's maintenance (admitted → done)"
    assert marks.get("kt-swatch") == "open (merged occurrences)"
    assert {"kt-swatch-freeze", "kt-dst", "kt-skip", "kt-now"} <= set(marks)
    # A timeline without a forecast draws no node bar and does not promise one.
    plain = picture(
        tmp_path,
        [window("nightly", "0 3 * * *", "UTC")],
        "2027-04-04T00:00:00Z",
        "2027-04-05T00:00:00Z",
    )
    assert "kt-swatch-turn" not in legend(plain)
    assert "kt-swatch" in legend(plain)
