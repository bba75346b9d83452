#!/usr/bin/env python3
"""The record with kured v2's agents: a fleet through a window with kured v2's real agents, counted.

``python hack/kured_before.py --kumaco-path /tmp/kumaco-c25f683 --output
docs/kured-v2-before-boot-rule.json`` runs scenario (a) of tests/e2e/test_kured_v2.py (6
simulated machines, 5 needing a reboot, a ceiling of 2) on a control plane of its own with
the kumaco of that source tree (``git -C . worktree add /tmp/kumaco-c25f683 c25f683``),
observes it for ``--seconds`` without stopping at the first excess reboot, and writes the
reboots per node, the most nodes in progress / disrupted / down at once (audit log replays
and the machines' reboot log, tests/support/env/kured.py) with the command and the commit.
``--scheduler kured`` puts kured's own ``maintenance-scheduler`` in kumaco's place (its
window opens at the next minute); ``--also-kured`` records both side by side. Exit 0 once
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
from tools.kured_record import fleet_record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kumaco-path", type=Path, help="a source tree of kumaco (default: this)")
    p.add_argument("--scheduler", choices=("kumaco", "kured"), default="kumaco")
    p.add_argument("--also-kured", action="store_true", help="also record kured's scheduler")
    p.add_argument("--seconds", type=float, default=60.0, help="how long to observe")
    p.add_argument("--workdir", type=Path)
    p.add_argument("--output", type=Path, default=Path("artifacts/kured-v2-record.json"))
    a = p.parse_args()
    root = Path(__file__).resolve().parent.parent
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="kured-record-"))
    runs = {}
    kinds = [a.scheduler] + (["kured"] if a.also_kured and a.scheduler != "kured" else [])
    for kind in kinds:
        r = fleet_record(
            workdir / kind,
            scheduler=kind,
            kumaco_path=a.kumaco_path if kind == "kumaco" else None,
            seconds=a.seconds,
        )
        if kind == "kumaco":
            r["kumaco_commit"] = commit_of(a.kumaco_path or root)
        runs[kind] = r
        print(f"{kind}: {json.dumps(r)}", file=sys.stderr)
    doc = {
        "command": " ".join(["python", "hack/kured_before.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit_of(root),
        "kured_v2_prototype": "c06d381 (branch SPLIT-IN-DIFFERENT-CLIS)",
        "runs": runs,
    }
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
