"""The timeline drawn: :func:`render_svg` writes a timeline picture as SVG text.

Contract: :func:`render_svg` returns the SVG text of a timeline (its
``<svg>`` root carries ``data-from``, ``data-until``, ``data-now``,
``data-plot-x`` and ``data-plot-width``): the UTC axis with the windows'
local rows, one lane per window with a bar per open interval and its start
time in the window's zone above it (every bar, unless bars are closer than a
label's width), the DST events under the bars (offset changes, nights
skipped, start times repeated), a lane per forecast turn, the ``now`` marker
and a legend naming every mark drawn (a forecast's node bars too);
``standalone=False`` leaves the title and the invalid windows to the HTML
page. Inline CSS follows ``prefers-color-scheme``. :func:`summary` is the
one-line account the title and the page share. Pure: equal inputs give
byte-identical output.
"""

from __future__ import annotations

import bisect
import datetime as dt

from kumaco.core.time.instants import format_instant
from kumaco.core.windows.daylight_saving import DstNote
from kumaco.views.timeline.axis import Layout, draw_axis
from kumaco.views.timeline.model import Lane, Timeline, Turn
from kumaco.views.timeline.svg import (
    BAR_HEIGHT,
    FONT_FAMILY,
    LANE_HEIGHT,
    MIN_BAR_WIDTH,
    PLOT_WIDTH,
    PLOT_X,
    WIDTH,
    Label,
    Svg,
    esc,
    fit,
    num,
    place,
    text_width,
    wrap,
)
from kumaco.views.timeline.zones import abbreviation, format_local, offset_shifts, offset_text

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
.kt .kt-dst-text,.kt .kt-dst-note{fill:#bc4c00;font-size:10.5px;font-weight:600}
.kt .kt-skip{fill:none;stroke:#bc4c00;stroke-width:1.5;stroke-dasharray:3 2}
.kt .kt-swatch-turn{fill:#1a7f37}
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
.kt .kt-dst-text,.kt .kt-dst-note{fill:#f0883e}
.kt .kt-skip{stroke:#f0883e}
.kt .kt-swatch-turn{fill:#3fb950}
.kt .kt-bad{fill:#ff7b72}
}
""".replace("@FONT@", FONT_FAMILY)


def render_svg(t: Timeline, *, standalone: bool = True) -> str:
    """The timeline as SVG text; ``standalone=False`` leaves title and invalid list to HTML."""
    lay = Layout(t, standalone)
    s = Svg()
    label = (
        f"Maintenance windows from {format_instant(t.start)} until {format_instant(t.until)}: "
        f"{len(t.lanes)} valid, {len(t.invalid)} invalid"
    )
    s.add(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kt" width="{WIDTH}" '
        f'height="{num(lay.height)}" viewBox="0 0 {WIDTH} {num(lay.height)}" role="img" '
        f'aria-label="{esc(label)}" data-from="{format_instant(t.start)}" '
        f'data-until="{format_instant(t.until)}" data-now="{format_instant(t.now)}" '
        f'data-plot-x="{PLOT_X}" data-plot-width="{PLOT_WIDTH}">'
    )
    s.add(f"<title>{esc(label)}</title>")
    s.add(f"<style>{_STYLE}</style>")
    s.rect(0, 0, WIDTH, lay.height, "kt-bg")
    if standalone:
        _title_block(s, t)
    for i in range(lay.lane_count):
        if i % 2:
            s.rect(0, lay.lanes_top + i * LANE_HEIGHT, WIDTH, LANE_HEIGHT, "kt-alt")
    draw_axis(s, lay)
    for i, lane in enumerate(t.lanes):
        nodes = "" if lane.nodes is None else f' data-nodes="{lane.nodes}"'
        nodes += ' data-ended="true"' if lane.ended else ""
        s.add(f'<g class="kt-lane" data-window="{esc(lane.key)}"{nodes}>')
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
        s.add(f'<g class="kt-lane kt-turn" data-node="{esc(turn.node)}">')
        _turn_lane(s, lay, turn, lay.lanes_top + (first + i) * LANE_HEIGHT)
        s.add("</g>")
    s.line(0, lay.lanes_bottom + 0.5, WIDTH, lay.lanes_bottom + 0.5, "kt-rule")
    _now_marker(s, lay)
    _legend(s, lay)
    if standalone and t.invalid:
        _invalid_rows(s, lay)
    s.add("</svg>")
    return "\n".join(s.parts) + "\n"


def summary(t: Timeline) -> str:
    """The one-line account of ``t``: windows, invalid ones, nodes in scope, warnings."""
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


def _title_block(s: Svg, t: Timeline) -> None:
    s.text(16, 28, "Maintenance forecast" if t.turns else "Maintenance windows", "kt-title")
    s.text(
        16,
        48,
        f"{format_instant(t.start)} → {format_instant(t.until)} (UTC) · {summary(t)}",
        "kt-sub kt-muted",
    )
    if t.source:
        s.text(16, 64, fit(t.source, WIDTH - 32, 12), "kt-sub kt-muted")


def _name(s: Svg, top: float, name: str, state: str, title: str) -> None:
    """A lane's name (over two lines when long, the whole of it in the tooltip) and its state."""
    rows = wrap(name, PLOT_X - 32, 13, bold=True)
    s.lines(16, top + (20 if len(rows) == 1 else 18), rows, 15, "kt-key", title=title)
    s.text(
        16, top + (37 if len(rows) == 1 else 49), fit(state, PLOT_X - 32, 11), "kt-meta kt-muted"
    )


def _note_label(note: DstNote) -> str:
    """What a DST note's marker says: ``skipped (DST)``, ``opens twice (DST)``."""
    if note.kind in ("gap", "skipped"):
        return "skipped (DST)"
    n = len(note.instants)
    return "opens twice (DST)" if n == 2 else f"opens {n}× (DST)"


def _lane(s: Svg, lay: Layout, lane: Lane, top: float) -> None:
    """A window's lane: its name, its bars with their local start times above, DST events below.

    Every bar gets a start-time label; only bars closer together than a label's width
    lose theirs (repeated labels first). The DST events -- the offset change, a night
    skipped, a start time repeated -- have their own row under the bars, so they never
    take a bar's label.
    """
    t, w = lay.t, lane.window
    zone = w.zone_name
    meta = [zone, w.duration_text]
    if w.days:
        meta.insert(1, f"days {w.days_text}")
    if w.freeze:
        meta.insert(0, "freeze")
    if lane.ended:
        meta.insert(0, "ended")
    if lane.nodes is not None:
        meta.append(f"{lane.nodes} node{'s' if lane.nodes != 1 else ''}")
    details = (
        f"{w.key}\nstartTime: {w.start_time}\n"
        + (f"daysOfMonth: {w.days_text}\n" if w.days else "")
        + (f"notBefore: {w.not_before_text}\n" if w.not_before_text else "")
        + (f"notAfter: {w.not_after_text}\n" if w.not_after_text else "")
        + (f"ended: {w.why_ended()}\n" if lane.ended else "")
        + f"time zone: {zone}\nduration: {w.duration_text}\n"
        f"nodeSelector: {w.selector_text or '(every node in scope)'}"
        + ("\nfreeze: true" if w.freeze else "")
        + (f"\nmaxInProgress: {w.budget}" if w.budget is not None else "")
    )
    _name(s, top, w.key, " · ".join(meta), details)
    bar_y = top + 21
    events, switches = _events(s, lay, lane, top)
    if not lane.bars:
        s.text(PLOT_X + 8, bar_y + 13, "not open in this range", "kt-empty kt-muted")
    near = _next_to(lane, switches)
    labels: list[Label] = []
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
            f'<rect class="{cls}" x="{num(x0)}" y="{num(bar_y)}" width="{num(width)}" '
            f'height="{BAR_HEIGHT}" rx="3" data-window="{esc(w.key)}" '
            f'data-start="{format_instant(iv.start)}" '
            f'data-end="{"" if iv.open_ended else format_instant(iv.end)}">'
            f"<title>{esc(title)}</title></rect>"
        )
        text = format_local(iv.start, zone, date=False)
        # Where labels cannot all be drawn: a changed label (a DST shift) and the bar open
        # now first, then the first bar and those beside a DST event, then the others.
        changed = (n > 0 and text != previous) or open_now
        priority = 1 if changed else 2 if n == 0 or n in near else 3
        labels.append(
            Label(
                (x0,),
                text,
                priority,
                "kt-barlabel",
                slide=max(0.0, width - text_width(text, 10.5)),
                extra=f' data-start="{format_instant(iv.start)}"',
            )
        )
        previous = text
    for x, lb in place(labels, PLOT_X, WIDTH - 4, 10.5):  # the last may reach the margin
        s.text(x, top + 15, lb.text, f"{lb.cls} kt-muted", extra=lb.extra)
    for x, lb in place(events, PLOT_X, PLOT_X + PLOT_WIDTH, 10.5):
        s.text(x, top + 51, lb.text, lb.cls, title=lb.title or None, extra=lb.extra)


def _events(s: Svg, lay: Layout, lane: Lane, top: float) -> tuple[list[Label], list[int]]:
    """Draw a lane's DST marks; return their labels and the instants bars next to keep labels."""
    t, w = lay.t, lane.window
    zone, bar_y = w.zone_name, top + 21
    events: list[Label] = []
    #: Instants next to which a bar's label is kept first: offset changes, DST notes.
    switches: list[int] = []
    shifts = offset_shifts(w.schedule.zone, t.start, t.until) if zone != "UTC" else []
    for sh in shifts:
        x = lay.x(sh.at)
        switches.append(sh.at)
        s.line(
            x, top + 4, x, top + LANE_HEIGHT - 4, "kt-dst", f' data-at="{format_instant(sh.at)}"'
        )
        text = f"{abbreviation(sh.before)}→{abbreviation(sh.after)}"
        before = offset_text(sh.before.utcoffset() or dt.timedelta())
        after = offset_text(sh.after.utcoffset() or dt.timedelta())
        title = (
            f"{zone}: {before} ({abbreviation(sh.before)}) → {after} "
            f"({abbreviation(sh.after)}) at {format_instant(sh.at)}"
        )
        if abbreviation(sh.before) == abbreviation(sh.after):
            text = f"{before}→{after}"
        w_text = text_width(text, 10.5, bold=True)
        events.append(Label((x - 4 - w_text, x + 4), text, 0, "kt-dst-text", title))
    for note in lane.notes:
        inside = [i for i in note.instants if t.start <= i < t.until]
        if not inside:
            continue
        switches += inside
        text = _note_label(note)
        x = lay.x(inside[0])
        attrs = f' data-kind="{note.kind}" data-at="{format_instant(inside[0])}"'
        if note.kind in ("gap", "skipped"):
            for i in inside:
                xi = lay.x(i)
                s.add(
                    f'<rect class="kt-skip" x="{num(xi)}" y="{num(bar_y)}" '
                    f'width="{num(max(MIN_BAR_WIDTH, lay.x(i + w.duration) - xi))}" '
                    f'height="{BAR_HEIGHT}" rx="3" data-window="{esc(w.key)}"{attrs}>'
                    f"<title>{esc(note.text)}</title></rect>"
                )
        w_text = text_width(text, 10.5, bold=True)
        events.append(
            Label((x + 2, x - 2 - w_text), text, 1, "kt-dst-note", note.text, 60.0, attrs)
        )
    return events, switches


def _next_to(lane: Lane, instants: list[int]) -> set[int]:
    """The indexes of the bars next to each instant: the last before it and the first after."""
    near: set[int] = set()
    starts = [iv.start for iv in lane.bars]
    for at in instants:
        after = bisect.bisect_left(starts, at)
        near.update(i for i in (after - 1, after) if 0 <= i < len(starts))
    return near


def _turn_lane(s: Svg, lay: Layout, turn: Turn, top: float) -> None:
    """One node's turn in a forecast: its bar from admission to the end of its maintenance."""
    t = lay.t
    if turn.start is None:
        state = "does not fit"
    elif turn.end is None:
        state = "not done by the end"
    else:
        state = f"{format_instant(turn.start)[11:16]} → {format_instant(turn.end)[11:16]} UTC"
    _name(s, top, turn.node, state, turn.node)
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
        f'<rect class="kt-bar kt-turn-bar" x="{num(x0)}" y="{num(bar_y)}" '
        f'width="{num(max(MIN_BAR_WIDTH, x1 - x0))}" height="{BAR_HEIGHT}" rx="3" '
        f'data-node="{esc(turn.node)}" data-start="{format_instant(turn.start)}" '
        f'data-end="{end_attr}"><title>{esc(title)}</title></rect>'
    )


def _now_marker(s: Svg, lay: Layout) -> None:
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
    w = text_width(text, 11, bold=True) + 12
    px = min(max(x - w / 2, PLOT_X - 8), PLOT_X + PLOT_WIDTH + 20 - w)
    s.add(
        f'<rect x="{num(px)}" y="{num(lay.footer + 4)}" width="{num(w)}" height="18" rx="9" '
        'class="kt-now-pill"/>'
    )
    s.text(px + w / 2, lay.footer + 17, text, "kt-now-text", anchor="middle")


def _legend(s: Svg, lay: Layout) -> None:
    """What each mark means (the forecast's node bars too), and which zones the axis shows."""
    y = lay.legend_y
    items: list[tuple[str, str, str]] = [
        ("rect", "kt-swatch", "open (merged occurrences)"),
        ("rect", "kt-swatch-freeze", "freeze"),
    ]
    if lay.t.turns:
        items.append(("rect", "kt-swatch-turn", "a node's maintenance (admitted → done)"))
    items += [
        ("line", "kt-dst", "UTC offset change (DST)"),
        ("rect", "kt-skip", "no window: a night DST skips"),
        ("line", "kt-now", "now"),
    ]
    x = 16.0
    for mark, cls, text in items:
        if mark == "rect":
            s.rect(x, y - 9, 18, 10, f"{cls} kt-legend-mark")
        else:
            s.line(x + 9, y - 9, x + 9, y + 2, f"{cls} kt-legend-mark")
        s.text(x + 24, y, text, "kt-legend kt-muted")
        x += 24 + text_width(text, 11) + 20
    rows, zones = lay.local_rows, lay.zones
    axis = "Axis and gridlines in UTC"
    if rows:
        axis += f"; under it the wall time in {', '.join(rows)}"
    if len(zones) > len(rows):
        more = zones[len(rows) :]
        axis += f" (not drawn: {', '.join(more)})"
    note = f"{axis} · labels above bars: start time in the window's own zone"
    s.text(16, y + 18, fit(note, WIDTH - 32, 11), "kt-legend kt-muted", title=note)


def _invalid_rows(s: Svg, lay: Layout) -> None:
    t = lay.t
    y = lay.invalid_top
    s.line(0, y - 14, WIDTH, y - 14, "kt-rule")
    s.text(16, y + 4, f"Invalid windows, ignored by kumaco ({len(t.invalid)})", "kt-key kt-bad")
    for i, bad in enumerate(t.invalid):
        row = y + 24 + 20 * i
        s.text(16, row, fit(bad.key, PLOT_X - 32, 12), "kt-sub kt-bad", title=bad.key)
        s.text(PLOT_X, row, fit(bad.reason, PLOT_WIDTH, 12), "kt-sub", title=bad.reason)
