"""``python -m tests.support.env.shifted SECONDS run ...``: kumaco with its wall clock shifted.

Contract. Runs ``kumaco run`` exactly as the console script does, except that the
process's one wall clock (the ``now_ns`` that :func:`kumaco.cmd.runner.run` hands the
controller and the Lease election) reads ``SECONDS`` later than the machine's (a float,
negative for earlier). The monotonic clock is untouched, so timeouts, lease deadlines
and fencing run at their real pace. Tests use it to put kumaco a known few seconds
before a window's minute boundary instead of waiting for the wall clock to reach it
(:func:`tests.support.env.harness.shift_before`); the product has no flag or variable for
this. Only ``run`` is accepted.

:func:`run_with` is the one way a test program runs ``kumaco run`` with a seam of
:func:`kumaco.cmd.runner.run` set (this clock, or the planner of
``tests.support.judges.violation``): the command line parsed as the console script
parses it, the settings built from it and the environment, nothing patched.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

from kumaco.cmd.cli import build_parser
from kumaco.cmd.common import now_ns
from kumaco.cmd.runner import run
from kumaco.cmd.settings import settings_from_args
from kumaco.controller.loop import Planner
from kumaco.core.planning.planner import plan


def run_with(
    argv: Sequence[str],
    program: str,
    *,
    clock: Callable[[], int] = now_ns,
    planner: Planner = plan,
) -> int:
    """``kumaco ARGV`` (a ``run`` command) with :func:`kumaco.cmd.runner.run`'s seams set."""
    args = build_parser().parse_args(list(argv))
    if args.command != "run":
        raise SystemExit(f"{program} runs `kumaco run` only, not {args.command!r}")
    return run(settings_from_args(args, os.environ), now_ns=clock, planner=planner)


def main(argv: Sequence[str]) -> int:
    offset_ns = round(float(argv[0]) * 1e9)
    return run_with(argv[1:], "tests.support.env.shifted", clock=lambda: time.time_ns() + offset_ns)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
