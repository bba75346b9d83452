"""The ``kumaco`` command line: wiring only.

Offline commands (no cluster; a stable contract, tested black-box):

``kumaco validate FILE...``
    One line per ConfigMap, ``valid ns/name`` or ``invalid ns/name: key: reason``;
    exit 0 all valid, 1 any invalid, 2 input unreadable. ``--output json``.
``kumaco windows FILE... --from T --until T``
    The open intervals of every valid window intersecting ``[from, until)``.
``kumaco plan --windows FILE... --nodes FILE [--at T] ...``
    What the controller would set on each node at ``T``.

``kumaco run`` starts the controller (see :mod:`kumaco.cmd.settings` for its flags).
A FILE of ``-`` is standard input. Times are RFC 3339; output is UTC with ``Z``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kumaco import __version__
from kumaco.cmd.settings import UsageError as RunUsageError
from kumaco.cmd.settings import add_run_flags, apply_env_defaults, settings_from_args
from kumaco.core.errors import InvalidInput
from kumaco.core.manifests import ManifestError, load_documents, node_views, window_entries
from kumaco.core.nodes import NodeSet, format_instant
from kumaco.core.planner import IN_PROGRESS, UNDER_MAINTENANCE, Plan, Policy, parse_ceiling, plan
from kumaco.core.selectors import parse_selector
from kumaco.core.windows import InvalidWindow, Window

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
MAX_OCCURRENCES = 100_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class UsageError(Exception):
    """Input that cannot be read or parsed: exit status 2."""


def _read(path: str, stdin: TextIO) -> str:
    if path == "-":
        return stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: {exc}") from None


def load_objects(paths: Sequence[str], stdin: TextIO) -> list[Any]:
    """Every object in the files (``-`` is stdin), Lists unwrapped; UsageError if unreadable."""
    objects: list[Any] = []
    for path in paths:
        try:
            objects.extend(load_documents(_read(path, stdin), path))
        except ManifestError as exc:
            raise UsageError(str(exc)) from None
    return objects


def parse_time(text: str) -> int:
    """An RFC 3339 time with an offset (``Z`` or ``+hh:mm``) as an instant in ns."""
    try:
        parsed = dt.datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{text!r} is not an RFC 3339 time such as 2026-12-01T03:00:00Z") from None
    if parsed.tzinfo is None:
        raise UsageError(f"{text!r} has no UTC offset; write e.g. 2026-12-01T03:00:00Z")
    return ((parsed - _EPOCH) // dt.timedelta(microseconds=1)) * 1000


def _now_ns() -> int:
    return ((dt.datetime.now(dt.UTC) - _EPOCH) // dt.timedelta(microseconds=1)) * 1000


# ----------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco validate``: one verdict line per ConfigMap."""
    entries = window_entries(load_objects(args.files, stdin))
    if not entries:
        raise UsageError("no ConfigMap found in the input")
    if args.output == "json":
        doc = [
            {
                "namespace": e.namespace,
                "name": e.name,
                "valid": isinstance(e, Window),
                "errors": []
                if isinstance(e, Window)
                else [{"key": f.key, "message": f.message} for f in e.errors],
            }
            for e in entries
        ]
        json.dump(doc, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for e in entries:
            out.write(
                f"valid {_one_line(e.key)}\n"
                if isinstance(e, Window)
                else f"invalid {_one_line(e.key)}: {_one_line(e.reason)}\n"
            )
    return EXIT_OK if all(isinstance(e, Window) for e in entries) else EXIT_INVALID


def _one_line(text: str) -> str:
    """``text`` as one printable line: control, format and separator characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _valid_windows(paths: Sequence[str], err: TextIO, stdin: TextIO) -> list[Window]:
    windows: list[Window] = []
    for e in window_entries(load_objects(paths, stdin)):
        if isinstance(e, InvalidWindow):
            err.write(f"skipping invalid {_one_line(e.key)}: {_one_line(e.reason)}\n")
        else:
            windows.append(e)
    return windows


# ----------------------------------------------------------------------------- windows


@dataclass(frozen=True, order=True)
class Occurrence:
    """One merged open interval of one window."""

    start: int
    namespace: str
    name: str
    end: int


def occurrences(
    windows: Sequence[Window], start: int, until: int, limit: int
) -> tuple[list[Occurrence], bool]:
    """Open intervals intersecting ``[start, until)``, sorted; and whether ``limit`` cut them."""
    found: list[Occurrence] = []
    truncated = False
    for w in windows:
        for n, iv in enumerate(w.intervals(start, until)):
            if iv.end <= start:
                continue
            if n >= limit:
                truncated = True
                break
            found.append(Occurrence(iv.start, w.namespace, w.name, iv.end))
    found.sort()
    if len(found) > limit:
        found, truncated = found[:limit], True
    return found, truncated


def print_windows(found: Sequence[Occurrence], output: str, out: TextIO) -> None:
    """Print occurrences as ``kumaco windows`` does (text lines or a JSON array)."""
    if output == "json":
        doc = [
            {
                "namespace": o.namespace,
                "name": o.name,
                "start": format_instant(o.start),
                "end": format_instant(o.end),
            }
            for o in found
        ]
        json.dump(doc, out, indent=2)
        out.write("\n")
        return
    for o in found:
        out.write(f"{format_instant(o.start)}  {format_instant(o.end)}  {o.namespace}/{o.name}\n")


def cmd_windows(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco windows``: open intervals in a time range."""
    start, until = parse_time(args.from_), parse_time(args.until)
    if until <= start:
        raise UsageError("--until must be after --from")
    found, truncated = occurrences(_valid_windows(args.files, err, stdin), start, until, args.limit)
    if truncated:
        err.write(f"warning: output truncated to {args.limit} occurrences (--limit)\n")
    print_windows(found, args.output, out)
    return EXIT_OK


# ----------------------------------------------------------------------------- plan


def policy_from_args(args: argparse.Namespace) -> Policy:
    """The planner policy from the shared scope/condition/ceiling flags."""
    try:
        scope = parse_selector(args.node_selector)
    except InvalidInput as exc:
        raise UsageError(f"--node-selector: {exc.reason}") from None
    try:
        ceiling = (
            parse_ceiling(args.max_in_progress) if args.max_in_progress not in (None, "") else None
        )
    except InvalidInput as exc:
        raise UsageError(f"--max-in-progress: {exc.reason}") from None
    return Policy(
        scope=scope,
        under_maintenance=args.under_maintenance_condition,
        in_progress=args.in_progress_condition,
        ceiling=ceiling,
        require=tuple(args.require_condition or ()),
        block=tuple(args.block_condition or ()),
    )


def cmd_plan(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco plan``: the planner's answer for a node list at an instant."""
    policy = policy_from_args(args)
    at = parse_time(args.at) if args.at else _now_ns()
    windows = _valid_windows(args.windows, err, stdin)
    nodes = NodeSet(node_views(load_objects([args.nodes], stdin)))
    print_plan(plan(windows, nodes, at, policy), args.output, out)
    return EXIT_OK


def print_plan(result: Plan, output: str, out: TextIO) -> None:
    """Print a plan as ``kumaco plan`` does (a table or the JSON document)."""
    if output == "json":
        rows = [
            {
                "name": n.name,
                "underMaintenance": n.is_under_maintenance,
                "windows": list(n.windows),
                "maintenanceInProgress": n.is_in_progress,
                "reason": (n.in_progress or n.under_maintenance).reason,
            }
            for n in result.nodes
        ]
        json.dump({"at": format_instant(result.at), "nodes": rows}, out, indent=2)
        out.write("\n")
        return
    out.write(f"at {format_instant(result.at)}")
    if result.ceiling is not None:
        out.write(f"; in progress {result.in_progress} of at most {result.ceiling}")
    out.write("\n")
    table = [("NODE", "UNDER-MAINTENANCE", "IN-PROGRESS", "REASON", "WINDOWS")]
    table += [
        (
            n.name,
            str(n.is_under_maintenance).lower(),
            "-" if n.is_in_progress is None else str(n.is_in_progress).lower(),
            (n.in_progress or n.under_maintenance).reason,
            ",".join(n.windows) or "-",
        )
        for n in result.nodes
    ]
    out.write(format_table(table))


def format_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces, as kubectl prints."""
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows
    )


# ----------------------------------------------------------------------------- parser


def add_policy_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``plan`` and ``run``: scope, condition names, ceiling rules."""
    p.add_argument(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope (label selector; default all)",
    )
    p.add_argument(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="condition that must be True for MaintenanceInProgress (repeatable)",
    )
    p.add_argument(
        "--block-condition",
        action="append",
        metavar="TYPE",
        help="condition that, when True, blocks MaintenanceInProgress (repeatable)",
    )
    p.add_argument(
        "--max-in-progress",
        metavar="N|P%",
        help="ceiling of concurrent MaintenanceInProgress nodes (unset: not managed)",
    )
    p.add_argument("--under-maintenance-condition", default=UNDER_MAINTENANCE, metavar="TYPE")
    p.add_argument("--in-progress-condition", default=IN_PROGRESS, metavar="TYPE")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``kumaco`` command."""
    parser = argparse.ArgumentParser(prog="kumaco", description="KUbernetes MAintenance COntroller")
    parser.add_argument("--version", action="version", version=f"kumaco {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("validate", help="check window ConfigMaps (offline)")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--output", "-o", choices=("text", "json"), default="text")
    v.set_defaults(func=cmd_validate)

    w = sub.add_parser("windows", help="list when windows are open (offline)")
    w.add_argument("files", nargs="+", metavar="FILE")
    w.add_argument("--from", dest="from_", required=True, metavar="T")
    w.add_argument("--until", required=True, metavar="T")
    w.add_argument("--output", "-o", choices=("text", "json"), default="text")
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
    pl.add_argument("--output", "-o", choices=("text", "json"), default="text")
    add_policy_flags(pl)
    pl.set_defaults(func=cmd_plan)

    # ---- timeline: added with kumaco/timeline.py (handler: kumaco.cmd.kubectl) ----
    from kumaco.cmd.kubectl import add_timeline_flags, cmd_timeline  # noqa: PLC0415

    tl = sub.add_parser("timeline", help="draw when windows are open, as SVG or HTML (offline)")
    tl.add_argument("files", nargs="+", metavar="FILE")
    tl.add_argument("--nodes", metavar="FILE", help="nodes to count per window (as for plan)")
    add_timeline_flags(tl, range_required=True)
    tl.set_defaults(func=cmd_timeline)
    # ---- end of timeline ----

    r = sub.add_parser("run", help="run the controller (flags may also be set as KUMACO_<FLAG>)")
    add_run_flags(r)
    try:
        apply_env_defaults(r, os.environ)
    except RunUsageError as exc:
        parser.error(str(exc))
    r.set_defaults(func=cmd_run)
    return parser


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco run``: the controller."""
    try:
        settings = settings_from_args(args, os.environ)
    except RunUsageError as exc:
        raise UsageError(str(exc)) from None
    # Imported here so that the offline commands never load the Kubernetes client.
    from kumaco.cmd.runner import run  # noqa: PLC0415

    return run(settings)


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


if __name__ == "__main__":
    sys.exit(main())
