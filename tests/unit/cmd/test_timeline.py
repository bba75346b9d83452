"""The timeline picture (``kumaco timeline``, :mod:`kumaco.views.timeline`), checked structurally.

The SVG is parsed with ``xml.etree``: its bars must be exactly the rows of
``kumaco windows`` for the same files and range, each at the x its start
gives; the axis density must follow the range; DST shifts must be marked;
node counts must respect the scope; the HTML must be one self-contained file.
The screenshot in a real browser is ``tests/e2e/test_timeline_browser.py``.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kumaco.cmd import cli
from kumaco.core.time.instants import parse_time
from kumaco.core.windows.format import parse_window
from kumaco.views import timeline
from kumaco.views.timeline import svg as timeline_svg
from tests.support.builders.cli import kumaco

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[3]

WINDOWS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: berlin-nightly, namespace: maintenance, labels: {kured.dev/maintenance-window: ""}}
data:
  startTime: "0 3 * * *"
  timeZone: Europe/Berlin
  duration: 4h
  nodeSelector: pool=workers,zone=eu-1
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ny-weekend, namespace: maintenance, labels: {kured.dev/maintenance-window: ""}}
data:
  startTime: "CRON_TZ=America/New_York 0 22 * * sat"
  duration: 10h
  nodeSelector: pool=workers,zone=us-1
---
apiVersion: v1
kind: ConfigMap
metadata: {name: db-patch, namespace: databases, labels: {kured.dev/maintenance-window: ""}}
data:
  startTime: "30 12 * * 1-5"
  duration: 90m
  nodeSelector: pool=db
---
apiVersion: v1
kind: ConfigMap
metadata: {name: every-minute, namespace: databases, labels: {kured.dev/maintenance-window: ""}}
data:
  startTime: "*/20 * * * *"
  duration: 25m
  nodeSelector: ""
---
apiVersion: v1
kind: ConfigMap
metadata: {name: typo, namespace: maintenance, labels: {kured.dev/maintenance-window: ""}}
data:
  startTime: "0 3 * * mon-fry"
  duration: 1d
  nodeSelector: pool=workers
"""


def _nodes() -> str:
    items = [
        {
            "kind": "Node",
            "metadata": {
                "name": f"eu-{i}",
                "labels": {"pool": "workers", "zone": "eu-1", "team": "a" if i < 4 else "b"},
            },
        }
        for i in range(6)
    ]
    items += [
        {
            "kind": "Node",
            "metadata": {
                "name": f"us-{i}",
                "labels": {"pool": "workers", "zone": "us-1", "team": "a"},
            },
        }
        for i in range(3)
    ]
    items += [
        {"kind": "Node", "metadata": {"name": f"db-{i}", "labels": {"pool": "db", "team": "b"}}}
        for i in range(2)
    ]
    return json.dumps({"kind": "List", "items": items})


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    w, n = tmp_path / "windows.yaml", tmp_path / "nodes.json"
    w.write_text(WINDOWS)
    n.write_text(_nodes())
    return w, n


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = cli.main(argv, stdin=io.StringIO(""))
    out, err = capsys.readouterr()
    return rc, out, err


def draw(args: list[str], capsys: pytest.CaptureFixture[str], output: str = "svg") -> str:
    rc, out, err = run_cli(["timeline", *args, "--output", output], capsys)
    assert rc == 0, err
    return out


def bars(svg: ET.Element) -> list[ET.Element]:
    return [r for r in svg.iter(f"{SVG}rect") if "kt-bar" in (r.get("class") or "").split()]


def own_text(t: ET.Element) -> str:
    """A <text>'s content without its <title> tooltip."""
    title = t.find(f"{SVG}title")
    return ((title.tail if title is not None else t.text) or "").strip()


def texts(svg: ET.Element, cls: str) -> list[str]:
    return [own_text(t) for t in svg.iter(f"{SVG}text") if cls in (t.get("class") or "").split()]


def _ns(text: str) -> int:
    return parse_time(text)


RANGES = [
    ("2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z"),  # a day, DST in Berlin
    ("2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z"),  # a week across it
    ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"),  # a month
    ("2026-10-20T07:13:00Z", "2026-11-10T19:00:00Z"),  # odd edges; both fall-back shifts
    ("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"),  # a year
]


