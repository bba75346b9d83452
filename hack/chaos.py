#!/usr/bin/env python3
"""Chaos for kumaco's HA and its ceiling, on the real test control plane, judged three ways.

``python hack/chaos.py`` runs the full form (30 kills, default lease timings, its own
control plane; a stand-in kured rebooting the admitted nodes, reboots outlasting the
window, blockers raised mid-maintenance) and writes its summary to ``--output``; exit
status 0 if it passed. The scenario and its pass conditions: ``tools/chaos.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.supervisor import Timings
from tools.chaos import Settings, full_form


def main() -> int:
    d = Settings()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=d.kills)
    p.add_argument("--nodes", type=int, default=d.nodes)
    p.add_argument("--ceiling", type=int, default=d.ceiling)
    p.add_argument("--window-seconds", type=int, default=d.window_seconds)
    p.add_argument("--reboot-min", type=float, default=d.reboot_seconds[0])
    p.add_argument("--reboot-max", type=float, default=d.reboot_seconds[1])
    p.add_argument("--min-seconds", type=float, default=d.min_seconds)
    p.add_argument("--max-seconds", type=float, default=d.max_seconds)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--lease", type=float, default=Timings.lease, help="lease duration (s)")
    p.add_argument("--renew", type=float, default=Timings.renew, help="renew deadline (s)")
    p.add_argument("--retry", type=float, default=Timings.retry, help="retry period (s)")
    p.add_argument(
        "--kumaco-path",
        type=Path,
        help="a directory holding another kumaco package for the replicas (e.g. from "
        "`git archive REV kumaco | tar -x -C DIR`), to see an older build fail",
    )
    p.add_argument("--workdir", type=Path, default=Path("artifacts/chaos"))
    p.add_argument("--output", type=Path, default=Path("artifacts/chaos/result.json"))
    a = p.parse_args()
    settings = Settings(
        kills=a.kills,
        nodes=a.nodes,
        ceiling=a.ceiling,
        window_seconds=a.window_seconds,
        reboot_seconds=(a.reboot_min, a.reboot_max),
        min_seconds=a.min_seconds,
        max_seconds=a.max_seconds,
        seed=a.seed,
    )
    command = " ".join(["python", "hack/chaos.py", *sys.argv[1:]])
    timings = Timings(a.lease, a.renew, a.retry)
    return full_form(settings, a.workdir, a.output, timings, a.kumaco_path, command)


if __name__ == "__main__":
    sys.exit(main())
