"""The timeline's time axis: where a picture's parts sit, its UTC axis and its local rows.

Contract: :class:`Layout` fixes, for a :class:`~kumaco.views.timeline.model.Timeline`,
the vertical position of each part and the scale ``x(instant)`` (clamped to
the range; the plot starts at ``PLOT_X`` and spans ``PLOT_WIDTH``).
:func:`draw_axis` draws the UTC axis: gridlines at calendar boundaries whose
density follows the range (:func:`pick_unit`: hours for a day, days for a
month, months for a year...), a row naming the dates (days, months or
years) and shaded weekends for ranges of 2 to 62 days. Boundaries come from
:func:`boundaries`, in the UTC calendar, and stop quietly past year 9999.
Under the UTC tick labels, one row per time zone of the windows other than
UTC (:func:`local_zones`, at most :data:`MAX_LOCAL_ROWS`, by name) gives the
wall time in that zone at the same gridlines (``04:00``, with the abbreviation
on the row's first label and wherever it changes: ``03:00 CEST``), labels
that would overlap left out. Pure and deterministic.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from kumaco.core.time.durations import HOUR
from kumaco.core.time.instants import format_instant, to_datetime, to_instant
from kumaco.views.timeline.model import Timeline
from kumaco.views.timeline.svg import (
    LANE_HEIGHT,
    PLOT_WIDTH,
    PLOT_X,
    WIDTH,
    Svg,
    esc,
    fit,
    text_width,
)
from kumaco.views.timeline.zones import abbreviation, local_time

DAY = 24 * HOUR
#: At most this many local rows under the UTC axis; more zones are named in the legend.
MAX_LOCAL_ROWS = 3
_ROW = 14.0
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


def local_zones(t: Timeline) -> list[str]:
    """The time zones of ``t``'s windows other than UTC, by name."""
    return sorted({lane.window.zone_name for lane in t.lanes} - {"UTC"})


class Layout:
    """The vertical layout of a picture of ``t`` and its horizontal scale."""

    def __init__(self, t: Timeline, standalone: bool) -> None:
        self.t = t
        self.standalone = standalone
        self.zones = local_zones(t)
        self.local_rows = self.zones[:MAX_LOCAL_ROWS]
        self.axis_top = 70.0 if standalone else 10.0
        self.lanes_top = self.axis_top + 44 + _ROW * len(self.local_rows)
        self.lane_count = max(1, len(t.lanes)) + len(t.turns)
        self.lanes_bottom = self.lanes_top + self.lane_count * LANE_HEIGHT
        self.footer = self.lanes_bottom + 6
        self.legend_y = self.footer + 40
        bottom = self.legend_y + 18 + 14
        if standalone and t.invalid:
            self.invalid_top = bottom + 20
            bottom = self.invalid_top + 12 + 20 * len(t.invalid)
        else:
            self.invalid_top = bottom
        self.height = bottom + 14
        self.scale = PLOT_WIDTH / (t.until - t.start)

    def x(self, instant: int) -> float:
        """The x of ``instant``, clamped to the range."""
        clamped = min(max(instant, self.t.start), self.t.until)
        return PLOT_X + (clamped - self.t.start) * self.scale


@dataclass(frozen=True)
class Unit:
    """A tick spacing: ``step`` calendar ``kind`` s, about ``approx`` ns, at least ``min_px``."""

    kind: str  # hour, day, week, month, year
    step: int
    approx: int  # ns, to estimate spacing
    min_px: float


