"""``kubectl kumaco timeline`` from the real control plane, rendered by a real headless Chromium.

Windows and nodes are created in a unique namespace (labels unique per run)
and removed afterwards. The picture is asked for a fixed week around the
Berlin DST switch (2026-03-29), so it is the same whatever day the test runs:

* its bars are exactly ``kubectl kumaco windows -o json`` for the same range
  (and that equals the offline ``kumaco windows`` on the same objects, see
  ``test_status.py``), with node counts from the cluster's node LIST;
* Chromium (Debian's ``chromium``; the test installs nothing and fails when
  it is missing) screenshots the HTML at 1366x900, light and dark: in the PNG
  -- decoded here with zlib, no imaging library -- each lane shows as many
  separate runs of the bar colour as it has bars, the total bar area matches
  the SVG geometry, and the "now" line is drawn. The screenshots are kept
  under ``artifacts/`` (not in git).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.env.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
VENV_BIN = Path(sys.executable).parent
SVG = "{http://www.w3.org/2000/svg}"
RUN_KEY = "kumaco-timeline-e2e/run"
FROM, UNTIL, AT = "2026-03-26T00:00:00Z", "2026-04-02T00:00:00Z", "2026-03-29T02:30:00Z"
LIGHT_BAR, DARK_BAR, LIGHT_NOW = (0x2F, 0x6F, 0xD6), (0x44, 0x93, 0xF8), (0xCF, 0x22, 0x2E)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1366,900",
]


def _call(
    cp: ControlPlane, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)
) -> Any:
    conn: http.client.HTTPSConnection = cp.connection()
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=headers
        )
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    assert resp.status in ok, f"{method} {path}: {resp.status} {raw[:300]!r}"
    return json.loads(raw) if raw else None


@dataclass
class Cluster:
    ns: str
    selector: str
    kubeconfig: Path


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane, kubeconfig_path: Path) -> Iterator[Cluster]:
    run = uuid.uuid4().hex[:6]
    ns = f"ktl-{run}"
    _call(control_plane, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    label = {"kured.dev/maintenance-window": ""}
    windows = {
        "berlin-nightly": {
            "startTime": "0 3 * * *",
            "timeZone": "Europe/Berlin",
            "duration": "4h",
            "nodeSelector": "pool=workers,zone=eu-1",
        },
        "ny-weekend": {
            "startTime": "CRON_TZ=America/New_York 0 22 * * sat",
            "duration": "10h",
            "nodeSelector": "pool=workers,zone=us-1",
        },
        "db-patch": {"startTime": "30 12 * * 1-5", "duration": "90m", "nodeSelector": "pool=db"},
        "typo": {"startTime": "0 3 * * mon-fry", "duration": "1d", "nodeSelector": "pool=workers"},
    }
    for name, data in windows.items():
        _call(
            control_plane,
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            {"metadata": {"name": name, "labels": label}, "data": data},
        )
    nodes = [(f"ktl-{run}-eu-{i}", {"pool": "workers", "zone": "eu-1"}) for i in range(6)]
    nodes += [(f"ktl-{run}-us-{i}", {"pool": "workers", "zone": "us-1"}) for i in range(3)]
    nodes += [(f"ktl-{run}-db-{i}", {"pool": "db"}) for i in range(2)]
    for name, labels in nodes:
        _call(
            control_plane,
            "POST",
            "/api/v1/nodes",
            {"metadata": {"name": name, "labels": {**labels, RUN_KEY: run}}},
        )
    try:
        yield Cluster(ns, f"{RUN_KEY}={run}", kubeconfig_path)
    finally:
        for name, _labels in nodes:
            _call(control_plane, "DELETE", f"/api/v1/nodes/{name}", ok=(200, 404))
        _call(control_plane, "DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202, 404))


def kubectl_kumaco(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    if shutil.which("kubectl", path=env["PATH"]) is None:
        pytest.fail("kubectl is not installed: this test runs the plugin as `kubectl kumaco`")
    proc = subprocess.run(
        ["kubectl", "kumaco", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # one read of the cluster and a page (not timed): 120 s catches a hang
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _timeline(c: Cluster, output: str) -> str:
    return kubectl_kumaco(
        "timeline",
        "--kubeconfig",
        str(c.kubeconfig),
        "-n",
        c.ns,
        "--node-selector",
        c.selector,
        "--from",
        FROM,
        "--until",
        UNTIL,
        "--at",
        AT,
        "--output",
        output,
    )


def _bars(svg: ET.Element) -> list[ET.Element]:
    return [r for r in svg.iter(f"{SVG}rect") if "kt-bar" in (r.get("class") or "").split()]


def test_cluster_timeline_bars_are_the_cluster_windows(cluster: Cluster) -> None:
    svg = ET.fromstring(_timeline(cluster, "svg"))
    rows = json.loads(
        kubectl_kumaco(
            "windows",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "-n",
            cluster.ns,
            "--from",
            FROM,
            "--until",
            UNTIL,
            "-o",
            "json",
        )
    )
    assert sorted(
        (b.get("data-window"), b.get("data-start"), b.get("data-end")) for b in _bars(svg)
    ) == sorted((f"{r['namespace']}/{r['name']}", r["start"], r["end"]) for r in rows)
    assert len(rows) == 13
    lanes = {
        g.get("data-window"): g.get("data-nodes")
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "kt-lane"
    }
    ns = cluster.ns
    assert lanes == {f"{ns}/db-patch": "2", f"{ns}/berlin-nightly": "6", f"{ns}/ny-weekend": "3"}
    assert (
        f"cluster (context kumaco-test): ConfigMaps kured.dev/maintenance-window in {ns}"
        in ET.tostring(svg, encoding="unicode")
    )


# ----------------------------------------------------------------------------- PNG, by hand


def decode_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and unfiltered rows of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, (
        f"unsupported PNG: depth {depth} color {color}"
    )
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def _is(rgb: tuple[int, int, int], row: bytes, x: int, bpp: int, tol: int = 10) -> bool:
    o = x * bpp
    return abs(row[o] - rgb[0]) + abs(row[o + 1] - rgb[1]) + abs(row[o + 2] - rgb[2]) <= tol


def _runs(
    row: bytes, width: int, bpp: int, rgb: tuple[int, int, int], merge: int = 6
) -> list[tuple[int, int]]:
    """Horizontal runs of ``rgb`` in a row; gaps up to ``merge`` px (the now line) are bridged."""
    runs: list[tuple[int, int]] = []
    for x in range(width):
        if _is(rgb, row, x, bpp):
            if runs and x - runs[-1][1] <= merge:
                runs[-1] = (runs[-1][0], x)
            else:
                runs.append((x, x))
    return runs


def _bands(
    rows: list[bytes], width: int, bpp: int, rgb: tuple[int, int, int]
) -> list[tuple[int, int]]:
    """Vertical bands of rows holding ``rgb`` pixels (one per lane, plus the legend swatch)."""
    bands: list[tuple[int, int]] = []
    for y, row in enumerate(rows):
        if any(_is(rgb, row, x, bpp) for x in range(0, width, 1)):
            if bands and bands[-1][1] == y - 1:
                bands[-1] = (bands[-1][0], y)
            else:
                bands.append((y, y))
    return bands


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "headless Chromium is needed for the screenshot test and is not installed: "
        "apt-get update && apt-get install -y chromium",
        pytrace=False,
    )


def screenshot(page: Path, png: Path, dark: bool) -> None:
    flags = [*CHROMIUM_FLAGS]
    if dark:
        flags += ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]
    with tempfile.TemporaryDirectory(prefix="kumaco-chromium-") as profile:
        proc = subprocess.run(
            [
                chromium(),
                *flags,
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,  # a headless Chromium start and one screenshot (not timed): for a hang
            check=False,
        )
    assert proc.returncode == 0 and png.exists(), (
        f"chromium failed ({proc.returncode}):\n{proc.stderr[-2000:]}"
    )


def test_html_screenshot_in_headless_chromium_shows_every_bar(cluster: Cluster) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = ARTIFACTS / "timeline.html"
    page.write_text(_timeline(cluster, "html"))
    svg = ET.fromstring(_timeline(cluster, "svg"))
    lanes = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "kt-lane"]
    expected_runs = [len(_bars(g)) for g in lanes]
    assert expected_runs == [7, 5, 1]  # berlin-nightly, db-patch, ny-weekend
    svg_area = sum(float(b.get("width", "")) * float(b.get("height", "")) for b in _bars(svg))

    for dark, bar in ((False, LIGHT_BAR), (True, DARK_BAR)):
        png = ARTIFACTS / f"timeline-{'dark' if dark else 'light'}-1366x900.png"
        png.unlink(missing_ok=True)
        screenshot(page, png, dark)
        width, height, bpp, rows = decode_png(png.read_bytes())
        assert (width, height) == (1366, 900)
        background = rows[5][:3]
        assert (sum(background) / 3 < 60) is dark, (
            f"background {tuple(background)} is not {'dark' if dark else 'light'}"
        )

        bands = _bands(rows, width, bpp, bar)
        assert len(bands) == len(lanes) + 1, (
            f"bands of the bar colour: {bands}"
        )  # + the legend swatch
        lane_bands, swatch = bands[:-1], bands[-1]
        scale = (lane_bands[0][1] - lane_bands[0][0] + 1) / 18  # bar height is 18 in the SVG
        assert 0.95 < scale < 1.1, scale
        for (top, bottom), want in zip(lane_bands, expected_runs, strict=True):
            middle = rows[(top + bottom) // 2]
            assert len(_runs(middle, width, bpp, bar)) == want, (
                f"lane at y={top}: {_runs(middle, width, bpp, bar)}"
            )
        assert swatch[0] > lane_bands[-1][1] + 20
        painted = sum(
            1
            for y in range(lane_bands[0][0], lane_bands[-1][1] + 1)
            for x in range(width)
            if _is(bar, rows[y], x, bpp)
        )
        assert 0.75 * svg_area * scale**2 < painted < 1.1 * svg_area * scale**2, (
            painted,
            svg_area,
            scale,
        )
        if not dark:
            now_line = [
                y
                for y in range(lane_bands[0][0], lane_bands[-1][1])
                if any(_is(LIGHT_NOW, rows[y], x, bpp) for x in range(width))
            ]
            assert len(now_line) > 100  # the red "now" line crosses every lane
