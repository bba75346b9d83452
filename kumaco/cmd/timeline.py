"""``kumaco timeline`` and ``kubectl kumaco timeline``: the picture, from files or a cluster.

Contract: :data:`TIMELINE` is the command (:mod:`kumaco.cmd.registry`), its body
written once for files and the cluster; :func:`add_timeline_flags` registers its
flags; :func:`draw` turns windows (and optionally nodes, counted per window by
:func:`kumaco.core.planning.planner.plan`) into the picture of
:mod:`kumaco.views.timeline` and writes it through :data:`PICTURES`, the table of
its formats (SVG, HTML), to standard output or ``--output-file PATH``. Usage
errors raise :class:`~kumaco.cmd.flags.UsageError`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TextIO

from kumaco.cmd.common import (
    EXIT_OK,
    Output,
    add_at_flag,
    add_range_flags,
    clock,
    time_range,
)
from kumaco.cmd.flags import selector_flag
from kumaco.cmd.registry import KUBECTL, KUMACO, Command, Files, Source
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import HOUR
from kumaco.core.windows.window import YEAR, InvalidWindow, Window, occurrences
from kumaco.views import timeline

TIMELINE_LIMIT = 5000
DAY = 24 * HOUR

PICTURES: Output[timeline.Timeline] = Output(
    {"svg": timeline.render_svg, "html": timeline.render_html},
    "svg",
    "format (default: svg)",
    "write the picture here (default: standard output)",
)


def add_timeline_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    """The flags of ``timeline``, the same for files and the cluster."""
    add_range_flags(p, "00:00 UTC on the day of --at")
    add_at_flag(p, "the instant marked as now")
    p.add_argument(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope, for the node count of each window (default: all)",
    )
    PICTURES.add_flags(p)
    p.add_argument(
        "--limit", type=int, default=TIMELINE_LIMIT, metavar="N", help="draw at most N occurrences"
    )


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
    PICTURES.write(picture, args, out)
    return EXIT_OK


def _timeline(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    """The picture of the windows (and the nodes, if any) of ``source``."""
    now = clock(args)
    entries = source.windows(err)
    nodes = source.nodes() if source.has_nodes else None
    return draw(args, entries, nodes, source.origin(detailed=True), now, out, err)


TIMELINE = Command(
    "timeline",
    _timeline,
    {
        KUMACO: "draw when windows are open, as SVG or HTML (offline)",
        KUBECTL: "draw the cluster's windows as SVG or HTML",
    },
    add_timeline_flags,
    files=Files(nodes="nodes to count per window, as for plan (default: none)"),
    reads_nodes=True,
)
