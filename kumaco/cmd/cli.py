"""The ``kumaco`` command line: wiring only.

Offline commands (no cluster; a stable contract, tested black-box), each a
command of the registry (:mod:`kumaco.cmd.registry`) reading files:

``kumaco validate FILE...``
    One line per window ConfigMap, ``valid ns/name`` or ``invalid ns/name: key:
    reason``; exit 0 all valid, 1 any invalid, 2 input unreadable or without any
    window ConfigMap. ConfigMaps that ``--configmap-selector`` (the controller's
    default) does not select are skipped with a note (a warning when they look like
    windows); a window that never closes, fires on either day field, or that a
    daylight-saving change skips or lengthens gets a warning (:mod:`kumaco.cmd.listings`).
``kumaco windows FILE... [--from T] [--until T] [--at T]``
    The open intervals of every valid window intersecting ``[from, until)``
    (``-o wide``: with local times; ``-o ics``: an iCalendar feed); by default from
    the start of the hour of ``--at`` (now) for seven days.
``kumaco plan FILE... --nodes FILE [--at T] ...``
    What the controller would set on each node at ``T``.
``kumaco forecast FILE... --nodes FILE --from T --until T --maintenance-duration D``
    The planner run forward in simulated time (:mod:`kumaco.cmd.forecast`); exit 1 when
    some node that needs maintenance does not finish before ``--until``.
``kumaco timeline FILE... [--from T] [--until T] [-o svg|html]``
    The picture of when windows are open (:mod:`kumaco.cmd.timeline`).

``kumaco convert [kured v1's flags]``
    kured v1's reboot schedule and flags as window ConfigMaps and the flags of kumaco
    and kured v2's reboot-inhibitors (:mod:`kumaco.cmd.convert`).

``kumaco notify --notify-url URL [--message TEXT]``
    One test notification to each endpoint; exit 1 with each endpoint's error
    (:mod:`kumaco.cmd.notify`).

``kumaco run`` starts the controller (see :mod:`kumaco.cmd.settings` for its flags).
Every command takes its window files as ``FILE...`` or ``--windows FILE...``; a FILE
of ``-`` is standard input. Times are RFC 3339 (a date alone is its midnight UTC)
or ``now``; output is UTC with ``Z``. ``-o/--output`` is always the format
(``text``, ``json``, ``yaml``; ``svg``/``html`` for pictures), ``--output-file``
the file, for every command that prints.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TextIO

from kumaco.cmd.convert import CONVERT
from kumaco.cmd.forecast import FORECAST
from kumaco.cmd.listings import PLAN, VALIDATE, WINDOWS
from kumaco.cmd.notify import NOTIFY
from kumaco.cmd.registry import KUMACO, Command, Program, Source
from kumaco.cmd.settings import add_run_flags, settings_from_args
from kumaco.cmd.timeline import TIMELINE
from kumaco.core.planning.rulebook import RULEBOOK, Rulebook


def _run(args: argparse.Namespace, _source: Source, _out: TextIO, _err: TextIO) -> int:
    """``kumaco run``: the controller."""
    settings = settings_from_args(args, os.environ)
    # Imported here so that the offline commands never load the Kubernetes client.
    from kumaco.cmd.runner import run  # noqa: PLC0415

    return run(settings)


RUN = Command(
    "run",
    _run,
    {KUMACO: "run the controller (flags may also be set as KUMACO_<FLAG>)"},
    lambda p, _cluster: add_run_flags(p),
    env=True,
)


def program(rulebook: Rulebook = RULEBOOK) -> Program:
    """``kumaco`` with the policy flags of ``rulebook``'s rules (a test may add one)."""
    return Program(
        KUMACO,
        "kumaco",
        "KUbernetes MAintenance COntroller",
        (VALIDATE, WINDOWS, PLAN, FORECAST, TIMELINE, CONVERT, NOTIFY, RUN),
        rulebook=rulebook,
    )


PROGRAM = program()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``kumaco`` command."""
    return PROGRAM.build_parser()


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
    """Entry point of the ``kumaco`` console script."""
    return PROGRAM.main(argv, stdin)
