"""The maintenance schedule as a picture: a timeline in plain SVG or one self-contained HTML file.

Contract
--------
Pure rendering. :func:`build` takes window entries (valid and invalid), the
open intervals ``kumaco windows`` computes for them (:func:`kumaco.core.windows.occurrences`,
passed in by the caller) and optionally a node list, and returns a
:class:`Timeline`; :func:`render_svg` and :func:`render_html` turn it into
text. No I/O, no clock (``now`` is an argument), no ``kubernetes`` import, no
plotting library: equal inputs give byte-identical output.

What is drawn
~~~~~~~~~~~~~
* One lane per valid window, sorted by ``namespace/name``; one bar per open
  interval, exactly the intervals given (so exactly ``kumaco windows``' rows),
  clipped to the range. Each bar is ``<rect class="kt-bar">`` with
  ``data-window`` (``namespace/name``), ``data-start`` and ``data-end`` (the
  interval's RFC 3339 UTC bounds, unclipped). Its ``x`` is
  ``data-plot-x + (max(start, from) - from) * data-plot-width / (until - from)``
  and its width the clipped span on the same scale, at least
  :data:`MIN_BAR_WIDTH` -- the root ``<svg>`` carries ``data-from``,
  ``data-until``, ``data-now``, ``data-plot-x`` and ``data-plot-width``.
  Coordinates are written with two decimals.
* A UTC axis with calendar-aligned gridlines whose density follows the
  range: hours for a day, days for a month, months for a year; a second row
  names the dates (days, months or years). Weekends are shaded when days
  matter (ranges of 2 to 62 days).
* Above each bar its start time in the window's own zone (``03:00 CET``;
  ``UTC`` for UTC windows), placed without overlap; a label that differs
  from the previous bar's (a DST shift) is placed first. Where the zone's
  UTC offset changes inside the range a dashed marker names the change
  (``CET→CEST``; ``<line class="kt-dst" data-at=...>``): on the UTC axis
  the bars visibly move by the shift while their local labels stay put.
* The instant ``now`` as a vertical line (``class="kt-now"``, ``data-at``),
  when it lies in the range.
* Each lane is ``<g class="kt-lane" data-window=...>``; with a node list it
  says (and carries as ``data-nodes``) how many nodes in scope the window's
  selector matches.
* Invalid windows with their reason: rows under the chart in the
  standalone SVG, a list in the HTML.

The HTML is one file: inline CSS and inline SVG, no script, no external
resource; it follows ``prefers-color-scheme`` (light and dark) and is laid
out for 1280-1440 px wide screens (the SVG scales with the page).
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from kumaco import __version__
from kumaco.core.durations import HOUR, SECOND
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import Policy, plan
from kumaco.core.selectors import Selector
from kumaco.core.times import format_instant
from kumaco.core.windows import Interval, InvalidWindow, Occurrence, Window
from kumaco.core.zones import load_zone
from kumaco.views.wording import NEVER_OPENS, next_change

DAY = 24 * HOUR
WIDTH = 1280
PLOT_X = 272
PLOT_WIDTH = WIDTH - PLOT_X - 28
LANE_HEIGHT = 48
BAR_HEIGHT = 18
MIN_BAR_WIDTH = 2.0
#: Glyph advances in em used to fit text: DejaVu Sans' (the widest common default sans-serif
#: face, so narrower faces fit too); bold text is taken 10% wider.
_NARROW, _WIDE = frozenset(" .,:;'!|()[]ijlft-/"), frozenset("MWmw@%→—…")
FONT_FAMILY = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, '
    '"Liberation Sans", sans-serif'
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class Lane:
    """A valid window, its open intervals in the range and, if known, its node count."""

    window: Window
    bars: tuple[Interval, ...]
    nodes: int | None = None

    @property
    def key(self) -> str:
        return self.window.key


@dataclass(frozen=True)
class Turn:
    """A node's maintenance in a forecast: admitted at ``start``, done at ``end``.

    ``start`` None: never admitted in the range; ``end`` None: not done by its end.
    """

    node: str
    start: int | None
    end: int | None
    windows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Timeline:
    """Everything a picture shows; instants are ns since the epoch."""

    start: int
    until: int
    now: int
    lanes: tuple[Lane, ...]
    invalid: tuple[InvalidWindow, ...] = ()
    truncated: bool = False
    source: str = ""
    nodes_in_scope: int | None = None
    node_selector: str = ""
    #: A forecast's node lanes, drawn below the windows (``kumaco forecast``).
    turns: tuple[Turn, ...] = ()


# ----------------------------------------------------------------------------- building


def build(
    entries: Iterable[Window | InvalidWindow],
    occurrences: Iterable[Occurrence],
    *,
    start: int,
    until: int,
    now: int,
    nodes: NodeSet | None = None,
    scope: Selector | None = None,
    scope_text: str = "",
    truncated: bool = False,
    source: str = "",
    turns: tuple[Turn, ...] = (),
) -> Timeline:
    """Assemble a :class:`Timeline`; ``occurrences`` are the bars, grouped by window key.

    Keys are unique in a cluster; in file input a repeated ``namespace/name``
    keeps its first window (its lane then shows the bars of both).
    """
    if until <= start:
        raise ValueError("the range must not be empty")
    windows: dict[str, Window] = {}
    invalid: dict[str, InvalidWindow] = {}
    for e in entries:
        if isinstance(e, Window):
            windows.setdefault(e.key, e)
        else:
            invalid.setdefault(e.key, e)
    bars: dict[str, set[Interval]] = {}
    for o in occurrences:
        bars.setdefault(o.key, set()).add(Interval(o.start, o.end, o.open_ended))
    counts: dict[str, int] = {}
    in_scope: int | None = None
    if nodes is not None:
        # The planner's count of the nodes in scope each window selects (the controller's path).
        policy = Policy(scope=scope) if scope is not None else Policy()
        counts = dict(plan(windows.values(), nodes, now, policy).matching)
        in_scope = len(scope.select(nodes.index)) if scope is not None else len(nodes)
    lanes = tuple(
        Lane(
            w,
            tuple(sorted(bars.get(key, ()), key=lambda iv: (iv.start, iv.end))),
            counts.get(key) if nodes is not None else None,
        )
        for key, w in sorted(windows.items())
    )
    return Timeline(
        start=start,
        until=until,
        now=now,
        lanes=lanes,
        invalid=tuple(v for _k, v in sorted(invalid.items())),
        truncated=truncated,
        source=source,
        nodes_in_scope=in_scope,
        node_selector=scope_text if scope is not None else "",
        turns=turns,
    )


# ----------------------------------------------------------------------------- time helpers


def _utc(t: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=t // 1000)


def _ns(d: dt.datetime) -> int:
    return ((d - _EPOCH) // dt.timedelta(microseconds=1)) * 1000


def local_time(t: int, zone_name: str) -> dt.datetime:
    """Instant ``t`` (ns) as an aware datetime in zone ``zone_name`` (from ``tzdata``)."""
    return _utc(t).astimezone(load_zone(zone_name))


def format_local(t: int, zone_name: str, *, date: bool = True) -> str:
    """``2026-03-29 03:00 CEST`` (or ``03:00 CEST``): wall time and abbreviation in the zone."""
    d = local_time(t, zone_name)
    text = f"{d:%H:%M} {_abbreviation(d)}"
    return f"{d:%Y-%m-%d} {text}" if date else text


def _abbreviation(d: dt.datetime) -> str:
    name = d.tzname() or ""
    if name and name[0] in "+-":  # tzdata writes "+03" where a zone has no abbreviation
        return "UTC" + name
    return name or "UTC"


def _offset_text(offset: dt.timedelta) -> str:
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(minutes), 60)
    return f"UTC{sign}{h:02d}:{m:02d}"


@dataclass(frozen=True)
class _Shift:
    at: int
    before: dt.datetime
    after: dt.datetime


def _offset_shifts(zone: ZoneInfo, start: int, until: int) -> list[_Shift]:
    """Instants in ``[start, until]`` where ``zone``'s UTC offset (or abbreviation) changes."""

    def offset(t: int) -> tuple[dt.timedelta | None, str | None]:
        d = _utc(t).astimezone(zone)
        return d.utcoffset(), d.tzname()

    step = max(6 * HOUR, (until - start) // 20_000)
    shifts: list[_Shift] = []
    t, current = start, offset(start)
    while t < until:
        nxt = min(t + step, until)
        seen = offset(nxt)
        if seen != current:
            lo, hi = t // SECOND, -(-nxt // SECOND)
            while hi - lo > 1:  # first second at which the new offset holds
                mid = (lo + hi) // 2
                if offset(mid * SECOND) == current:
                    lo = mid
                else:
                    hi = mid
            at = hi * SECOND
            shifts.append(_Shift(at, _utc(at - SECOND).astimezone(zone), _utc(at).astimezone(zone)))
            current = seen
        t = nxt
    return shifts


# ----------------------------------------------------------------------------- axis


@dataclass(frozen=True)
class _Unit:
    kind: str  # hour, day, week, month, year
    step: int
    approx: int  # ns, to estimate spacing
    min_px: float


_TICK_UNITS = (
    _Unit("hour", 1, HOUR, 38),
    _Unit("hour", 2, 2 * HOUR, 38),
    _Unit("hour", 3, 3 * HOUR, 38),
    _Unit("hour", 6, 6 * HOUR, 38),
    _Unit("hour", 12, 12 * HOUR, 38),
    _Unit("day", 1, DAY, 22),
    _Unit("week", 1, 7 * DAY, 46),
    _Unit("month", 1, 30 * DAY, 34),
    _Unit("month", 3, 91 * DAY, 34),
    _Unit("year", 1, 365 * DAY, 36),
    _Unit("year", 5, 5 * 365 * DAY, 36),
    _Unit("year", 25, 25 * 365 * DAY, 36),
    _Unit("year", 100, 100 * 365 * DAY, 36),
)
_DATE_ROW = {"hour": "day", "day": "month", "week": "month", "month": "year"}


def _align(kind: str, step: int, d: dt.datetime) -> dt.datetime:
    """The last boundary of ``kind``/``step`` at or before ``d`` (UTC calendar)."""
    day = d.replace(hour=0, minute=0, second=0, microsecond=0)
    if kind == "hour":
        return day.replace(hour=d.hour - d.hour % step)
    if kind == "day":
        return day
    if kind == "week":
        return day - dt.timedelta(days=day.weekday())
    if kind == "month":
        return day.replace(month=d.month - (d.month - 1) % step, day=1)
    return day.replace(year=max(1, d.year - d.year % step), month=1, day=1)


def _advance(kind: str, step: int, d: dt.datetime) -> dt.datetime:
    if kind == "hour":
        return d + dt.timedelta(hours=step)
    if kind == "day":
        return d + dt.timedelta(days=step)
    if kind == "week":
        return d + dt.timedelta(days=7 * step)
    if kind == "month":
        months = d.year * 12 + d.month - 1 + step
        return d.replace(year=months // 12, month=months % 12 + 1)
    return d.replace(year=d.year + step)


def _boundaries(kind: str, step: int, start: int, until: int) -> Iterator[int]:
    """Boundaries of ``kind``/``step`` from the last one at or before ``start`` to ``until``."""
    try:
        d = _align(kind, step, _utc(start))
        for _ in range(5000):
            t = _ns(d)
            if t > until:
                return
            yield t
            d = _advance(kind, step, d)
    except (OverflowError, ValueError):  # past year 9999
        return


def _pick_unit(start: int, until: int) -> _Unit:
    px_per_ns = PLOT_WIDTH / (until - start)
    return next((u for u in _TICK_UNITS if u.approx * px_per_ns >= u.min_px), _TICK_UNITS[-1])


def _tick_label(kind: str, d: dt.datetime) -> str:
    if kind == "hour":
        return f"{d:%H:%M}"
    if kind == "day":
        return str(d.day)
    if kind == "week":
        return f"{d.day} {_MONTHS[d.month - 1][:3]}"
    if kind == "month":
        return _MONTHS[d.month - 1][:3]
    return str(d.year)


def _date_labels(kind: str, d: dt.datetime, year: bool) -> tuple[str, ...]:
    """Labels of a date-row segment, longest first; with the year only if ``year``."""
    y = f" {d.year}" if year else ""
    if kind == "day":
        wd, mon = _WEEKDAYS[d.weekday()], _MONTHS[d.month - 1][:3]
        return (f"{wd} {d.day} {mon}{y}", f"{wd} {d.day} {mon}", f"{d.day} {mon}", str(d.day))
    if kind == "month":
        month = _MONTHS[d.month - 1]
        return (f"{month}{y}", f"{month[:3]}{y}", month[:3])
    return (str(d.year),)


# ----------------------------------------------------------------------------- SVG


def _esc(text: str) -> str:
    """Escape for XML text and attributes; control characters become visible escapes."""
    cleaned = "".join(
        c
        if c in "\t\n" or (ord(c) >= 0x20 and not 0xD800 <= ord(c) <= 0xDFFF)
        else f"\\x{ord(c):02x}"
        for c in text
    )
    return html.escape(cleaned, quote=True)


def _n(v: float) -> str:
    return f"{v:.2f}"


def _text_width(text: str, font_px: float, bold: bool = False) -> float:
    em = 0.0
    for c in text:
        if c in _NARROW:
            em += 0.34
        elif c in _WIDE:
            em += 0.9
        elif c.isupper() or c.isdigit():
            em += 0.7
        else:
            em += 0.6
    return em * font_px * (1.1 if bold else 1.0)


def _fit(text: str, px: float, font_px: float, bold: bool = False) -> str:
    """``text`` shortened with an ellipsis to fit ``px``."""
    if _text_width(text, font_px, bold) <= px:
        return text
    keep = len(text)
    while keep > 0 and _text_width(text[:keep] + "…", font_px, bold) > px:
        keep -= 1
    return text[:keep] + "…"


_STYLE = """
.kt{font-family:@FONT@;font-variant-numeric:tabular-nums}
.kt text{fill:#1f2328}
.kt .kt-bg{fill:#ffffff}
.kt .kt-alt{fill:#f6f8fa}
.kt .kt-weekend{fill:#8c959f;fill-opacity:.09}
.kt .kt-grid{stroke:#d8dee4;stroke-width:1}
.kt .kt-grid-major{stroke:#8c959f;stroke-width:1}
.kt .kt-rule{stroke:#d0d7de;stroke-width:1}
.kt .kt-bar,.kt .kt-swatch{fill:#2f6fd6}
.kt .kt-freeze,.kt .kt-swatch-freeze{fill:#9a6700}
.kt .kt-turn-bar{fill:#1a7f37}
.kt .kt-bar-now{stroke:#0b3d91;stroke-width:2}
.kt .kt-muted{fill:#59636e}
.kt .kt-title{font-size:18px;font-weight:600}
.kt .kt-sub{font-size:12px}
.kt .kt-key{font-size:13px;font-weight:600}
.kt .kt-meta{font-size:11px}
.kt .kt-tick{font-size:11px}
.kt .kt-date{font-size:12px;font-weight:600}
.kt .kt-barlabel{font-size:10.5px}
.kt .kt-empty{font-size:11px;font-style:italic}
.kt .kt-now{stroke:#cf222e;stroke-width:2}
.kt .kt-now-pill{fill:#cf222e}
.kt .kt-now-text{fill:#ffffff;font-size:11px;font-weight:600}
.kt .kt-dst{stroke:#bc4c00;stroke-width:1.5;stroke-dasharray:3 3}
.kt .kt-dst-text{fill:#bc4c00;font-size:10.5px;font-weight:600}
.kt .kt-bad{fill:#cf222e}
.kt .kt-legend{font-size:11px}
@media (prefers-color-scheme:dark){
.kt text{fill:#e6edf3}
.kt .kt-bg{fill:#0d1117}
.kt .kt-alt{fill:#151b23}
.kt .kt-weekend{fill:#9198a1;fill-opacity:.08}
.kt .kt-grid{stroke:#262c36}
.kt .kt-grid-major{stroke:#656c76}
.kt .kt-rule{stroke:#3d444d}
.kt .kt-bar,.kt .kt-swatch{fill:#4493f8}
.kt .kt-freeze,.kt .kt-swatch-freeze{fill:#d29922}
.kt .kt-turn-bar{fill:#3fb950}
.kt .kt-bar-now{stroke:#cae8ff}
.kt .kt-muted{fill:#9198a1}
.kt .kt-now{stroke:#ff7b72}
.kt .kt-now-pill{fill:#da3633}
.kt .kt-dst{stroke:#f0883e}
.kt .kt-dst-text{fill:#f0883e}
.kt .kt-bad{fill:#ff7b72}
}
""".replace("@FONT@", FONT_FAMILY)


class _Svg:
    """A list of SVG fragments with small helpers."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def text(
        self,
        x: float,
        y: float,
        content: str,
        cls: str,
        *,
        anchor: str = "start",
        title: str | None = None,
    ) -> None:
        a = "" if anchor == "start" else f' text-anchor="{anchor}"'
        t = f"<title>{_esc(title)}</title>" if title else ""
        self.add(f'<text x="{_n(x)}" y="{_n(y)}" class="{cls}"{a}>{t}{_esc(content)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str, extra: str = "") -> None:
        self.add(
            f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" class="{cls}"{extra}/>'
        )

    def rect(self, x: float, y: float, w: float, h: float, cls: str, extra: str = "") -> None:
        self.add(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" class="{cls}"{extra}/>'
        )


@dataclass(frozen=True)
class _Label:
    """A label wanting one of ``xs`` (left edges, preferred first), or up to ``slide`` px right."""

    xs: tuple[float, ...]
    text: str
    priority: int
    cls: str
    title: str = ""
    slide: float = 0.0


#: Clearance around a label; repeated labels (priority 2) keep more room, so they thin out.
_GAPS = {0: 6.0, 1: 6.0, 2: 28.0}


def _place(
    labels: Sequence[_Label], left: float, right: float, font_px: float
) -> list[tuple[float, _Label]]:
    """Place labels without overlaps: by priority, then position; the first free candidate wins.

    A candidate that does not fit in ``[left, right]`` is skipped, except the
    last one, which is pushed inside. Failing every candidate, a label may
    slide right (up to ``slide`` px) to just after a label in its way.
    """
    taken: list[tuple[float, float]] = []
    placed: list[tuple[float, _Label]] = []

    def free(x0: float, w: float, gap: float) -> bool:
        return not any(x0 - gap < b and a < x0 + w + gap for a, b in taken)

    for label in sorted(labels, key=lambda lb: (lb.priority, lb.xs[0])):
        w = _text_width(label.text, font_px, bold=label.cls == "kt-dst-text")
        gap = _GAPS.get(label.priority, 6.0)
        spot: float | None = None
        for i, want in enumerate(label.xs):
            x0 = want
            if not left <= x0 <= right - w:
                if i + 1 < len(label.xs):
                    continue
                x0 = min(max(want, left), right - w)
            if x0 >= left and free(x0, w, gap):
                spot = x0
                break
        if spot is None and label.slide > 0:
            base = max(label.xs[0], left)
            for _a, b in sorted(taken):
                x0 = b + gap
                if base < x0 <= min(base + label.slide, right - w) and free(x0, w, gap):
                    spot = x0
                    break
        if spot is not None:
            taken.append((spot, spot + w))
            placed.append((spot, label))
    return sorted(placed, key=lambda p: p[0])


class _Layout:
    def __init__(self, t: Timeline, standalone: bool) -> None:
        self.t = t
        self.standalone = standalone
        self.axis_top = 70.0 if standalone else 10.0
        self.lanes_top = self.axis_top + 44
        self.lane_count = max(1, len(t.lanes)) + len(t.turns)
        self.lanes_bottom = self.lanes_top + self.lane_count * LANE_HEIGHT
        self.footer = self.lanes_bottom + 6
        self.legend_y = self.footer + 40
        bottom = self.legend_y + 14
        if standalone and t.invalid:
            self.invalid_top = bottom + 20
            bottom = self.invalid_top + 12 + 20 * len(t.invalid)
        else:
            self.invalid_top = bottom
        self.height = bottom + 14
        self.scale = PLOT_WIDTH / (t.until - t.start)

    def x(self, instant: int) -> float:
        clamped = min(max(instant, self.t.start), self.t.until)
        return PLOT_X + (clamped - self.t.start) * self.scale


def render_svg(t: Timeline, *, standalone: bool = True) -> str:
    """The timeline as SVG text; ``standalone=False`` leaves title and invalid list to HTML."""
    lay = _Layout(t, standalone)
    s = _Svg()
    label = (
        f"Maintenance windows from {format_instant(t.start)} until {format_instant(t.until)}: "
        f"{len(t.lanes)} valid, {len(t.invalid)} invalid"
    )
    s.add(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kt" width="{WIDTH}" '
        f'height="{_n(lay.height)}" viewBox="0 0 {WIDTH} {_n(lay.height)}" role="img" '
        f'aria-label="{_esc(label)}" data-from="{format_instant(t.start)}" '
        f'data-until="{format_instant(t.until)}" data-now="{format_instant(t.now)}" '
        f'data-plot-x="{PLOT_X}" data-plot-width="{PLOT_WIDTH}">'
    )
    s.add(f"<title>{_esc(label)}</title>")
    s.add(f"<style>{_STYLE}</style>")
    s.rect(0, 0, WIDTH, lay.height, "kt-bg")
    if standalone:
        _title_block(s, t)
    for i in range(lay.lane_count):
        if i % 2:
            s.rect(0, lay.lanes_top + i * LANE_HEIGHT, WIDTH, LANE_HEIGHT, "kt-alt")
    _axis(s, lay)
    for i, lane in enumerate(t.lanes):
        nodes = "" if lane.nodes is None else f' data-nodes="{lane.nodes}"'
        s.add(f'<g class="kt-lane" data-window="{_esc(lane.key)}"{nodes}>')
        _lane(s, lay, lane, lay.lanes_top + i * LANE_HEIGHT)
        s.add("</g>")
    if not t.lanes:
        s.text(
            PLOT_X + 8,
            lay.lanes_top + LANE_HEIGHT / 2 + 4,
            "no valid maintenance window",
            "kt-empty kt-muted",
        )
    first = max(1, len(t.lanes))
    for i, turn in enumerate(t.turns):
        s.add(f'<g class="kt-lane kt-turn" data-node="{_esc(turn.node)}">')
        _turn_lane(s, lay, turn, lay.lanes_top + (first + i) * LANE_HEIGHT)
        s.add("</g>")
    s.line(0, lay.lanes_bottom + 0.5, WIDTH, lay.lanes_bottom + 0.5, "kt-rule")
    _now_marker(s, lay)
    _legend(s, lay)
    if standalone and t.invalid:
        _invalid_rows(s, lay)
    s.add("</svg>")
    return "\n".join(s.parts) + "\n"


def _summary(t: Timeline) -> str:
    parts = [f"{len(t.lanes)} valid window{'s' if len(t.lanes) != 1 else ''}"]
    if t.invalid:
        parts.append(f"{len(t.invalid)} invalid")
    if t.nodes_in_scope is not None:
        scope = f" ({t.node_selector})" if t.node_selector else ""
        parts.append(
            f"{t.nodes_in_scope} node{'s' if t.nodes_in_scope != 1 else ''} in scope{scope}"
        )
    if not t.start <= t.now <= t.until:
        parts.append(f"now ({format_instant(t.now)}) is outside the range")
    if t.truncated:
        parts.append("occurrences truncated")
    return " · ".join(parts)


def _title_block(s: _Svg, t: Timeline) -> None:
    s.text(16, 28, "Maintenance forecast" if t.turns else "Maintenance windows", "kt-title")
    s.text(
        16,
        48,
        f"{format_instant(t.start)} → {format_instant(t.until)} (UTC) · {_summary(t)}",
        "kt-sub kt-muted",
    )
    if t.source:
        s.text(16, 64, _fit(t.source, WIDTH - 32, 12), "kt-sub kt-muted")


def _axis(s: _Svg, lay: _Layout) -> None:
    t = lay.t
    unit = _pick_unit(t.start, t.until)
    date_kind = _DATE_ROW.get(unit.kind)
    date_y, tick_y = lay.axis_top + 16, lay.axis_top + 34
    grid_top, grid_bottom = lay.axis_top + 22, lay.lanes_bottom
    s.text(PLOT_X - 12, tick_y, "UTC", "kt-tick kt-muted", anchor="end")
    # Weekends, when days matter.
    if 2 * DAY <= t.until - t.start <= 62 * DAY:
        for b in _boundaries("day", 1, t.start, t.until):
            if _utc(b).weekday() >= 5:
                x0, x1 = lay.x(b), lay.x(b + DAY)
                if x1 > x0:
                    s.rect(
                        x0, lay.lanes_top, x1 - x0, lay.lanes_bottom - lay.lanes_top, "kt-weekend"
                    )
    major: set[int] = set()
    if date_kind is not None:
        bounds = list(_boundaries(date_kind, 1, t.start, t.until))
        need_year, last_year = True, 0
        for i, b in enumerate(bounds):
            seg_start = max(b, t.start)
            seg_end = bounds[i + 1] if i + 1 < len(bounds) else t.until
            if b >= t.start:
                major.add(b)
            d = _utc(b)
            need_year = need_year or d.year != last_year
            last_year = d.year
            room = lay.x(seg_end) - lay.x(seg_start) - 8
            text = next(
                (
                    c
                    for c in _date_labels(date_kind, d, need_year)
                    if _text_width(c, 12, bold=True) <= room
                ),
                "",
            )
            if text:
                s.text(lay.x(seg_start) + 4, date_y, text, "kt-date")
                need_year = need_year and str(d.year) not in text
    ticks = [b for b in _boundaries(unit.kind, unit.step, t.start, t.until) if b >= t.start]
    for b in ticks:
        if b not in major:
            s.line(lay.x(b), grid_top + 16, lay.x(b), grid_bottom, "kt-grid")
    for b in sorted(major):
        s.line(lay.x(b), grid_top - 2, lay.x(b), grid_bottom, "kt-grid-major")
    spacing = unit.approx * lay.scale
    for b in ticks:
        text = _tick_label(unit.kind, _utc(b))
        if b < t.until and (_text_width(text, 11) + 6 <= spacing):
            s.text(lay.x(b) + 3, tick_y, text, "kt-tick kt-muted")
    s.line(PLOT_X, lay.lanes_top - 0.5, PLOT_X + PLOT_WIDTH, lay.lanes_top - 0.5, "kt-rule")


def _lane(s: _Svg, lay: _Layout, lane: Lane, top: float) -> None:
    t, w = lay.t, lane.window
    zone = w.zone_name
    meta = [zone, w.duration_text]
    if w.freeze:
        meta.insert(0, "freeze")
    if lane.nodes is not None:
        meta.append(f"{lane.nodes} node{'s' if lane.nodes != 1 else ''}")
    details = (
        f"{w.key}\nstartTime: {w.start_time}\ntime zone: {zone}\nduration: {w.duration_text}\n"
        f"nodeSelector: {w.selector_text or '(every node in scope)'}"
        + ("\nfreeze: true" if w.freeze else "")
        + (f"\nmaxInProgress: {w.budget}" if w.budget is not None else "")
    )
    s.text(16, top + 20, _fit(w.key, PLOT_X - 32, 13, bold=True), "kt-key", title=details)
    s.text(16, top + 37, _fit(" · ".join(meta), PLOT_X - 32, 11), "kt-meta kt-muted")
    bar_y = top + 21
    labels: list[_Label] = []
    shifts = _offset_shifts(w.schedule.zone, t.start, t.until) if zone != "UTC" else []
    for sh in shifts:
        x = lay.x(sh.at)
        s.line(
            x, top + 4, x, top + LANE_HEIGHT - 4, "kt-dst", f' data-at="{format_instant(sh.at)}"'
        )
        text = f"{_abbreviation(sh.before)}→{_abbreviation(sh.after)}"
        before = _offset_text(sh.before.utcoffset() or dt.timedelta())
        after = _offset_text(sh.after.utcoffset() or dt.timedelta())
        title = (
            f"{zone}: {before} ({_abbreviation(sh.before)}) → {after} "
            f"({_abbreviation(sh.after)}) at {format_instant(sh.at)}"
        )
        if _abbreviation(sh.before) == _abbreviation(sh.after):
            text = f"{before}→{after}"
        w_text = _text_width(text, 10.5, bold=True)
        labels.append(_Label((x - 4 - w_text, x + 4), text, 0, "kt-dst-text", title))
    if not lane.bars:
        s.text(PLOT_X + 8, bar_y + 13, "not open in this range", "kt-empty kt-muted")
    previous = ""
    for n, iv in enumerate(lane.bars):
        x0, x1 = lay.x(iv.start), lay.x(t.until if iv.open_ended else iv.end)
        width = max(MIN_BAR_WIDTH, x1 - x0)
        open_now = iv.contains(t.now)
        local = f"{format_local(iv.start, zone)} → {format_local(iv.end, zone)}"
        title = (
            f"{w.key}\n{format_instant(iv.start)} → "
            + ("(never closes)" if iv.open_ended else f"{format_instant(iv.end)} (UTC)")
            + (f"\n{local} ({zone})" if zone != "UTC" and not iv.open_ended else "")
            + ("\nopen now" if open_now else "")
        )
        cls = "kt-bar kt-freeze" if w.freeze else "kt-bar"
        if open_now:
            cls += " kt-bar-now"
        s.add(
            f'<rect class="{cls}" x="{_n(x0)}" y="{_n(bar_y)}" width="{_n(width)}" '
            f'height="{BAR_HEIGHT}" rx="3" data-window="{_esc(w.key)}" '
            f'data-start="{format_instant(iv.start)}" '
            f'data-end="{"" if iv.open_ended else format_instant(iv.end)}">'
            f"<title>{_esc(title)}</title></rect>"
        )
        text = format_local(iv.start, zone, date=False)
        important = n == 0 or text != previous or open_now
        labels.append(
            _Label(
                (x0,),
                text,
                1 if important else 2,
                "kt-barlabel",
                slide=max(0.0, width - _text_width(text, 10.5)),
            )
        )
        previous = text
    for x, lb in _place(labels, PLOT_X, PLOT_X + PLOT_WIDTH, 10.5):
        cls = lb.cls if lb.cls == "kt-dst-text" else f"{lb.cls} kt-muted"
        s.text(x, top + 15, lb.text, cls, title=lb.title or None)


def _turn_lane(s: _Svg, lay: _Layout, turn: Turn, top: float) -> None:
    """One node's turn in a forecast: its bar from admission to the end of its maintenance."""
    t = lay.t
    if turn.start is None:
        state = "does not fit"
    elif turn.end is None:
        state = "not done by the end"
    else:
        state = f"{format_instant(turn.start)[11:16]} → {format_instant(turn.end)[11:16]} UTC"
    s.text(16, top + 20, _fit(turn.node, PLOT_X - 32, 13, bold=True), "kt-key")
    s.text(16, top + 37, _fit(state, PLOT_X - 32, 11), "kt-meta kt-muted")
    bar_y = top + 21
    if turn.start is None:
        s.text(PLOT_X + 8, bar_y + 13, "not admitted in this range", "kt-empty kt-muted")
        return
    end = turn.end if turn.end is not None else t.until
    x0, x1 = lay.x(turn.start), lay.x(end)
    title = (
        f"{turn.node}\nadmitted {format_instant(turn.start)}\n"
        + (f"done {format_instant(turn.end)}" if turn.end is not None else "not done by the end")
        + (f"\nwindows: {', '.join(turn.windows)}" if turn.windows else "")
    )
    end_attr = format_instant(turn.end) if turn.end is not None else ""
    s.add(
        f'<rect class="kt-bar kt-turn-bar" x="{_n(x0)}" y="{_n(bar_y)}" '
        f'width="{_n(max(MIN_BAR_WIDTH, x1 - x0))}" height="{BAR_HEIGHT}" rx="3" '
        f'data-node="{_esc(turn.node)}" data-start="{format_instant(turn.start)}" '
        f'data-end="{end_attr}"><title>{_esc(title)}</title></rect>'
    )


def _now_marker(s: _Svg, lay: _Layout) -> None:
    t = lay.t
    if not t.start <= t.now <= t.until:
        return
    x = lay.x(t.now)
    s.line(
        x,
        lay.axis_top + 20,
        x,
        lay.footer + 4,
        "kt-now",
        f' data-at="{format_instant(t.now)}"',
    )
    text = f"now {format_instant(t.now)[11:16]} UTC"
    w = _text_width(text, 11, bold=True) + 12
    px = min(max(x - w / 2, PLOT_X - 8), PLOT_X + PLOT_WIDTH + 20 - w)
    s.add(
        f'<rect x="{_n(px)}" y="{_n(lay.footer + 4)}" width="{_n(w)}" height="18" rx="9" '
        'class="kt-now-pill"/>'
    )
    s.text(px + w / 2, lay.footer + 17, text, "kt-now-text", anchor="middle")


def _legend(s: _Svg, lay: _Layout) -> None:
    y = lay.legend_y
    s.rect(16, y - 9, 18, 10, "kt-swatch")
    s.text(40, y, "open (merged occurrences)", "kt-legend kt-muted")
    s.rect(196, y - 9, 18, 10, "kt-swatch-freeze")
    s.text(220, y, "freeze", "kt-legend kt-muted")
    s.line(276, y - 9, 276, y + 2, "kt-dst kt-legend-mark")
    s.text(284, y, "UTC offset change (DST)", "kt-legend kt-muted")
    s.line(456, y - 9, 456, y + 2, "kt-now kt-legend-mark")
    s.text(464, y, "now", "kt-legend kt-muted")
    s.text(
        WIDTH - 16,
        y,
        "Axis and gridlines in UTC · labels above bars: start time in the window's own zone",
        "kt-legend kt-muted",
        anchor="end",
    )


def _invalid_rows(s: _Svg, lay: _Layout) -> None:
    t = lay.t
    y = lay.invalid_top
    s.line(0, y - 14, WIDTH, y - 14, "kt-rule")
    s.text(16, y + 4, f"Invalid windows, ignored by kumaco ({len(t.invalid)})", "kt-key kt-bad")
    for i, bad in enumerate(t.invalid):
        row = y + 24 + 20 * i
        s.text(16, row, _fit(bad.key, PLOT_X - 32, 12), "kt-sub kt-bad", title=bad.key)
        s.text(PLOT_X, row, _fit(bad.reason, PLOT_WIDTH, 12), "kt-sub", title=bad.reason)


# ----------------------------------------------------------------------------- HTML

_PAGE_STYLE = """
:root{color-scheme:light dark;--bg:#f6f8fa;--card:#ffffff;--fg:#1f2328;--muted:#59636e;
--line:#d0d7de;--head:#f6f8fa;--bad:#cf222e;--ok:#1a7f37}
@media (prefers-color-scheme:dark){:root{--bg:#010409;--card:#0d1117;--fg:#e6edf3;
--muted:#9198a1;--line:#3d444d;--head:#151b23;--bad:#ff7b72;--ok:#3fb950}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.5 @FONT@}
main{max-width:1440px;margin:0 auto;padding:20px 24px 32px}
h1{font-size:22px;margin:0 0 2px;font-weight:650}
h2{font-size:16px;margin:28px 0 10px;font-weight:650}
.meta{color:var(--muted);margin:0 0 16px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;
overflow:hidden}
figure svg{display:block;width:100%;height:auto}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);
font-size:13px;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);font-weight:600;white-space:nowrap}
td.num{text-align:right}
.nw{white-space:nowrap}
.scroll{overflow-x:auto}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
.muted{color:var(--muted)}
.bad{color:var(--bad)}
.open{color:var(--ok);font-weight:600}
ul.invalid{margin:0;padding:0;list-style:none;background:var(--card);border:1px solid var(--line);
border-radius:10px}
ul.invalid li{padding:8px 12px;border-bottom:1px solid var(--line)}
ul.invalid li:last-child{border-bottom:0}
footer{color:var(--muted);font-size:12px;margin-top:24px}
""".replace("@FONT@", FONT_FAMILY)


def _state_html(w: Window, now: int) -> str:
    state = w.state_at(now)
    zone = w.zone_name
    verb, t = next_change(state)
    badge = '<span class="open">open</span>' if state.open else "closed"
    if t is None:
        return f'{badge}; <span class="muted">{_esc(NEVER_OPENS)}</span>'
    local = (
        "" if zone == "UTC" else f'<br><span class="nw muted">{_esc(format_local(t, zone))}</span>'
    )
    return f'{badge}; {verb} <span class="nw">{_esc(format_instant(t))}</span>{local}'


def render_html(t: Timeline) -> str:
    """One self-contained HTML page: header, the inline SVG, window details and invalid ones."""
    svg = render_svg(t, standalone=False)
    out = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>kumaco timeline {_esc(format_instant(t.start))} → "
        f"{_esc(format_instant(t.until))}</title>",
        f"<style>{_PAGE_STYLE}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<header>",
        f"<h1>{'Maintenance forecast' if t.turns else 'Maintenance windows'}</h1>",
        f'<p class="meta">{_esc(format_instant(t.start))} → {_esc(format_instant(t.until))}'
        f" (UTC) · now {_esc(format_instant(t.now))} · {_esc(_summary(t))}"
        + (f"<br>{_esc(t.source)}" if t.source else "")
        + "</p>",
        "</header>",
        f"<figure>{svg}</figure>",
    ]
    if t.lanes:
        out += [
            "<h2>Windows</h2>",
            '<div class="scroll"><table>',
            "<thead><tr><th>Window</th><th>startTime</th><th>Zone</th><th>Duration</th>"
            "<th>nodeSelector</th>"
            + ("<th>Nodes</th>" if t.nodes_in_scope is not None else "")
            + "<th>Openings in range</th><th>At now</th></tr></thead>",
            "<tbody>",
        ]
        for lane in t.lanes:
            w = lane.window
            nodes = f'<td class="num">{lane.nodes}</td>' if t.nodes_in_scope is not None else ""
            selector = (
                ",<wbr>".join(
                    f'<code class="nw">{_esc(term)}</code>' for term in w.selector_text.split(",")
                )
                if w.selector_text
                else '<span class="muted">(every node in scope)</span>'
            )
            out.append(
                f'<tr><td class="nw"><strong>{_esc(w.key)}</strong>'
                + (' <span class="muted">(freeze)</span>' if w.freeze else "")
                + "</td>"
                f"<td><code>{_esc(w.start_time)}</code></td><td>{_esc(w.zone_name)}</td>"
                f"<td><code>{_esc(w.duration_text)}</code></td>"
                f"<td>{selector}</td>"
                f'{nodes}<td class="num">{len(lane.bars)}</td><td>{_state_html(w, t.now)}</td></tr>'
            )
        out += ["</tbody>", "</table></div>"]
    if t.invalid:
        out += [f'<h2 class="bad">Invalid windows, ignored by kumaco ({len(t.invalid)})</h2>']
        out.append('<ul class="invalid">')
        out += [
            f'<li><strong class="bad">{_esc(bad.key)}</strong> — {_esc(bad.reason)}</li>'
            for bad in t.invalid
        ]
        out.append("</ul>")
    out += [
        f"<footer>Drawn by kumaco {_esc(__version__)}. The axis is UTC; "
        "labels above the bars give each opening in the window's own time zone.</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(out) + "\n"