_TICK_UNITS = (
    Unit("hour", 1, HOUR, 38),
    Unit("hour", 2, 2 * HOUR, 38),
    Unit("hour", 3, 3 * HOUR, 38),
    Unit("hour", 6, 6 * HOUR, 38),
    Unit("hour", 12, 12 * HOUR, 38),
    Unit("day", 1, DAY, 22),
    Unit("week", 1, 7 * DAY, 46),
    Unit("month", 1, 30 * DAY, 34),
    Unit("month", 3, 91 * DAY, 34),
    Unit("year", 1, 365 * DAY, 36),
    Unit("year", 5, 5 * 365 * DAY, 36),
    Unit("year", 25, 25 * 365 * DAY, 36),
    Unit("year", 100, 100 * 365 * DAY, 36),
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


def boundaries(kind: str, step: int, start: int, until: int) -> Iterator[int]:
    """Boundaries of ``kind``/``step`` from the last one at or before ``start`` to ``until``."""
    try:
        d = _align(kind, step, to_datetime(start))
        for _ in range(5000):
            t = to_instant(d)
            if t > until:
                return
            yield t
            d = _advance(kind, step, d)
    except (OverflowError, ValueError):  # past year 9999
        return


def pick_unit(start: int, until: int) -> Unit:
    """The densest tick unit whose ticks are at least its ``min_px`` apart."""
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


def draw_axis(s: Svg, lay: Layout) -> None:
    """The UTC axis of ``lay``'s timeline: weekends, date row, gridlines and tick labels."""
    t = lay.t
    unit = pick_unit(t.start, t.until)
    date_kind = _DATE_ROW.get(unit.kind)
    date_y, tick_y = lay.axis_top + 16, lay.axis_top + 34
    grid_top, grid_bottom = lay.axis_top + 22, lay.lanes_bottom
    s.text(PLOT_X - 12, tick_y, "UTC", "kt-tick kt-muted", anchor="end")
    # Weekends, when days matter.
    if 2 * DAY <= t.until - t.start <= 62 * DAY:
        for b in boundaries("day", 1, t.start, t.until):
            if to_datetime(b).weekday() >= 5:
                x0, x1 = lay.x(b), lay.x(b + DAY)
                if x1 > x0:
                    s.rect(
                        x0, lay.lanes_top, x1 - x0, lay.lanes_bottom - lay.lanes_top, "kt-weekend"
                    )
    major: set[int] = set()
    if date_kind is not None:
        bounds = list(boundaries(date_kind, 1, t.start, t.until))
        need_year, last_year = True, 0
        for i, b in enumerate(bounds):
            seg_start = max(b, t.start)
            seg_end = bounds[i + 1] if i + 1 < len(bounds) else t.until
            if b >= t.start:
                major.add(b)
            d = to_datetime(b)
            need_year = need_year or d.year != last_year
            last_year = d.year
            room = lay.x(seg_end) - lay.x(seg_start) - 8
            text = next(
                (
                    c
                    for c in _date_labels(date_kind, d, need_year)
                    if text_width(c, 12, bold=True) <= room
                ),
                "",
            )
            if text:
                s.text(lay.x(seg_start) + 4, date_y, text, "kt-date")
                need_year = need_year and str(d.year) not in text
    ticks = [b for b in boundaries(unit.kind, unit.step, t.start, t.until) if b >= t.start]
    for b in ticks:
        if b not in major:
            s.line(lay.x(b), grid_top + 16, lay.x(b), grid_bottom, "kt-grid")
    for b in sorted(major):
        s.line(lay.x(b), grid_top - 2, lay.x(b), grid_bottom, "kt-grid-major")
    spacing = unit.approx * lay.scale
    for b in ticks:
        text = _tick_label(unit.kind, to_datetime(b))
        if b < t.until and (text_width(text, 11) + 6 <= spacing):
            s.text(lay.x(b) + 3, tick_y, text, "kt-tick kt-muted")
    for row, zone in enumerate(lay.local_rows):
        _local_row(s, lay, zone, [b for b in ticks if b < t.until], tick_y + _ROW * (row + 1))
    s.line(PLOT_X, lay.lanes_top - 0.5, PLOT_X + PLOT_WIDTH, lay.lanes_top - 0.5, "kt-rule")


def _local_row(s: Svg, lay: Layout, zone: str, ticks: list[int], y: float) -> None:
    """The wall time in ``zone`` at each gridline, its abbreviation where it changes."""
    s.text(
        PLOT_X - 12,
        y,
        fit(zone, PLOT_X - 28, 11),
        "kt-tick kt-local-zone kt-muted",
        anchor="end",
        title=zone,
        extra=f' data-zone="{esc(zone)}"',
    )
    last_end, last_abbr = float("-inf"), ""
    for b in ticks:
        d = local_time(b, zone)
        abbr = abbreviation(d)
        text = f"{d:%H:%M}" if abbr == last_abbr else f"{d:%H:%M} {abbr}"
        x = lay.x(b) + 3
        w = text_width(text, 11)
        if x < last_end + 6 or x + w > WIDTH - 4:
            continue
        s.text(
            x,
            y,
            text,
            "kt-tick kt-local kt-muted",
            extra=f' data-zone="{esc(zone)}" data-at="{format_instant(b)}"',
        )
        last_end, last_abbr = x + w, abbr
