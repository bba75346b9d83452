#!/usr/bin/env python3
"""kumaco's pods over a kwok fleet on a real cluster: the memory limit per fleet size.

Command-line contract::

    cluster_fleet.py --nodes N [--request 128Mi --limit 256Mi] [--hold SECONDS] [--out FILE]

In the foreground: a real cluster of tests/support/env/cluster.py (two real nodes, binaries
already built), N kwok nodes around them and kumaco installed as a deployer does (delegated
overlay, components/ha) with the given memory request and limit (default: docs/deploy.md's row
for N, else the base's), one window open on every node (tools/cluster_fleet.py's contract);
it waits until every node is ``UnderMaintenance=True``, holds SECONDS more (default 120), then
stops everything. The run (command, commit, date, nodes, the leader's and the followers'
container memory from their cgroups, the limit, OOM kills and restarts) replaces the run of the
same size in FILE (default docs/cluster-fleet.json) and is printed. Exit 1 when a container was
OOM-killed or restarted, or a node did not get the condition.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.cluster import Cluster
from tests.support.env.clusterassets import ensure_cluster_assets
from tests.support.env.controlplane import ensure_assets, log
from tools.cluster_fleet import BASE_RESOURCES, DOCUMENTED, commit, fleet_run, keep

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, required=True, help="kwok nodes")
    parser.add_argument("--request", default="", help="memory request (default: the docs' row)")
    parser.add_argument("--limit", default="", help="memory limit (default: the docs' row)")
    parser.add_argument("--hold", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "cluster-fleet.json")
    args = parser.parse_args(argv)
    row = next((DOCUMENTED[n] for n in sorted(DOCUMENTED) if args.nodes <= n), BASE_RESOURCES)
    request, limit = args.request or row[0], args.limit or row[1]
    ensure_cluster_assets(ensure_assets())
    with tempfile.TemporaryDirectory(prefix="kumaco-fleet-") as tmp:
        work = Path(tmp)
        cluster = Cluster(nodes=2, keep_logs=work / "logs")
        cluster.start()
        try:
            with fleet_run(
                cluster, work, args.nodes, request=request, limit=limit, hold=args.hold
            ) as run:
                record = run.record()
        finally:
            cluster.stop()
    command = ["python", "hack/cluster_fleet.py", "--nodes", str(args.nodes)]
    command += ["--request", request, "--limit", limit, "--hold", f"{args.hold:g}"]
    record = {
        "command": shlex.join(command),
        "commit": commit(REPO),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **record,
    }
    keep(args.out, record, "python hack/cluster_fleet.py --nodes N")
    print(json.dumps(record, indent=2))
    ok = record["oom"] == "none" and record["under_maintenance"] == record["nodes"]
    log("OK" if ok else "FAILED: an OOM kill, a restart or a node without the condition")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
