#!/usr/bin/env python3
"""Record the audit logs the ceiling judge's unit tests replay (tests/data/audit/).

``python hack/record_audit.py`` starts its own audited control plane, runs the scenario of
``tests/support/judges/violation.py`` twice -- with kumaco as built, and with a test-only
planner (a seam of ``kumaco run``) that grants one node more than the ceiling -- and writes the audit-log lines
about each run's nodes to ``tests/data/audit/honest.log`` and ``tests/data/audit/broken.log``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.auditing import audited_control_plane
from tests.support.judges.violation import record_run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", type=Path, default=Path("tests/data/audit"))
    a = p.parse_args()
    a.output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, audited_control_plane(Path(tmp)) as (cp, kc):
        for broken, name in ((False, "honest"), (True, "broken")):
            rec = record_run(cp, kc, Path(tmp), broken)
            (a.output / f"{name}.log").write_text("\n".join(rec.lines) + "\n")
            print(f"{a.output / name}.log: {len(rec.lines)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