@pytest.mark.parametrize(("start", "until"), RANGES)
def test_bars_are_exactly_kumaco_windows_rows_at_their_times(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], start: str, until: str
) -> None:
    w, _n = files
    rc, out, _err = run_cli(
        ["windows", str(w), "--from", start, "--until", until, "-o", "json"], capsys
    )
    assert rc == 0
    rows = json.loads(out)
    svg = ET.fromstring(draw([str(w), "--from", start, "--until", until, "--at", start], capsys))
    found = bars(svg)
    # An occurrence that never closes has no end ("end": null, data-end="").
    assert sorted(
        (b.get("data-window"), b.get("data-start"), b.get("data-end")) for b in found
    ) == sorted((f"{r['namespace']}/{r['name']}", r["start"], r["end"] or "") for r in rows)
    assert len(found) == len(rows) > 0

    t0, t1 = _ns(svg.get("data-from", "")), _ns(svg.get("data-until", ""))
    assert (t0, t1) == (_ns(start), _ns(until))
    px, pw = float(svg.get("data-plot-x", "")), float(svg.get("data-plot-width", ""))
    scale = pw / (t1 - t0)
    lane_y: dict[str, float] = {}
    for b in found:
        s = _ns(b.get("data-start", ""))
        e = _ns(b.get("data-end", "")) if b.get("data-end") else t1  # open-ended: to the edge
        x0 = px + (max(s, t0) - t0) * scale
        x1 = px + (min(e, t1) - t0) * scale
        assert float(b.get("x", "")) == pytest.approx(x0, abs=0.006)
        assert float(b.get("width", "")) == pytest.approx(
            max(timeline.MIN_BAR_WIDTH, x1 - x0), abs=0.011
        )
        assert px <= float(b.get("x", "")) <= px + pw
        lane_y.setdefault(b.get("data-window", ""), float(b.get("y", "")))
        assert float(b.get("y", "")) == lane_y[b.get("data-window", "")]  # one lane per window
    # Lanes sorted by namespace/name, top to bottom.
    assert sorted(lane_y, key=lane_y.__getitem__) == sorted(lane_y)
    lanes = [g.get("data-window") for g in svg.iter(f"{SVG}g") if g.get("class") == "kt-lane"]
    assert lanes == [
        "databases/db-patch",
        "databases/every-minute",
        "maintenance/berlin-nightly",
        "maintenance/ny-weekend",
    ]


