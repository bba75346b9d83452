"""``kumaco forecast`` and ``kubectl kumaco forecast``: will the window be long enough.

Contract: :func:`add_forecast_flags` registers the flags both share (the
time range, the maintenance durations, the output); :func:`run_forecast`
simulates with :func:`kumaco.core.forecast.forecast` -- the planner ``kumaco
run`` uses, with the same policy flags -- and prints text, JSON, or the
timeline picture with a lane per node. Exit 0 when every node that needs
maintenance finishes before ``--until``, 1 when some do not, 2 on bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TextIO

from kumaco.cmd.common import (
    EXIT_INVALID,
    EXIT_OK,
    load_objects,
    read_windows,
    time_flag,
    write_output,
)
from kumaco.cmd.flags import UsageError, duration_flag
from kumaco.core.errors import InvalidInput
from kumaco.core.forecast import DurationRule, forecast, parse_duration_rule
from kumaco.core.manifests import node_views
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import Policy
from kumaco.core.windows import InvalidWindow, Window, occurrences
from kumaco.views import listing, timeline


def add_forecast_flags(p: argparse.ArgumentParser) -> None:
    """``--from``/``--until``, the maintenance durations and the output of ``forecast``."""
    p.add_argument("--from", dest="from_", required=True, metavar="T", help="RFC 3339")
    p.add_argument("--until", required=True, metavar="T", help="RFC 3339")
    p.add_argument(
        "--maintenance-duration",
        required=True,
        metavar="DURATION",
        help="how long one node's maintenance takes (Go duration, e.g. 30m)",
    )
    p.add_argument(
        "--maintenance-duration-per",
        action="append",
        metavar="LABEL=VALUE:DURATION",
        help="another duration for the nodes with this label value (repeatable; the first "
        "match wins), e.g. nvidia.com/gpu.present=true:45m",
    )
    p.add_argument(
        "--output",
        "-o",
        choices=("text", "json", "yaml", "svg", "html"),
        default="text",
        help="the format (svg and html: the timeline with a lane per node)",
    )
    p.add_argument(
        "--output-file", metavar="PATH", help="write the output here (default: standard output)"
    )


def _rules(values: Sequence[str] | None) -> list[DurationRule]:
    rules = []
    for value in values or ():
        try:
            rules.append(parse_duration_rule(value))
        except InvalidInput as exc:
            raise UsageError(f"--maintenance-duration-per: {exc.reason}") from None
    return rules


def run_forecast(
    args: argparse.Namespace,
    entries: Sequence[Window | InvalidWindow],
    nodes: NodeSet,
    policy: Policy,
    source: str,
    out: TextIO,
    err: TextIO,
) -> int:
    """Simulate and print; the exit code says whether every node fits."""
    start, until = time_flag(args.from_), time_flag(args.until)
    if until <= start:
        raise UsageError("--until must be after --from")
    duration = duration_flag("--maintenance-duration", args.maintenance_duration)
    if duration <= 0:
        raise UsageError("--maintenance-duration: must be greater than 0")
    windows = [e for e in entries if isinstance(e, Window)]
    for e in entries:
        if isinstance(e, InvalidWindow):
            err.write(listing.skipped(e))
    try:
        result = forecast(
            windows, nodes, start, until, policy, duration, _rules(args.maintenance_duration_per)
        )
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
    if args.output in ("svg", "html"):
        found, truncated = occurrences(windows, start, until, 5000)
        picture = timeline.build(
            entries,
            found,
            start=start,
            until=until,
            now=start,
            truncated=truncated,
            source=source,
            turns=tuple(
                timeline.Turn(t.name, t.admitted, t.finished, t.windows) for t in result.turns
            ),
        )
        text = (
            timeline.render_svg(picture) if args.output == "svg" else timeline.render_html(picture)
        )
    else:
        text = listing.forecast(result, args.output)
    write_output(text, args.output_file, out)
    return EXIT_OK if result.all_finished else EXIT_INVALID


def cmd_forecast(
    args: argparse.Namespace, policy: Policy, out: TextIO, err: TextIO, stdin: TextIO
) -> int:
    """``kumaco forecast --windows FILE... --nodes FILE``: the offline forecast."""
    entries = read_windows(args.windows, args, stdin, err)
    nodes = NodeSet(node_views(load_objects([args.nodes], stdin), policy.owned))
    source = f"forecast · windows: {', '.join(args.windows)} · nodes: {args.nodes}"
    return run_forecast(args, entries, nodes, policy, source, out, err)
