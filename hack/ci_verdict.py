#!/usr/bin/env python3
"""CI's verdict on a test run (``.ci/run``): no test skipped or failed in any tier.

``python hack/ci_verdict.py JUNIT.xml [JUNIT.xml ...] artifacts/e2e-proof.json`` (the
tiers' JUnit reports, read as one, then the e2e proof); exit status 1
with the reasons on stderr when the run must fail. The rules: ``tests/support/judges/junit.py``.
The figures this run measured (``artifacts/figures.json``) are printed by ``.ci/run``, not
compared with the docs: a figure the docs quote is either a record of a named run
(``docs/e2e-figures.json``) or a bound a test asserts (``tests/support/judges/figures.py``).
The e2e report is also judged against ``tests/e2e/expected.json``: every e2e module with its
number of tests, and the fixed set of tests exempt from the proof (a missing module, a
module with fewer tests than listed or an unlisted exemption fails the run; more tests
than listed is printed).

``python hack/ci_verdict.py --write-expected`` rewrites ``tests/e2e/expected.json`` from a
collect-only run (``pytest tests/e2e --collect-only -q``): the modules and their counts; the
exemptions are kept as listed, and the ones collected but not listed are printed (a new
exemption is added to the file by hand, where a reviewer sees it). Exit status 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.judges.junit import EXEMPTIONS, EXPECTED, collected, expected_from, verdict

ROOT = Path(__file__).resolve().parent.parent


def write_expected(root: Path = ROOT) -> int:
    """Rewrite :data:`EXPECTED` from a collect-only run (see the contract)."""
    path = root / EXPECTED
    old = json.loads(path.read_text()) if path.exists() else {"exempt": {}}
    doc = expected_from(root, old["exempt"])
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"{EXPECTED}: {len(doc['modules'])} modules, {sum(doc['modules'].values())} tests")
    for marker in EXEMPTIONS:
        for nodeid in sorted(set(collected(root, marker)) - set(doc["exempt"][marker])):
            print(f"not listed (add it by hand if it must be exempt): {marker}: {nodeid}")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--write-expected"]:
        return write_expected()
    *junits, proof = (Path(a) for a in sys.argv[1:])
    if not junits:
        print("usage: ci_verdict.py JUNIT.xml [JUNIT.xml ...] E2E-PROOF.json", file=sys.stderr)
        return 2
    lines, problems = verdict(junits, proof, ROOT / EXPECTED)
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
