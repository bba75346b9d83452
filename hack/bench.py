#!/usr/bin/env python3
"""kumaco at scale, in a cluster that lives: latency against the floor, steady-state cost, memory.

Usage: ``python hack/bench.py`` (1,000 and 5,000 nodes x 100 windows, with
kwok's kubelets and the default churn; writes docs/benchmarks.json,
docs/benchmarks.md and docs/images/bench-scale.svg). Larger fleets one at a
time, keeping the runs already measured: ``python hack/bench.py --nodes 20000
--lease-seconds 0 --merge``. ``--no-kwok`` measures nodes that never change.
The rates' defaults are a real fleet's (docs/benchmarks.md, "A living
cluster"); ``--churn-scale`` multiplies the rare events. The micro-benchmarks
alone: ``--planner``, ``--memory``, ``--levers NODES``; a kumaco follower alone
over many static nodes (memory where a full run cannot finish): ``--probe NODES``. What is measured, and how:
``tools/bench.py``. What ``--respect-pdbs`` costs (kumaco's leader without and with it,
over kwok's nodes and pods): ``--respect-pdbs NODES [--pods-per-node N]``, merged into
``--output`` as ``respect_pdbs`` (``tools/pdbbench.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.kwok import KwokSettings
from tools.bench import (
    Scale,
    follower_probe,
    memory_per_node,
    planner_benchmark,
    run_benchmarks,
)
from tools.benchreport import write_chart, write_markdown
from tools.churn import ChurnRates
from tools.levers import lever_benchmarks


def respect_pdbs(nodes: int, pods_per_node: int, quiet: float, output: Path) -> int:
    """``--respect-pdbs NODES``: measure, print, and merge the result into ``output``."""
    from tools.pdbbench import Workload, pdb_cost, pod_memory

    workload = Workload(nodes, pods_per_node)
    workdir = Path(tempfile.mkdtemp(prefix=f"kumaco-bench-pdbs-{nodes}-"))
    result = pdb_cost(workload, workdir, quiet=quiet)
    result["memory"] = pod_memory(Workload(min(nodes, 1000), pods_per_node))
    result["command"] = (
        f"python hack/bench.py --respect-pdbs {nodes} --pods-per-node {pods_per_node} "
        f"--quiet {quiet:g}"
    )
    result["workdir"] = str(workdir)
    doc = json.loads(output.read_text()) if output.exists() else {}
    doc["respect_pdbs"] = result
    output.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 1 if "error" in result or result.get("check", {}).get("disagreements") else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    p.add_argument("--windows", type=int, nargs="+", default=[100])
    p.add_argument("--repeats", type=int, default=3, help="openings measured per scale")
    p.add_argument(
        "--quiet",
        type=float,
        default=300,
        help="seconds of steady state (default: one status period, so every node reports)",
    )
    p.add_argument("--floor-rounds", type=int, default=2)
    p.add_argument("--sequential-floor", action="store_true", help="also time one connection")
    k = p.add_argument_group("simulated kubelets (kwok)")
    k.add_argument("--no-kwok", action="store_true", help="nodes that never change by themselves")
    k.add_argument(
        "--status-period",
        type=float,
        default=300,
        help="seconds between status reports of an unchanged node (kubelet: 5m)",
    )
    k.add_argument(
        "--lease-seconds",
        type=int,
        default=40,
        help="node Lease duration, renewed every quarter (kubelet: 40); 0: no Leases",
    )
    k.add_argument("--kwok-parallelism", type=int, default=8)
    c = p.add_argument_group("churn (rates per node; sources in docs/benchmarks.md)")
    d = ChurnRates()
    c.add_argument("--no-churn", action="store_true")
    c.add_argument("--npd-heartbeat", type=float, default=d.npd_heartbeat, help="seconds; 0: off")
    c.add_argument("--problems-per-day", type=float, default=d.problems_per_day)
    c.add_argument("--problem-seconds", type=float, default=d.problem_seconds)
    c.add_argument("--reboots-per-day", type=float, default=d.reboots_per_day)
    c.add_argument("--reboot-seconds", type=float, default=d.reboot_seconds)
    c.add_argument("--labels-per-day", type=float, default=d.labels_per_day)
    c.add_argument("--replacements-per-day", type=float, default=d.replacements_per_day)
    c.add_argument("--churn-scale", type=float, default=d.scale, help="multiplies the rare events")
    o = p.add_argument_group("output")
    o.add_argument("--output", type=Path, default=Path("docs/benchmarks.json"))
    o.add_argument("--markdown", type=Path, default=Path("docs/benchmarks.md"))
    o.add_argument("--chart", type=Path, default=Path("docs/images/bench-scale.svg"))
    o.add_argument("--merge", action="store_true", help="keep the runs of --output not re-measured")
    o.add_argument(
        "--history",
        type=Path,
        default=Path("docs/bench-history.json"),
        help="with --merge, where a replaced run is kept",
    )
    o.add_argument("--report", action="store_true", help="only rewrite the report from --output")
    o.add_argument("--check", action="store_true", help="assert the count invariants (CI)")
    o.add_argument("--planner", action="store_true", help="the planner micro-benchmark only")
    o.add_argument("--memory", action="store_true", help="bytes kept per node only")
    o.add_argument(
        "--probe",
        type=int,
        metavar="NODES",
        help="a kumaco follower alone over NODES static nodes: time to ready and memory",
    )
    o.add_argument(
        "--levers",
        type=int,
        metavar="NODES",
        help="the levers' micro-benchmarks, and one LIST of NODES nodes in JSON and protobuf",
    )
    o.add_argument(
        "--respect-pdbs",
        type=int,
        metavar="NODES",
        help="what --respect-pdbs costs over NODES kwok nodes and their pods (tools/pdbbench.py; "
        "--quiet seconds per mode), merged into --output as respect_pdbs",
    )
    o.add_argument("--pods-per-node", type=int, default=25, help="with --respect-pdbs")
    a = p.parse_args()
    if a.respect_pdbs is not None:
        return respect_pdbs(a.respect_pdbs, a.pods_per_node, a.quiet, a.output)
    if a.planner:
        print(json.dumps(planner_benchmark(), indent=2))
        return 0
    if a.memory:
        print(json.dumps(memory_per_node(), indent=2))
        return 0
    if a.probe is not None:
        with tempfile.TemporaryDirectory(prefix="kumaco-probe-") as tmp:
            print(json.dumps(follower_probe(a.probe, Path(tmp)), indent=2))
        return 0
    if a.levers is not None:
        print(json.dumps(lever_benchmarks(a.levers), indent=2))
        return 0
    if a.report:
        doc = json.loads(a.output.read_text())
        write_markdown(a.markdown, doc)
        write_chart(a.chart, doc)
        return 0
    kwok = (
        None
        if a.no_kwok
        else KwokSettings(
            status_period=a.status_period,
            lease_seconds=a.lease_seconds,
            parallelism=a.kwok_parallelism,
        )
    )
    churn = (
        None
        if a.no_churn or a.no_kwok
        else ChurnRates(
            npd_heartbeat=a.npd_heartbeat,
            problems_per_day=a.problems_per_day,
            problem_seconds=a.problem_seconds,
            reboots_per_day=a.reboots_per_day,
            reboot_seconds=a.reboot_seconds,
            labels_per_day=a.labels_per_day,
            replacements_per_day=a.replacements_per_day,
            scale=a.churn_scale,
        )
    )
    scales = [
        Scale(
            n,
            w,
            a.repeats,
            a.quiet,
            kwok=kwok,
            churn=churn,
            floor_rounds=a.floor_rounds,
            sequential_floor=a.sequential_floor,
        )
        for n in a.nodes
        for w in a.windows
    ]
    return run_benchmarks(
        scales, a.output, a.markdown, a.chart, check_only=a.check, merge=a.merge, history=a.history
    )


if __name__ == "__main__":
    sys.exit(main())
