"""The ``kumaco`` command line: wiring only.

Offline commands (no cluster; a stable contract, tested black-box):

``kumaco validate FILE...``
    One line per window ConfigMap, ``valid ns/name`` or ``invalid ns/name: key:
    reason``; exit 0 all valid, 1 any invalid, 2 input unreadable. ConfigMaps that
    ``--configmap-selector`` (the controller's default) does not select are
    skipped with a note (a warning when they look like windows); a window that
    never closes gets a warning.
``kumaco windows FILE... --from T --until T``
    The open intervals of every valid window intersecting ``[from, until)``
    (``-o ics``: an iCalendar feed).
``kumaco plan --windows FILE... --nodes FILE [--at T] ...``
    What the controller would set on each node at ``T``.
``kumaco forecast --windows FILE... --nodes FILE --from T --until T --maintenance-duration D``
    The planner run forward in simulated time (:mod:`kumaco.cmd.forecast`); exit 1 when
    some node that needs maintenance does not finish before ``--until``.
``kumaco timeline FILE... --from T --until T [-o svg|html] [--output-file PATH]``
    The picture of when windows are open (:mod:`kumaco.cmd.timeline`).

``kumaco run`` starts the controller (see :mod:`kumaco.cmd.settings` for its flags).
A FILE of ``-`` is standard input. Times are RFC 3339 (a date alone is its
midnight UTC); output is UTC with ``Z``. ``-o/--output`` is always the format
(``text``, ``json``, ``yaml``; ``svg``/``html`` for pictures), ``--output-file``
the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from kumaco import __version__
from kumaco.cmd.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    TIME_HELP,
    add_input_flags,
    load_objects,
    now_ns,
    read_windows,
    time_flag,
    write_output,
)
from kumaco.cmd.flags import UsageError, add_policy_flags, apply_env_defaults, policy_from_args
from kumaco.cmd.forecast import add_forecast_flags, cmd_forecast
from kumaco.cmd.settings import add_run_flags, settings_from_args
from kumaco.cmd.timeline import add_timeline_flags, cmd_timeline
from kumaco.core.errors import one_line
from kumaco.core.manifests import node_views
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import plan
from kumaco.core.windows import YEAR, InvalidWindow, Window, occurrences
from kumaco.views import listing
from kumaco.views.listing import FORMATS

MAX_OCCURRENCES = 100_000
#: How far beyond ``--until`` an occurrence still open is followed for its end.
LOOKAHEAD = YEAR


def unbounded_warnings(entries: Sequence[Window | InvalidWindow], now: int) -> dict[str, list[str]]:
    """For each window that never closes (or not within a year): the warning, by key."""
    out: dict[str, list[str]] = {}
    for e in entries:
        if isinstance(e, Window) and not e.freeze and e.never_closes(now):
            out[e.key] = [
                f"never closes: its occurrences chain without a gap ({e.start_time!r} for "
                f"{e.duration_text}), so its nodes would stay under maintenance for good"
            ]
    return out


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco validate``: one verdict line per window ConfigMap."""
    entries = read_windows(args.files, args, stdin, err)
    if not entries:
        err.write(f"no window ConfigMap selected by {args.configmap_selector!r} in the input\n")
        return EXIT_OK
    warnings = unbounded_warnings(entries, now_ns())
    out.write(listing.validate(entries, args.output, warnings))
    out.flush()  # the verdicts, then the warnings about them (one order on a shared terminal)
    if args.output == "text":
        for key, lines in warnings.items():
            for line in lines:
                err.write(f"warning: {one_line(key)} {line}\n")
    return EXIT_OK if all(isinstance(e, Window) for e in entries) else EXIT_INVALID


def valid_windows(entries: Sequence[Window | InvalidWindow], err: TextIO) -> list[Window]:
    """The valid windows; a note on ``err`` for each invalid one."""
    for e in entries:
        if isinstance(e, InvalidWindow):
            err.write(listing.skipped(e))
    return [e for e in entries if isinstance(e, Window)]


def print_windows(
    windows: Sequence[Window],
    start: int,
    until: int,
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
) -> None:
    """Occurrences in ``[start, until)`` as ``kumaco windows`` prints them."""
    found, truncated = occurrences(windows, start, until, args.limit, LOOKAHEAD)
    if truncated:
        err.write(f"warning: output truncated to {args.limit} occurrences (--limit)\n")
    freezes = frozenset(w.key for w in windows if w.freeze)
    write_output(
        listing.windows(found, args.output, freezes, {w.key: w for w in windows}),
        args.output_file,
        out,
    )


