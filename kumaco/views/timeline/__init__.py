"""The maintenance schedule as a picture: a timeline in plain SVG or one self-contained HTML file.

Contract
--------
Pure rendering. :func:`build` takes window entries (valid and invalid), the
open intervals ``kumaco windows`` computes for them (:func:`kumaco.core.windows.window.occurrences`,
passed in by the caller) and optionally the planner's node counts (a
:class:`NodeCounts`: the command asks :func:`kumaco.core.planning.planner.plan`; views
never plan), and returns a :class:`Timeline`; :func:`render_svg` and
:func:`render_html` turn it into text. No I/O, no clock (``now`` is an
argument), no ``kubernetes`` import, no plotting library: equal inputs give
byte-identical output.

Modules: :mod:`~kumaco.views.timeline.model` (the picture's data and
:func:`build`), :mod:`~kumaco.views.timeline.zones` (wall times and offset
changes), :mod:`~kumaco.views.timeline.svg` (geometry, escaping, text
fitting, label placement), :mod:`~kumaco.views.timeline.axis` (layout and
the UTC axis), :mod:`~kumaco.views.timeline.draw` (the SVG) and
:mod:`~kumaco.views.timeline.page` (the HTML page). This package re-exports
what the commands and :mod:`kumaco.views.status` use.

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
  matter (ranges of 2 to 62 days). Under the UTC tick labels, one row per
  time zone of the windows other than UTC (at most three, by name; the
  legend names any left out) gives that zone's wall time at the same
  gridlines (``<text class="kt-tick kt-local" data-zone=... data-at=...>``),
  its abbreviation first and wherever it changes.
* Above each bar its start time in the window's own zone (``03:00 CET``;
  ``UTC`` for UTC windows; ``<text class="kt-barlabel" data-start=...>``,
  the bar's ``data-start``). Every bar keeps its label unless it would touch
  another bar's (bars closer than a label's width): then a label that
  differs from the previous one (a DST shift) and the bar open at ``now``
  keep theirs first, then the first bar and the bars either side of a DST
  event, then the others.
* Under the bars, a row of DST events, so they never take a bar's label:
  where the zone's UTC offset changes inside the range a dashed marker names
  the change (``CET→CEST``; ``<line class="kt-dst" data-at=...>``): on the
  UTC axis the bars visibly move by the shift while their local labels stay
  put. A night DST skips (a start time in the spring-forward gap, or one
  robfig's firings skip after a half-hour shift: the window's
  :func:`~kumaco.core.windows.daylight_saving.dst_notes`) is a dashed outline
  where the occurrence would have been (``<rect class="kt-skip"
  data-at=...>``, never a ``kt-bar``) noted ``skipped (DST)``; a start time
  the window opens at twice is noted ``opens twice (DST)``
  (``<text class="kt-dst-note" data-kind=... data-at=...>``, the note's
  words in its tooltip).
* A window's name wraps over two lines where it is long; longer still, the
  second line ends with an ellipsis, and the whole name is in the tooltip
  (the first line of its ``<title>``), in ``data-window`` and in the HTML
  table.
* The instant ``now`` as a vertical line (``class="kt-now"``, ``data-at``),
  when it lies in the range.
* Each lane is ``<g class="kt-lane" data-window=...>``; with node counts it
  says (and carries as ``data-nodes``) how many nodes in scope the window's
  selector matches. A dated window that has ended at ``now`` is marked ``ended`` in
  its lane's caption and carries ``data-ended="true"``; its hover text says why.
* A legend naming every mark: the window bars, freeze bars, a forecast's
  node bars (``kt-swatch-turn``, with node lanes only), the DST change, the
  skipped night, ``now``; and which zones the axis gives.
* Invalid windows with their reason: rows under the chart in the
  standalone SVG, a list in the HTML.

The HTML is one file: inline CSS and inline SVG, no script, no external
resource; it follows ``prefers-color-scheme`` (light and dark) and is laid
out for 1280-1440 px wide screens (the SVG scales with the page).
"""

from __future__ import annotations

from kumaco.views.timeline.draw import render_svg
from kumaco.views.timeline.model import Lane, NodeCounts, Timeline, Turn, build, windows_by_key
from kumaco.views.timeline.page import render_html
from kumaco.views.timeline.svg import MIN_BAR_WIDTH
from kumaco.views.timeline.zones import format_local, local_time

__all__ = [
    "MIN_BAR_WIDTH",
    "Lane",
    "NodeCounts",
    "Timeline",
    "Turn",
    "build",
    "format_local",
    "local_time",
    "render_html",
    "render_svg",
    "windows_by_key",
]
