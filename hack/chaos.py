#!/usr/bin/env python3
"""Leader-kill chaos for kumaco's HA, on the real test control plane, judged by the audit log.

``python hack/chaos.py`` runs the full form (30 kills, default lease timings, its own
control plane) and writes its summary to ``--output``; exit status 0 if it passed.
The scenario and its pass conditions: ``tests/support/chaos.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.chaos import full_form


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--ceiling", type=int, default=2)
    p.add_argument("--workdir", type=Path, default=Path("artifacts/chaos"))
    p.add_argument("--output", type=Path, default=Path("artifacts/chaos/result.json"))
    a = p.parse_args()
    return full_form(
        kills=a.kills, nodes=a.nodes, ceiling=a.ceiling, workdir=a.workdir, output=a.output
    )


if __name__ == "__main__":
    sys.exit(main())
