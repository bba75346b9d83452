#!/usr/bin/env python3
"""CI's verdict on a test run (``.ci/run``): no test skipped or failed in any tier.

``python hack/ci_verdict.py artifacts/junit.xml artifacts/e2e-proof.json``; exit status 1
with the reasons on stderr when the run must fail. The rules: ``tests/support/junit.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.junit import verdict


def main() -> int:
    junit, proof = (Path(a) for a in sys.argv[1:3])
    lines, problems = verdict(junit, proof)
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