def test_axis_density_follows_the_range(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, _n = files

    def axis(start: str, until: str) -> tuple[list[str], list[str], int]:
        svg = ET.fromstring(
            draw([str(w), "--from", start, "--until", until, "--at", start], capsys)
        )
        majors = [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "kt-grid-major"]
        utc = [  # the UTC row: not the local rows (kt-local, kt-local-zone) under it
            own_text(t)
            for t in svg.iter(f"{SVG}text")
            if (t.get("class") or "").split()[:2] == ["kt-tick", "kt-muted"]
        ]
        return utc[1:], texts(svg, "kt-date"), len(majors)  # [0] is "UTC"

    ticks, dates, majors = axis("2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z")
    assert ticks == [f"{h:02d}:00" for h in range(24)]  # hours for a day
    assert dates == ["Sun 29 Mar 2026"]
    assert majors == 2  # midnight at both ends

    ticks, dates, majors = axis("2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z")
    assert ticks == ["00:00", "12:00"] * 7
    assert dates == [
        "Thu 26 Mar 2026",
        "Fri 27 Mar",
        "Sat 28 Mar",
        "Sun 29 Mar",
        "Mon 30 Mar",
        "Tue 31 Mar",
        "Wed 1 Apr",
    ]

    ticks, dates, _ = axis("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert ticks == [str(d) for d in range(1, 32)]  # days for a month
    assert dates == ["March 2026"]

    ticks, dates, _ = axis("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
    assert ticks == [
        "Jan",
        "Feb",
        "Mar",
        "Apr",
        "May",
        "Jun",
        "Jul",
        "Aug",
        "Sep",
        "Oct",
        "Nov",
        "Dec",
    ]
    assert dates == ["2026"]

    # A decade (one daily window only: a continuously open window costs a chain walk per day).
    w.write_text(WINDOWS.split("---", maxsplit=1)[0])
    ticks, dates, _ = axis("2026-01-01T00:00:00Z", "2036-01-01T00:00:00Z")
    assert ticks == [str(y) for y in range(2026, 2036)]
    assert dates == []


def test_dst_shifts_are_marked_and_local_labels_stay_put(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, _n = files
    svg = ET.fromstring(
        draw(
            [
                str(w),
                "--from",
                "2026-03-26T00:00:00Z",
                "--until",
                "2026-04-02T00:00:00Z",
                "--at",
                "2026-03-29T02:30:00Z",
            ],
            capsys,
        )
    )
    lanes = {g.get("data-window"): g for g in svg.iter(f"{SVG}g") if g.get("class") == "kt-lane"}
    berlin = lanes["maintenance/berlin-nightly"]
    starts = [b.get("data-start", "")[11:16] for b in bars(berlin)]
    assert starts == [
        "02:00",
        "02:00",
        "02:00",
        "01:00",
        "01:00",
        "01:00",
        "01:00",
    ]  # in UTC: moved
    labels = texts(berlin, "kt-barlabel")
    assert "03:00 CET" in labels and "03:00 CEST" in labels  # in Berlin: 03:00 throughout
    dst = [ln for ln in berlin.iter(f"{SVG}line") if ln.get("class") == "kt-dst"]
    assert [ln.get("data-at") for ln in dst] == ["2026-03-29T01:00:00Z"]
    marker = next(t for t in berlin.iter(f"{SVG}text") if t.get("class") == "kt-dst-text")
    assert own_text(marker) == "CET→CEST"
    assert "UTC+01:00 (CET) → UTC+02:00 (CEST) at 2026-03-29T01:00:00Z" in (
        marker.findtext(f"{SVG}title") or ""
    )
    ny = lanes["maintenance/ny-weekend"]
    assert not [
        ln for ln in ny.iter(f"{SVG}line") if ln.get("class") == "kt-dst"
    ]  # US switched on 8 March
    assert texts(ny, "kt-barlabel") == ["22:00 EDT"]
    for utc in ("databases/db-patch", "databases/every-minute"):
        assert not [ln for ln in lanes[utc].iter(f"{SVG}line") if ln.get("class") == "kt-dst"]

    # Autumn: both zones fall back, a week apart.
    svg = ET.fromstring(
        draw([str(w), "--from", "2026-10-20T00:00:00Z", "--until", "2026-11-10T00:00:00Z"], capsys)
    )
    marks = {
        g.get("data-window"): [
            ln.get("data-at") for ln in g.iter(f"{SVG}line") if ln.get("class") == "kt-dst"
        ]
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "kt-lane"
    }
    assert marks["maintenance/berlin-nightly"] == ["2026-10-25T01:00:00Z"]
    assert marks["maintenance/ny-weekend"] == ["2026-11-01T06:00:00Z"]


def test_node_counts_respect_the_scope(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, n = files
    span = ["--from", "2026-03-26T00:00:00Z", "--until", "2026-04-02T00:00:00Z"]
    svg = ET.fromstring(draw([str(w), "--nodes", str(n), *span], capsys))
    counts = {
        g.get("data-window"): g.get("data-nodes")
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "kt-lane"
    }
    assert counts == {
        "databases/db-patch": "2",
        "databases/every-minute": "11",
        "maintenance/berlin-nightly": "6",
        "maintenance/ny-weekend": "3",
    }
    assert "Europe/Berlin · 4h · 6 nodes" in texts(svg, "kt-meta")
    svg = ET.fromstring(
        draw([str(w), "--nodes", str(n), "--node-selector", "team=a", *span], capsys)
    )
    counts = {
        g.get("data-window"): g.get("data-nodes")
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "kt-lane"
    }
    assert counts == {
        "databases/db-patch": "0",
        "databases/every-minute": "7",
        "maintenance/berlin-nightly": "4",
        "maintenance/ny-weekend": "3",
    }
    assert any("7 nodes in scope (team=a)" in s for s in texts(svg, "kt-sub"))
    svg = ET.fromstring(draw([str(w), *span], capsys))  # no node list: no counts
    assert all(g.get("data-nodes") is None for g in svg.iter(f"{SVG}g"))


def test_now_is_marked_when_in_range(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, _n = files
    span = ["--from", "2026-03-26T00:00:00Z", "--until", "2026-04-02T00:00:00Z"]
    svg = ET.fromstring(draw([str(w), *span, "--at", "2026-03-29T02:30:00Z"], capsys))
    (line,) = [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "kt-now"]
    assert line.get("data-at") == "2026-03-29T02:30:00Z"
    px, pw = float(svg.get("data-plot-x", "")), float(svg.get("data-plot-width", ""))
    assert float(line.get("x1", "")) == pytest.approx(
        px + pw * (3 * 86400 + 9000) / (7 * 86400), abs=0.006
    )
    assert "now 02:30 UTC" in texts(svg, "kt-now-text")
    now_bars = [b.get("data-window") for b in bars(svg) if "kt-bar-now" in (b.get("class") or "")]
    assert sorted(now_bars) == [
        "databases/every-minute",
        "maintenance/berlin-nightly",
        "maintenance/ny-weekend",
    ]

    svg = ET.fromstring(draw([str(w), *span, "--at", "2026-05-01T00:00:00Z"], capsys))
    assert not [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "kt-now"]
    assert any("now (2026-05-01T00:00:00Z) is outside the range" in s for s in texts(svg, "kt-sub"))


def test_invalid_windows_are_listed_with_their_reason(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, _n = files
    span = ["--from", "2026-03-26T00:00:00Z", "--until", "2026-04-02T00:00:00Z"]
    svg = ET.fromstring(draw([str(w), *span], capsys))
    assert "Invalid windows, ignored by kumaco (1)" in texts(svg, "kt-key")
    reasons = [
        t.findtext(f"{SVG}title") for t in svg.iter(f"{SVG}text") if t.get("class") == "kt-sub"
    ]
    assert (
        "startTime: day of week: value 'fry' is not a number in 'mon-fry'; "
        'duration: unknown unit "d" in duration "1d"; Go durations have no days or weeks: '
        "write 24h"
    ) in reasons
    page = draw([str(w), *span], capsys, output="html")
    assert (
        '<strong class="bad">maintenance/typo</strong> — startTime: day of week: value &#x27;fry&#x27;'
        in page
    )


def test_html_is_one_self_contained_file(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w, n = files
    span = [
        "--from",
        "2026-03-26T00:00:00Z",
        "--until",
        "2026-04-02T00:00:00Z",
        "--at",
        "2026-03-29T02:30:00Z",
    ]
    page = draw([str(w), "--nodes", str(n), *span], capsys, output="html")
    assert page.startswith("<!doctype html>")
    for banned in ("<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import"):
        assert banned not in page.lower(), banned
    assert re.findall(r"https?://[^\s\"'<>]+", page) == [
        "http://www.w3.org/2000/svg"
    ]  # the SVG namespace only
    assert (
        "prefers-color-scheme:dark" in page and 'name="color-scheme" content="light dark"' in page
    )
    assert "max-width:1440px" in page and 'name="viewport"' in page
    embedded = ET.fromstring(re.search(r"<svg .*?</svg>", page, re.S).group(0))  # type: ignore[union-attr]
    standalone = ET.fromstring(draw([str(w), "--nodes", str(n), *span], capsys))
    key = [
        (b.get("data-window"), b.get("data-start"), b.get("x"), b.get("width"))
        for b in bars(standalone)
    ]
    assert [
        (b.get("data-window"), b.get("data-start"), b.get("x"), b.get("width"))
        for b in bars(embedded)
    ] == key
    assert "<h2>Windows</h2>" in page and "Openings in range" in page


def test_output_is_deterministic_and_well_formed_whatever_the_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "w.json"
    f.write_text(
        json.dumps(
            {
                "kind": "List",
                "items": [
                    {
                        "kind": "ConfigMap",
                        "metadata": {
                            "namespace": "a<&\"'>",
                            "name": "x" * 300,
                            "labels": {"kured.dev/maintenance-window": ""},
                        },
                        "data": {"startTime": "0 * * * *", "duration": "30m", "nodeSelector": ""},
                    },
                    {
                        "kind": "ConfigMap",
                        "metadata": {
                            "namespace": "b",
                            "name": "ctl\x07",
                            "labels": {"kured.dev/maintenance-window": ""},
                        },
                        "data": {"startTime": "\x01\x02", "duration": "1h", "nodeSelector": ""},
                    },
                ],
            }
        )
    )
    args = [
        str(f),
        "--from",
        "2026-01-01T00:00:00Z",
        "--until",
        "2026-01-02T00:00:00Z",
        "--at",
        "2026-01-01T12:00:00Z",
    ]
    first = draw(args, capsys)
    assert draw(args, capsys) == first
    svg = ET.fromstring(first)
    assert len(bars(svg)) == 24
    assert bars(svg)[0].get("data-window") == "a<&\"'>/" + "x" * 300
    ET.fromstring(re.search(r"<svg .*?</svg>", draw(args, capsys, output="html"), re.S).group(0))  # type: ignore[union-attr]


def test_no_valid_window_and_truncation(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        "kind: ConfigMap\nmetadata: {name: only, labels: {kured.dev/maintenance-window: ''}}\n"
        "data: {startTime: nope}\n"
    )
    svg = ET.fromstring(
        draw([str(f), "--from", "2026-01-01T00:00:00Z", "--until", "2026-01-02T00:00:00Z"], capsys)
    )
    assert not bars(svg)
    assert "no valid maintenance window" in texts(svg, "kt-empty")
    w, _n = files
    rc, out, err = run_cli(
        [
            "timeline",
            str(w),
            "--from",
            "2026-03-01T00:00:00Z",
            "--until",
            "2026-04-01T00:00:00Z",
            "--output",
            "svg",
            "--limit",
            "10",
        ],
        capsys,
    )
    assert rc == 0
    assert err == "warning: picture truncated to 10 occurrences\n"
    assert len(bars(ET.fromstring(out))) == 10
    assert "occurrences truncated" in out


def test_writes_the_file_and_reports_usage_errors(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w, _n = files
    target = tmp_path / "out" / "t.html"
    target.parent.mkdir()
    span = ["--from", "2026-03-26T00:00:00Z", "--until", "2026-04-02T00:00:00Z"]
    rc, out, _ = run_cli(
        ["timeline", str(w), *span, "--output", "html", "--output-file", str(target)], capsys
    )
    assert rc == 0 and out == "" and target.read_text().startswith("<!doctype html>")
    rc, _, err = run_cli(
        [
            "timeline",
            str(w),
            "--from",
            "2026-04-02T00:00:00Z",
            "--until",
            "2026-03-26T00:00:00Z",
            "--output",
            "svg",
        ],
        capsys,
    )
    assert (rc, err) == (2, "kumaco timeline: --until must be after --from\n")
    rc, _, err = run_cli(
        ["timeline", str(tmp_path / "missing.yaml"), *span, "--output", "svg"], capsys
    )
    assert rc == 2 and err.startswith("kumaco timeline: ")
    rc, _, err = run_cli(
        ["timeline", str(w), *span, "--output", "svg", "--node-selector", "a in ("], capsys
    )
    assert rc == 2 and err.startswith("kumaco timeline: --node-selector: ")
    with pytest.raises(SystemExit) as exc:  # -o is the format everywhere, not the file
        cli.main(["timeline", str(w), *span, "-o", str(target)])
    assert exc.value.code == 2
    rc, out, _ = run_cli(["timeline", str(w), *span], capsys)  # svg by default
    assert rc == 0 and out.startswith("<svg")
    # `python -m kumaco` (the module entry point) gives the same clean usage errors.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kumaco",
            "timeline",
            str(w),
            "--from",
            "x",
            "--until",
            "y",
            "--output",
            "svg",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "kumaco timeline: --from: 'x' is not an RFC 3339 time such as 2026-12-01T03:00:00Z\n",
    )


def test_offline_timeline_never_loads_kubernetes_nor_reads_a_clock_in_the_renderer(
    files: tuple[Path, Path],
) -> None:
    w, _n = files
    code = (
        "import sys, io\n"
        "from kumaco.cmd.cli import main\n"
        f"rc = main(['timeline', {str(w)!r}, '--from', '2026-03-26T00:00:00Z', '--until', '2026-03-27T00:00:00Z',"
        " '--output', 'svg', '--output-file', '/dev/null'])\n"
        "assert rc == 0, rc\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3', 'kumaco.kube.client')], 'kubernetes loaded'\n"
        "assert 'kumaco.kube.client' not in sys.modules and 'kumaco.views.status' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    sources = sorted((ROOT / "kumaco" / "views" / "timeline").glob("*.py"))
    assert len(sources) > 1  # the package's modules, every one of them checked
    for source in sources:
        tree = ast.parse(source.read_text())
        clock = {"now", "utcnow", "today", "time", "time_ns", "monotonic", "perf_counter"}
        calls = [
            n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
        ]
        assert not clock & set(calls), source
        imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imports |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        banned = ("kubernetes", "time", "os", "pathlib")
        assert not {m for m in imports if m.split(".")[0] in banned}, source


def test_build_rejects_an_empty_range() -> None:
    w = parse_window("ns", "w", {"startTime": "0 3 * * *", "duration": "1h", "nodeSelector": ""})
    with pytest.raises(ValueError, match="empty"):
        timeline.build([w], [], start=10, until=10, now=0)


@given(
    st.lists(
        st.tuples(
            st.floats(0, 1000), st.text("abcXYZ09:→ ", min_size=1, max_size=14), st.integers(0, 2)
        ),
        max_size=40,
    )
)
def test_label_placement_never_overlaps(raw: list[tuple[float, str, int]]) -> None:
    labels = [
        timeline_svg.Label((x,), text, prio, "kt-barlabel", slide=30.0) for x, text, prio in raw
    ]
    placed = timeline_svg.place(labels, 100.0, 900.0, 10.5)
    spans = sorted((x, x + timeline_svg.text_width(lb.text, 10.5)) for x, lb in placed)
    for (_a0, a1), (b0, _b1) in itertools.pairwise(spans):
        assert a1 <= b0
    assert all(a >= 100.0 and b <= 900.0 for a, b in spans)
    if labels and all(timeline_svg.text_width(lb.text, 10.5) <= 800 for lb in labels):
        first = min(labels, key=lambda lb: (lb.priority, lb.xs[0]))
        assert any(lb is first for _x, lb in placed)  # the most important label always gets a place


def test_the_html_table_says_never_closes_where_the_picture_does(tmp_path: Path) -> None:
    """A window whose occurrences chain without a gap never closes, in the picture and the table.

    The table's "At now" column said "closes after <the next hour>" beside a bar marked
    "(never closes)"; ``kubectl kumaco status`` words it through the same function.
    """
    w = tmp_path / "w.yaml"
    w.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: always\n  namespace: maint\n"
        "  labels: {kured.dev/maintenance-window: 'true'}\n"
        "data: {startTime: '*/5 * * * *', duration: 10m, nodeSelector: ''}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nightly\n  namespace: maint\n"
        "  labels: {kured.dev/maintenance-window: 'true'}\n"
        "data: {startTime: '0 2 * * *', duration: 3h, nodeSelector: ''}\n"
    )
    span = ["--from", "2027-01-01T00:00:00Z", "--until", "2027-01-02T00:00:00Z"]
    done = kumaco("timeline", str(w), *span, "--at", "2027-01-01T03:00:00Z", "-o", "html")
    assert done.returncode == 0, done.stderr
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(
            r"<strong>maint/(\w+)</strong>.*?<td>(<span class=\"open\">.*?)</td>", done.stdout
        )
    }
    assert "never closes" in done.stdout  # the picture's bar
    assert "closes after" not in rows["always"] and "never closes" in rows["always"], rows
    assert "closes <span" in rows["nightly"], rows
