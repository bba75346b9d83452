#!/usr/bin/env python3
"""Make one e2e run the record the docs quote: ``docs/e2e-figures.json`` and its quotes.

``python hack/record_figures.py artifacts/figures.json`` (the figures a whole e2e run of
``hack/test.sh`` wrote, with its command, commit and date) copies the run to
``docs/e2e-figures.json`` and rewrites every number the docs quote from it, at the
precision shown, and every ``run of COMMIT, DATE`` in those blocks; constants (settings
and the bounds the tests assert) are left alone. It writes nothing and exits 1 when the
run lacks a figure the docs quote (a partial run cannot be the record), and exits 1 too
when a rewritten doc fails the figures check. Read the prose around the changed numbers
again before committing. The rules: ``tests/support/judges/figures.py``
(:func:`~tests.support.judges.figures.adopt_run`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.judges.figures import adopt_run

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: record_figures.py artifacts/figures.json", file=sys.stderr)
        return 2
    done, problems = adopt_run(Path(argv[0]), ROOT)
    for line in done:
        print(line)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
