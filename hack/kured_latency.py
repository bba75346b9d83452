#!/usr/bin/env python3
"""Window-opening latency on kwok nodes: kumaco beside kured v2's maintenance-scheduler.

Usage: ``python hack/kured_latency.py`` (1,000 nodes, kwok's kubelet-default heartbeats,
a 180 s bound; writes docs/kured-v2-latency.json and prints a summary). ``--churn`` also
measures both controllers again under tools/churn.py's default fleet rates. What
is measured, and how: ``tools/kured_latency.py``; the reading: docs/kured-v2-latency.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.kwok import KwokSettings
from tools.churn import ChurnRates
from tools.kured_latency import Settings, run, summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--bound", type=float, default=180.0, help="seconds waited after the opening")
    p.add_argument("--within", type=float, default=60.0, help="the 'opened within' figure, seconds")
    p.add_argument("--lead", type=float, default=None, help="least seconds from start to opening")
    p.add_argument("--status-period", type=float, default=300.0, help="kwok's status reports (s)")
    p.add_argument("--churn", action="store_true", help="also measure under the default churn")
    p.add_argument("--out", type=Path, default=Path("docs/kured-v2-latency.json"))
    p.add_argument("--workdir", type=Path, default=None)
    a = p.parse_args()
    s = Settings(
        nodes=a.nodes,
        bound=a.bound,
        within=a.within,
        lead=a.lead,
        kwok=KwokSettings(status_period=a.status_period),
        churn=ChurnRates() if a.churn else None,
    )
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="kured-latency-"))
    doc = run(s, workdir)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(summary(doc))
    print(f"wrote {a.out} (logs in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
