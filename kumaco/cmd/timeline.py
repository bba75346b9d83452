"""``kumaco timeline`` and ``kubectl kumaco timeline``: the picture, from files or a cluster.

Contract: :func:`add_timeline_flags` registers the flags both share;
:func:`draw` turns windows (and optionally nodes, counted per window by
:func:`kumaco.core.planner.plan`) into the SVG or HTML of
:mod:`kumaco.views.timeline` and writes it to standard output or ``--output-file PATH``;
:func:`cmd_timeline` is the offline command. Usage errors raise
:class:`~kumaco.cmd.flags.UsageError`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TextIO

from kumaco.cmd.common import EXIT_OK, load_objects, now_ns, read_windows, time_flag, write_output
from kumaco.cmd.flags import UsageError, selector_flag
from kumaco.core.durations import HOUR
from kumaco.core.manifests import node_views
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import Policy, plan
from kumaco.core.windows import YEAR, InvalidWindow, Window, occurrences
from kumaco.views import timeline

TIMELINE_LIMIT = 5000
DAY = 24 * HOUR
DEFAULT_SPAN = 7 * DAY


def time_range(args: argparse.Namespace, now: int, align: int = HOUR) -> tuple[int, int]:
    """``--from``/``--until``; by default from ``now`` down to ``align``, for seven days."""
    start = time_flag(args.from_) if args.from_ else now - now % align
    until = time_flag(args.until) if args.until else start + DEFAULT_SPAN
    if until <= start:
        raise UsageError("--until must be after --from")
    return start, until


def add_timeline_flags(p: argparse.ArgumentParser, *, range_required: bool) -> None:
    """The flags of ``timeline`` (offline and cluster variants alike)."""
    later = "" if range_required else " (default: today 00:00 UTC)"
    p.add_argument(
        "--from", dest="from_", required=range_required, metavar="T", help="RFC 3339" + later
    )
    p.add_argument(
        "--until",
        required=range_required,
        metavar="T",
        help="RFC 3339" + ("" if range_required else " (default: --from + 7 days)"),
    )
    p.add_argument("--at", metavar="T", help="the instant marked as now (default: now)")
    p.add_argument(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope, for the node count of each window (default: all)",
    )
    p.add_argument(
        "--output", "-o", choices=("svg", "html"), default="svg", help="format (default: svg)"
    )
    p.add_argument(
        "--output-file",
        dest="path",
        metavar="PATH",
        help="write the picture here (default: standard output)",
    )
    p.add_argument("--limit", type=int, default=TIMELINE_LIMIT, help=argparse.SUPPRESS)


def draw(
    args: argparse.Namespace,
    entries: Sequence[Window | InvalidWindow],
    nodes: NodeSet | None,
    source: str,
    now: int,
    out: TextIO,
    err: TextIO,
) -> int:
    """Build the picture and write it where ``-o`` says."""
    start, until = time_range(args, now, DAY)
    scope = selector_flag("--node-selector", args.node_selector)
    windows = [e for e in entries if isinstance(e, Window)]
    found, truncated = occurrences(windows, start, until, args.limit, YEAR)
    if truncated:
        err.write(f"warning: picture truncated to {args.limit} occurrences\n")
    counts = None
    if nodes is not None:
        # The planner's count of the nodes in scope each window selects (the controller's path).
        lanes = timeline.windows_by_key(entries)[0].values()
        matching = plan(lanes, nodes, now, Policy(scope=scope)).matching
        counts = timeline.NodeCounts(len(scope.select(nodes.index)), matching, args.node_selector)
    picture = timeline.build(
        entries,
        found,
        start=start,
        until=until,
        now=now,
        nodes=counts,
        truncated=truncated,
        source=source,
    )
    text = timeline.render_svg(picture) if args.output == "svg" else timeline.render_html(picture)
    write_output(text, args.path, out)
    return EXIT_OK


def cmd_timeline(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco timeline FILE...``: the picture of the windows in files (offline)."""
    now = time_flag(args.at) if args.at else now_ns()
    entries = read_windows(args.files, args, stdin, err)
    nodes = NodeSet(node_views(load_objects([args.nodes], stdin))) if args.nodes else None
    source = "windows: " + ", ".join(args.files)
    if args.nodes:
        source += f" · nodes: {args.nodes}"
    return draw(args, entries, nodes, source, now, out, err)