def cmd_windows(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco windows``: open intervals in a time range."""
    start, until = time_flag(args.from_), time_flag(args.until)
    if until <= start:
        raise UsageError("--until must be after --from")
    windows = valid_windows(read_windows(args.files, args, stdin, err), err)
    print_windows(windows, start, until, args, out, err)
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco plan``: the planner's answer for a node list at an instant."""
    policy = policy_from_args(args)
    at = time_flag(args.at) if args.at else now_ns()
    windows = valid_windows(read_windows(args.windows, args, stdin, err), err)
    nodes = NodeSet(node_views(load_objects([args.nodes], stdin), policy.owned))
    write_output(listing.plan(plan(windows, nodes, at, policy), args.output), args.output_file, out)
    return EXIT_OK


def add_output_flags(p: argparse.ArgumentParser, formats: Sequence[str], default: str) -> None:
    """``-o/--output FORMAT`` (the format, everywhere) and ``--output-file PATH``."""
    p.add_argument(
        "--output", "-o", choices=formats, default=default, help=f"format (default: {default})"
    )
    p.add_argument(
        "--output-file", metavar="PATH", help="write the output here (default: standard output)"
    )


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco run``: the controller."""
    settings = settings_from_args(args, os.environ)
    # Imported here so that the offline commands never load the Kubernetes client.
    from kumaco.cmd.runner import run  # noqa: PLC0415

    return run(settings)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``kumaco`` command."""
    parser = argparse.ArgumentParser(prog="kumaco", description="KUbernetes MAintenance COntroller")
    parser.add_argument("--version", action="version", version=f"kumaco {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("validate", help="check window ConfigMaps (offline)")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--output", "-o", choices=FORMATS, default="text", help="format")
    add_input_flags(v)
    v.set_defaults(func=cmd_validate)

    w = sub.add_parser("windows", help="list when windows are open (offline)")
    w.add_argument("files", nargs="+", metavar="FILE")
    w.add_argument("--from", dest="from_", required=True, metavar="T", help=TIME_HELP)
    w.add_argument("--until", required=True, metavar="T", help=TIME_HELP)
    add_output_flags(w, (*FORMATS, "ics"), "text")
    add_input_flags(w)
    w.add_argument("--limit", type=int, default=MAX_OCCURRENCES, help=argparse.SUPPRESS)
    w.set_defaults(func=cmd_windows)

    pl = sub.add_parser("plan", help="what the controller would set on each node (offline)")
    pl.add_argument("--windows", nargs="+", required=True, metavar="FILE")
    pl.add_argument(
        "--nodes",
        required=True,
        metavar="FILE",
        help="as printed by kubectl get nodes -o yaml|json",
    )
    pl.add_argument("--at", metavar="T", help="the instant to plan for (default: now)")
    add_output_flags(pl, FORMATS, "text")
    add_input_flags(pl)
    add_policy_flags(pl)
    pl.set_defaults(func=cmd_plan)

    fc = sub.add_parser(
        "forecast",
        help="simulate a maintenance run: who gets a turn when, and what does not fit (offline)",
    )
    fc.add_argument("--windows", nargs="+", required=True, metavar="FILE")
    fc.add_argument(
        "--nodes",
        required=True,
        metavar="FILE",
        help="as printed by kubectl get nodes -o yaml|json",
    )
    add_forecast_flags(fc)
    add_input_flags(fc)
    add_policy_flags(fc)
    fc.set_defaults(
        func=lambda args, out, err, stdin: cmd_forecast(
            args, policy_from_args(args), out, err, stdin
        )
    )

    tl = sub.add_parser("timeline", help="draw when windows are open, as SVG or HTML (offline)")
    tl.add_argument("files", nargs="+", metavar="FILE")
    tl.add_argument("--nodes", metavar="FILE", help="nodes to count per window (as for plan)")
    add_timeline_flags(tl, range_required=True)
    add_input_flags(tl)
    tl.set_defaults(func=cmd_timeline)

    r = sub.add_parser("run", help="run the controller (flags may also be set as KUMACO_<FLAG>)")
    add_run_flags(r)
    r.set_defaults(func=cmd_run)
    # KUMACO_<FLAG> sets any flag's default: all of run's, and the policy flags of plan and
    # forecast (the same flags, with the same meaning, as the operator's environment).
    try:
        for command in (r, pl, fc):
            apply_env_defaults(command, os.environ)
    except UsageError as exc:
        parser.error(str(exc))
    return parser


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
    """Entry point of the ``kumaco`` console script."""
    out, err = sys.stdout, sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc: int = args.func(args, out, err, stdin or sys.stdin)
    except UsageError as exc:
        err.write(f"kumaco {args.command}: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `kumaco windows ... | head`
        return EXIT_OK
    return rc
