"""``python -m tests.support.env.shifted SECONDS run ...``: kumaco with its wall clock shifted.

Contract. Runs ``kumaco run`` exactly as the console script does, except that the
process's one wall clock (the ``now_ns`` that :func:`kumaco.cmd.runner.run` hands the
controller and the Lease election) reads ``SECONDS`` later than the machine's (a float,
negative for earlier). The monotonic clock is untouched, so timeouts, lease deadlines
and fencing run at their real pace. Tests use it to put kumaco a known few seconds
before a window's minute boundary instead of waiting for the wall clock to reach it
(:func:`tests.support.env.harness.shift_before`); the product has no flag or variable for
this. Any other command is handed to ``kumaco`` unchanged.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from kumaco.cmd.cli import build_parser
from kumaco.cmd.runner import run
from kumaco.cmd.settings import settings_from_args


def main(argv: Sequence[str]) -> int:
    offset_ns = round(float(argv[0]) * 1e9)
    args = build_parser().parse_args(list(argv[1:]))
    if args.command != "run":
        raise SystemExit(f"tests.support.env.shifted runs `kumaco run` only, not {args.command!r}")
    settings = settings_from_args(args, os.environ)
    return run(settings, now_ns=lambda: time.time_ns() + offset_ns)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
