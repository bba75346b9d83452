#!/usr/bin/env python3
"""Where kumaco's CPU goes during one window opening over every node (py-spy; not in CI).

``python hack/profile_open.py [--nodes 5000] [--no-follower]``; needs py-spy
(``pip install -e ".[profile]"``). What it runs and prints: ``tools/profile.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.profile import profile_opening


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--no-follower", action="store_true")
    p.add_argument("--workdir", type=Path, default=Path("artifacts/profile"))
    p.add_argument("--top", type=int, default=15)
    a = p.parse_args()
    return profile_opening(a.nodes, not a.no_follower, a.workdir, a.top)


if __name__ == "__main__":
    sys.exit(main())
