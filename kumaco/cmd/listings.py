"""``validate``, ``windows`` and ``plan``: the listing commands, offline and in the cluster.

Contract: each is a :class:`~kumaco.cmd.registry.Command`, its body written once
against a :class:`~kumaco.cmd.registry.Source` and its output one table of
:mod:`kumaco.views.listing`:

* :data:`VALIDATE` (``kumaco`` only): one verdict line per window ConfigMap; exit 0
  all valid, 1 any invalid (2 when the input holds no window ConfigMap at all:
  :func:`~kumaco.cmd.common.read_windows`). ConfigMaps that ``--configmap-selector``
  does not select are skipped with a note; warnings (:func:`window_warnings`) for a
  window that has ended (its dates leave no occurrence to come: delete it; exit 0),
  a window that never closes, a ``nodeSelector`` that can match no node, an ``Etc/GMT+N``
  zone (POSIX's inverted sign), a ``startTime`` restricting both day fields, and what
  the daylight-saving changes of the year from ``--at`` (default: now) do to it.
* :data:`WINDOWS`: the open intervals of every valid window intersecting
  ``[from, until)`` (``-o wide``: with the local time; ``-o ics``: an iCalendar feed,
  stamped with ``--at``), then a warning for each daylight-saving change in the range
  that skips or lengthens an occurrence, and one for each window that has ended at
  ``--at`` (on standard error, in every format); ``--from`` defaults to the start of the hour
  of ``--at`` (now) and ``--until`` to seven days on, from files and from the cluster
  alike.
* :data:`PLAN`: what the controller would set on each node at ``--at`` (default: now).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TextIO

from kumaco.cmd.common import (
    EXIT_INVALID,
    EXIT_OK,
    Output,
    add_at_flag,
    add_range_flags,
    clock,
    condition_warnings,
    time_range,
)
from kumaco.cmd.flags import policy_from_args
from kumaco.cmd.registry import KUBECTL, KUMACO, PLANNER_INPUT, Command, Files, Source
from kumaco.core.errors import one_line
from kumaco.core.labels.contradictions import contradictions
from kumaco.core.planning.planner import plan
from kumaco.core.windows.daylight_saving import dst_notes, posix_sign_warning
from kumaco.core.windows.days_of_month import either_day_warning
from kumaco.core.windows.window import YEAR, InvalidWindow, Window, occurrences
from kumaco.views import listing
from kumaco.views.listing import Openings, Verdicts
from kumaco.views.wording import ended_text

MAX_OCCURRENCES = 100_000
#: How far beyond ``--until`` an occurrence still open is followed for its end.
LOOKAHEAD = YEAR

VERDICTS = Output(listing.VALIDATE, "text", "format (default: text)")
OPENINGS = Output(
    listing.WINDOWS, "text", "format (default: text; wide: with the local time beside UTC)"
)
PLANS = Output(listing.PLAN, "text", "format (default: text)")


def window_warnings(entries: Sequence[Window | InvalidWindow], now: int) -> dict[str, list[str]]:
    """The warnings about valid windows, by key: what a window does that was likely not meant.

    A window that never closes (or not within a year from ``now``), a ``startTime`` that
    restricts both day fields, so fires on either (robfig's OR), a ``nodeSelector`` whose
    requirements contradict each other (:func:`contradictions`), a zone named with POSIX's
    inverted sign (``Etc/GMT+1`` is UTC-01:00), and what daylight-saving
    changes do to it in the year from ``now`` (:func:`dst_lines`).
    """
    out: dict[str, list[str]] = {}
    for e in entries:
        if not isinstance(e, Window):
            continue
        if e.state_at(now).ended:
            out[e.key] = [ended_text(e)]
            continue  # nothing else it does matters any more
        lines = []
        if not e.freeze and e.never_closes(now):
            lines.append(
                f"never closes: its occurrences chain without a gap ({e.start_time!r} for "
                f"{e.duration_text}), so its nodes would stay under maintenance for good"
            )
        lines += [
            f'nodeSelector "{e.selector}" matches no node: {why}'
            for why in contradictions(e.selector.requirements)
        ]
        posix = posix_sign_warning(e.zone_name)
        if posix:
            lines.append(f"zone {posix}")
        either = either_day_warning(e.schedule, e.days, e.days_text)
        if either:
            lines.append(either)
        lines += dst_lines(e, now, now + YEAR)
        if lines:
            out[e.key] = lines
    return out


def dst_lines(w: Window, start: int, until: int) -> list[str]:
    """What the daylight-saving changes in ``[start, until)`` do to ``w``, as warning lines."""
    return [n.text for n in dst_notes(w, start, until)]


def warning_line(key: str, line: str) -> str:
    """A warning about window ``key`` as one line of standard error.

    ``warning: ns/name never closes: ...``; a note that is a sentence of its own (``02:00
    does not exist ...``) follows a colon.
    """
    return f"warning: {one_line(key)}{': ' if line[:1].isdigit() else ' '}{line}\n"


def valid_windows(entries: Sequence[Window | InvalidWindow], err: TextIO) -> list[Window]:
    """The valid windows; a note on ``err`` for each invalid one."""
    for e in entries:
        if isinstance(e, InvalidWindow):
            err.write(listing.skipped(e))
    return [e for e in entries if isinstance(e, Window)]


def _validate(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    entries = source.windows(err)
    warnings = window_warnings(entries, clock(args))
    VERDICTS.write(Verdicts(entries, warnings), args, out)
    out.flush()  # the verdicts, then the warnings about them (one order on a shared terminal)
    if args.output == "text":
        for key, lines in warnings.items():
            for line in lines:
                err.write(warning_line(key, line))
    return EXIT_OK if all(isinstance(e, Window) for e in entries) else EXIT_INVALID


def _validate_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    add_at_flag(p, "check as of T: the year its warnings look at starts then")
    VERDICTS.add_flags(p)


VALIDATE = Command(
    "validate",
    _validate,
    {KUMACO: "check window ConfigMaps (offline)"},
    _validate_flags,
    files=Files(),
)


def _windows(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    now = clock(args)
    start, until = time_range(args, now)
    windows = valid_windows(source.windows(err), err)
    found, truncated = occurrences(windows, start, until, args.limit, LOOKAHEAD)
    if truncated:
        err.write(f"warning: output truncated to {args.limit} occurrences (--limit)\n")
    OPENINGS.write(Openings(found, windows, now), args, out)
    out.flush()  # the occurrences, then what daylight-saving time does to them
    for w in windows:
        if w.state_at(now).ended:
            err.write(warning_line(w.key, ended_text(w)))
        for line in dst_lines(w, start, until):
            err.write(warning_line(w.key, line))
    return EXIT_OK


def _windows_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    add_range_flags(p, "the start of the hour of --at")
    add_at_flag(p, "the instant taken as now (the calendar's DTSTAMP)")
    OPENINGS.add_flags(p)
    p.add_argument(
        "--limit", type=int, default=MAX_OCCURRENCES, metavar="N", help="list at most N occurrences"
    )


WINDOWS = Command(
    "windows",
    _windows,
    {
        KUMACO: "list when windows are open (offline)",
        KUBECTL: "when the cluster's windows are open",
    },
    _windows_flags,
    files=Files(),
)


def _plan(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    _instance, policy = policy_from_args(args)
    at = clock(args)
    windows = valid_windows(source.windows(err), err)
    nodes, refusals = source.nodes(policy.owned), source.refusals(policy)
    for line in condition_warnings(policy, nodes):
        err.write(f"warning: {line}\n")
    PLANS.write(plan(windows, nodes, at, policy, refusals), args, out)
    return EXIT_OK


def _plan_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    add_at_flag(p, "the instant to plan for")
    PLANS.add_flags(p)


PLAN = Command(
    "plan",
    _plan,
    {
        KUMACO: "what the controller would set on each node (offline)",
        KUBECTL: "what kumaco would set on each node of the cluster",
    },
    _plan_flags,
    files=PLANNER_INPUT,
    policy=True,
    env=True,
    reads_nodes=True,
)
