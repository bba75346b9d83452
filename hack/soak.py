#!/usr/bin/env python3
"""Soak: three kumaco replicas for 30 minutes on the real control plane, windows flipping every minute.

Not part of CI. ``python hack/soak.py [--minutes 30]`` writes ``--output`` and a
summary on stdout; exit status 0 if every pass condition held, else 1. The
scenario, its checks and how resources are judged: ``tools/soak.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.soak import SoakOptions, soak


def main() -> int:
    d = SoakOptions()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=d.minutes)
    p.add_argument("--warmup", type=float, default=d.warmup, help="seconds of a process's life")
    p.add_argument(
        "--judge-after",
        type=float,
        default=d.judge_after,
        help="judge a process only if it lived this long after its warm-up",
    )
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--workdir", type=Path, default=d.workdir)
    p.add_argument("--output", type=Path, default=Path("artifacts/soak/result.json"))
    a = p.parse_args()
    options = SoakOptions(a.minutes, a.warmup, a.judge_after, a.seed, a.workdir)
    return soak(options, a.output)


if __name__ == "__main__":
    sys.exit(main())
