#!/usr/bin/env python3
"""Client CPU per status write of kumaco's transport, against the plainest client (the floor).

Usage: ``python hack/bench_transport.py [--nodes 50] [--writes 2000] [--rounds 5]
[--kumaco-src DIR] [--output FILE]``. It starts its own control plane, registers the
nodes, and prints (and writes to --output) what tools/transport_bench.py
measures. ``--kumaco-src DIR`` measures another kumaco tree (e.g. an older commit:
``git archive <commit> kumaco | tar -x -C DIR``): its ``kumaco`` package is imported
first. docs/benchmarks.md shows a before/after run and the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=50)
    p.add_argument("--writes", type=int, default=2000, help="writes per client per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--kumaco-src", type=Path, help="a kumaco tree to measure instead of this one")
    p.add_argument("--output", type=Path)
    a = p.parse_args()
    if a.kumaco_src is not None:
        sys.path.insert(0, str(a.kumaco_src.resolve()))
    sys.path.insert(1 if a.kumaco_src is not None else 0, str(ROOT))

    from tests.support.env.controlplane import ControlPlane, ensure_assets, seed_nodes
    from tools.transport_bench import measure

    with (
        tempfile.TemporaryDirectory(prefix="kumaco-transport-bench-") as tmp,
        ControlPlane(ensure_assets()) as cp,
    ):
        seed_nodes(cp, a.nodes)
        kubeconfig = cp.write_kubeconfig(Path(tmp) / "admin.kubeconfig")
        names = [f"node-{i:05d}" for i in range(a.nodes)]
        result = measure(cp, kubeconfig, names, a.writes, a.rounds)
    text = json.dumps(result, indent=2)
    print(text)
    if a.output is not None:
        a.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
