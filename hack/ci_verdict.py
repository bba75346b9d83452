#!/usr/bin/env python3
"""CI's verdict on a test run (``.ci/run``): no test skipped or failed in any tier.

``python hack/ci_verdict.py JUNIT.xml [JUNIT.xml ...] artifacts/e2e-proof.json`` (the
tiers' JUnit reports, read as one, then the e2e proof); exit status 1
with the reasons on stderr when the run must fail. The rules: ``tests/support/judges/junit.py``.
The figures this run measured (``artifacts/figures.json``) are printed by ``.ci/run``, not
compared with the docs: a figure the docs quote is either a record of a named run
(``docs/e2e-figures.json``) or a bound a test asserts (``tests/support/judges/figures.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.judges.junit import verdict

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    *junits, proof = (Path(a) for a in sys.argv[1:])
    if not junits:
        print("usage: ci_verdict.py JUNIT.xml [JUNIT.xml ...] E2E-PROOF.json", file=sys.stderr)
        return 2
    lines, problems = verdict(junits, proof)
    for line in lines:
        print(f"CI: {line}")
    for p in problems:
        print(f"CI: {p}", file=sys.stderr)
    if problems:
        print(
            "CI: every test of every tier must run and pass (no skip, no failure)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
