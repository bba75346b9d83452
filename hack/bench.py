#!/usr/bin/env python3
"""kumaco at scale on the real API server: latency against the physical floor, API cost, memory.

Usage: ``python hack/bench.py`` (1,000 and 5,000 nodes x 10 and 100 windows;
writes docs/benchmarks.json and docs/benchmarks.md) or
``python hack/bench.py --nodes 100 --windows 5 --repeats 1 --quiet 20 --check``
(the small CI form: it asserts the count invariants and exits non-zero if
they do not hold). The planner micro-benchmark is ``--planner``. What is
measured, and how: ``tests/support/bench.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.bench import planner_benchmark, run_benchmarks


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    p.add_argument("--windows", type=int, nargs="+", default=[10, 100])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quiet", type=float, default=300)
    p.add_argument("--output", type=Path, default=Path("docs/benchmarks.json"))
    p.add_argument("--markdown", type=Path, default=Path("docs/benchmarks.md"))
    p.add_argument("--check", action="store_true", help="assert the count invariants (CI)")
    p.add_argument("--planner", action="store_true", help="run the planner micro-benchmark only")
    a = p.parse_args()
    if a.planner:
        print(json.dumps(planner_benchmark(), indent=2))
        return 0
    return run_benchmarks(a.nodes, a.windows, a.repeats, a.quiet, a.output, a.markdown, a.check)


if __name__ == "__main__":
    sys.exit(main())
