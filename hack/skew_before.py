#!/usr/bin/env python3
"""The clock-skew record: a node's clock 10 minutes ahead of kumaco's, counted.

``python hack/skew_before.py --kumaco-path /tmp/kumaco-3ec1045 --output
docs/clock-skew-before.json`` runs the scenario of tests/support/judges/skew.py's
``double_admission`` on a control plane of its own with the kumaco of that source tree
(``git worktree add /tmp/kumaco-3ec1045 3ec1045``; the same interpreter, ``PYTHONPATH``
pointing at the tree): two nodes, a ceiling of 1, one open window, ``--require-condition
kured.dev/RebootRequired``; the node whose clock is 10 minutes ahead reports True, is
admitted, reboots (a new bootID) and is released; nothing is reported after the reboot
while the other node's detector rewrites its False for ``--unrelated-seconds``; then a
fresh report. It writes the admissions per node (from the audit log), whether the
skewed node was admitted twice for one request, the delay from the fresh report to its
admission, with the command, this tree's commit and the kumaco tree's commit.
``--fresh`` also runs the three fresh-report scenarios (ahead, behind, a clock set back
an hour). Without ``--kumaco-path``: this tree (the "after" record). Exit 0 once
written: it records, it does not judge.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.judges.figures import commit_of
from tools.skew_record import skew_record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kumaco-path", type=Path, help="a source tree of kumaco (default: this)")
    p.add_argument("--unrelated-seconds", type=float, default=10.0)
    p.add_argument("--fresh", action="store_true", help="also the fresh-report scenarios")
    p.add_argument("--workdir", type=Path)
    p.add_argument("--output", type=Path, default=Path("artifacts/clock-skew-record.json"))
    a = p.parse_args()
    root = Path(__file__).resolve().parent.parent
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="skew-record-"))
    tree = a.kumaco_path or root  # this tree's kumaco, whatever the working directory
    record = skew_record(workdir, kumaco_path=tree, unrelated_s=a.unrelated_seconds, fresh=a.fresh)
    doc = {
        "command": " ".join(["python", "hack/skew_before.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit_of(root),
        "kumaco_commit": commit_of(tree),
        **record,
    }
    print(json.dumps(doc, indent=2, sort_keys=True), file=sys.stderr)
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
